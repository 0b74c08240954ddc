import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CaptureKit
@testable import CaptureVision
import CaptureKitTesting

/// The metadata output's pipeline: stages loaded on demand, one conversion per frame, each
/// stage on its own thread and timed alone, frames joined in order, and `waitUntilIdle` safe on
/// any delegate queue.
@Suite struct MetadataPipelineTests {
    func session(_ scene: SyntheticScene, _ output: CaptureMetadataOutput) throws -> CaptureSession {
        let session = CaptureSession()
        try session.addInput(CaptureDeviceInput(device: CaptureDevice(syntheticScene: scene, pacing: .asFastAsPossible)))
        try session.addOutput(output)
        return session
    }

    func codeScene(frames: Int) -> SyntheticScene {
        SyntheticScene(
            size: .init(width: 320, height: 240), frameRate: 10, frameCount: frames,
            background: .color(red: 200, green: 200, blue: 200),
            sprites: [
                .init(
                    content: .qrCode(payload: Array("lazy".utf8), correction: 1), size: .init(width: 120, height: 120),
                    origin: CGPoint(x: 100, y: 60))
            ])
    }

    @Test func aCodeOnlyOutputLoadsNoFaceNetwork() throws {
        let output = CaptureMetadataOutput()
        // Known available without loading anything.
        #expect(output.availableMetadataObjectTypes.contains(.face))
        #expect(output.availableMetadataObjectTypes.contains(.qr))
        #expect(output.loadedStages == (false, false))
        try output.setMetadataObjectTypes([.qr])
        #expect(output.loadedStages == (false, true))
        let recorder = try MetadataRecorder.record(codeScene(frames: 5), through: output, types: [.qr])
        #expect(recorder.events.contains { if case .codeAppeared(let c) = $0 { c.stringValue == "lazy" } else { false } })
        #expect(output.loadedStages == (false, true))
        #expect(output.stageSeconds.faces == 0)
        // Asking for faces later loads the face stage then.
        try output.setMetadataObjectTypes([.face, .qr])
        #expect(output.loadedStages == (true, true))
    }

    @Test func aTrackedYUYVFrameIsConvertedToBGROnce() throws {
        // A face small enough to be followed near its track (a frame-filling one gets whole searches).
        let scene = SyntheticScene(
            size: .init(width: 640, height: 480), frameRate: 30, frameCount: 1,
            background: .color(red: 120, green: 120, blue: 120),
            sprites: [
                .init(
                    content: .image(path: Fixtures.faceImage("grace_hopper.jpg")), size: .init(width: 120, height: 140),
                    origin: CGPoint(x: 260, y: 170))
            ])
        let source = try SyntheticCameraSource(scene: scene, pacing: .asFastAsPossible)
        try source.open(format: source.formats[0], frameDuration: MediaTime(value: 1, timescale: 30))
        let rendered = try #require(try source.nextFrame(isCancelled: { false })).pixelBuffer
        source.close()
        let yuyv = try Self.yuyv(of: rendered)
        let stage = DefaultFaceStage(detector: try FaceDetector(configuration: .realTime))
        var conversions: [Int] = []
        // 30 fps: after the first whole search, searches are spread over three frames while the
        // face found is followed near its track in every frame.
        for i in 0..<8 {
            let frame = AnalysisFrame(
                SampleBuffer(
                    pixelBuffer: yuyv, presentationTimeStamp: MediaTime(value: Int64(i), timescale: 30),
                    duration: MediaTime(value: 1, timescale: 30), sequenceNumber: UInt64(i),
                    inputID: CaptureInput.ID(rawValue: 1)))
            let result = try stage.process(
                frame, regionOfInterest: CGRect(x: 0, y: 0, width: 1, height: 1), updateInterval: 1, scanInterval: 0.1)
            // The face enters on its third frame (the hold before a new face in video enters).
            #expect(result.faces.count == (i < 2 ? 0 : 1), "frame \(i)")
            conversions.append(frame.conversionCount)
        }
        let counts = stage.searchCounts
        #expect(counts.nearTrackedFaces >= 6)
        #expect(counts.parts >= 3)
        #expect(conversions == Array(repeating: 1, count: 8))
    }

    @Test func eachStageIsTimedOnItsOwnAndFramesAreJoinedInOrder() throws {
        let faces = TimedFaceStage(delay: { _ in 0 })
        let codes = TimedCodeStage(delay: { i in i % 3 == 0 ? 0.02 : 0.002 })
        let output = CaptureMetadataOutput(faceStage: faces, codeStage: codes)
        let recorder = try MetadataRecorder.record(codeScene(frames: 30), through: output, types: [.face, .qr])
        #expect(output.processedFrameCount == 30)
        // Every delivery holds the face and the code of one and the same frame, in frame order.
        let frames = recorder.frames.filter { !$0.isEmpty }
        #expect(frames.count == 30)
        let times = frames.map { objects in Set(objects.map(\.time)) }
        #expect(times.allSatisfy { $0.count == 1 })
        let ordered = times.compactMap(\.first)
        #expect(ordered == ordered.sorted() && Set(ordered).count == 30)
        // The face stage took no time; the code stage slept 10 × 20 ms + 20 × 2 ms.
        let seconds = output.stageSeconds
        #expect(seconds.codes >= 0.24)
        #expect(seconds.faces < seconds.codes / 4, "faces \(seconds.faces) s, codes \(seconds.codes) s")
    }

    @Test func waitUntilIdleNeverTrapsWithTheMainQueueAsDelegateQueue() async throws {
        let output = CaptureMetadataOutput()
        try output.setMetadataObjectTypes([.qr])
        let recorder = MetadataRecorder()
        output.setMetadataObjectsDelegate(recorder, queue: .main)
        let s = try session(codeScene(frames: 4), output)
        try s.startRunning()
        #expect(s.waitUntilStopped(timeout: 60))
        // From the main thread (AVFoundation sample-code style): returns once deliveries are
        // queued; they run when the main queue next runs.
        await MainActor.run { output.waitUntilIdle() }
        await MainActor.run {}
        #expect(recorder.events.contains { if case .codeAppeared = $0 { true } else { false } })
        // From another thread it waits for the deliveries themselves.
        output.waitUntilIdle()
        // From the delegate queue itself (another serial queue) it does not wait for itself.
        let own = DispatchQueue(label: "own")
        output.setMetadataObjectsDelegate(recorder, queue: own)
        own.sync { output.waitUntilIdle() }
    }

    /// `image` (BGR) as YUYV 4:2:2 (BT.601, the layout V4L2 cameras send).
    static func yuyv(of image: PixelBuffer) throws -> PixelBuffer {
        let w = image.width & ~1, h = image.height
        let out = try PixelBuffer(width: w, height: h, pixelFormat: .yuyv)
        for y in 0..<h {
            let row = out.baseAddress + y * out.bytesPerRow
            for x in stride(from: 0, to: w, by: 2) {
                let a = image.pixel(x: x, y: y).map(Double.init), b = image.pixel(x: x + 1, y: y).map(Double.init)
                func luma(_ p: [Double]) -> Double { 0.114 * p[0] + 0.587 * p[1] + 0.299 * p[2] }
                let (y0, y1) = (luma(a), luma(b))
                let bb = (a[0] + b[0]) / 2, rr = (a[2] + b[2]) / 2, yy = (y0 + y1) / 2
                let u = 128 + 0.564 * (bb - yy), v = 128 + 0.713 * (rr - yy)
                for (k, value) in [y0, u, y1, v].enumerated() {
                    row.storeBytes(of: UInt8(max(0, min(255, value.rounded()))), toByteOffset: x * 2 + k, as: UInt8.self)
                }
            }
        }
        return out
    }
}

/// A face stage that reports one face per frame (at the frame's time) after `delay(frame)` seconds.
private final class TimedFaceStage: FaceMetadataStage, @unchecked Sendable {
    // @unchecked: `index` is touched only in `process`, which runs one frame at a time.
    let delay: @Sendable (Int) -> Double
    private var index = 0
    init(delay: @escaping @Sendable (Int) -> Double) { self.delay = delay }
    var isAvailable: Bool { true }
    func process(_ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double)
        throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent])
    {
        Thread.sleep(forTimeInterval: delay(index))
        index += 1
        return ([MetadataFaceObject(bounds: regionOfInterest, faceID: 1, confidence: 1, time: frame.time, inputID: frame.inputID)], [])
    }
    func finish() -> [MetadataEvent] { [] }
}

/// A code stage that reports one QR code per frame (at the frame's time) after `delay(frame)` seconds.
private final class TimedCodeStage: CodeMetadataStage, @unchecked Sendable {
    // @unchecked: `index` is touched only in `process`, which runs one frame at a time.
    let delay: @Sendable (Int) -> Double
    private var index = 0
    init(delay: @escaping @Sendable (Int) -> Double) { self.delay = delay }
    var availableTypes: [MetadataObjectType] { [.qr] }
    func process(
        _ frame: AnalysisFrame, types: Set<MetadataObjectType>, regionOfInterest: CGRect, repeatInterval: Double
    ) throws(CaptureError) -> (codes: [MetadataMachineReadableCodeObject], events: [MetadataEvent]) {
        Thread.sleep(forTimeInterval: delay(index))
        index += 1
        let code = MetadataMachineReadableCodeObject(
            type: .qr, bounds: CGRect(x: 0.1, y: 0.1, width: 0.2, height: 0.2), stringValue: "t", payload: [0x74],
            corners: [], quality: 1, time: frame.time, inputID: frame.inputID)
        return ([code], [])
    }
    func finish() -> [MetadataEvent] { [] }
}
