import CaptureKit
import Dispatch
import Foundation
import Testing

final class Collector: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    let lock = NSLock()
    var frames: [SampleBuffer] = []
    var drops: [FrameDropReason] = []
    let delay: Double
    init(delay: Double = 0) { self.delay = delay }
    func captureOutput(_ output: CaptureVideoDataOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        lock.lock(); frames.append(sampleBuffer); lock.unlock()
    }
    func captureOutput(_ output: CaptureVideoDataOutput, didDrop sampleBuffer: SampleBuffer?, reason: FrameDropReason, from connection: CaptureConnection) {
        lock.lock(); drops.append(reason); lock.unlock()
    }
}

@Test func syntheticSmoke() throws {
    let scene = SyntheticScene(size: .init(width: 320, height: 240), frameRate: 30, frameCount: 20,
        sprites: [.init(content: .qrCode(payload: Array("hello".utf8), correction: 1), size: .init(width: 100, height: 100), origin: CGPoint(x: 10, y: 10))])
    let device = try CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible)
    let session = CaptureSession()
    try session.addInput(try CaptureDeviceInput(device: device))
    let out = CaptureVideoDataOutput()
    out.alwaysDiscardsLateVideoFrames = false
    let c = Collector()
    out.setSampleBufferDelegate(c, queue: DispatchQueue(label: "t"))
    try session.addOutput(out)
    try session.startRunning()
    #expect(session.waitUntilStopped(timeout: 10))
    #expect(c.frames.count == 20)
    #expect(c.frames.last?.width == 320)
}
