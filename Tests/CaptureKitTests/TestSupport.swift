import CaptureKit
import Dispatch
import Foundation

/// Paths into the repository, found from this file's location.
enum Fixtures {
    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        fatalError("Package.swift not found above \(#filePath)")
    }()
    static let faces = packageRoot.appendingPathComponent("Tests/Fixtures/faces")
    static func faceImage(_ name: String) -> String { faces.appendingPathComponent("images/\(name)").path }
    static func negative(_ name: String) -> String { faces.appendingPathComponent("negatives/\(name)").path }
}

/// A fresh temporary directory, removed when the value goes away.
final class TemporaryDirectory {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Records what a video data output delivers, optionally taking `delay` seconds per frame.
final class FrameRecorder: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    private let lock = NSLock()
    private var _frames: [SampleBuffer] = []
    private var _drops: [FrameDropReason] = []
    private var _threads: Set<String> = []
    let delay: Double

    init(delay: Double = 0) { self.delay = delay }

    var frames: [SampleBuffer] { lock.withLock { _frames } }
    var drops: [FrameDropReason] { lock.withLock { _drops } }

    func captureOutput(_ output: CaptureVideoDataOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        lock.withLock { _frames.append(sampleBuffer) }
    }

    func captureOutput(
        _ output: CaptureVideoDataOutput, didDrop sampleBuffer: SampleBuffer?, reason: FrameDropReason,
        from connection: CaptureConnection
    ) {
        lock.withLock { _drops.append(reason) }
    }
}

/// Collects a session's events in the background.
final class EventLog: @unchecked Sendable {
    // @unchecked: `events` is guarded by `lock`.
    private let lock = NSLock()
    private var _events: [String] = []
    private var observation: CaptureSession.EventObservation?

    init(_ session: CaptureSession) {
        observation = session.observeEvents(on: DispatchQueue(label: "test.events")) { [weak self] event in
            self?.append(event.description)
        }
    }

    private func append(_ e: String) { lock.withLock { _events.append(e) } }

    /// Events so far, after giving the stream up to `timeout` seconds to hold `count` of them.
    func events(count: Int, timeout: Double = 5) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, lock.withLock({ _events.count }) < count { Thread.sleep(forTimeInterval: 0.01) }
        return lock.withLock { _events }
    }

    /// Events so far, after giving the stream up to `timeout` seconds to contain `last`.
    func events(waitingFor last: String? = nil, timeout: Double = 5) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while let last, Date() < deadline, !lock.withLock({ _events.contains { $0.hasPrefix(last) } }) {
            Thread.sleep(forTimeInterval: 0.01)
        }
        return lock.withLock { _events }
    }

}

/// A scene with a QR code sprite moving right at 100 px/s over colour bars.
func movingScene(width: Int = 320, height: Int = 240, fps: Double = 30, frames: Int? = 30) -> SyntheticScene {
    SyntheticScene(
        size: .init(width: width, height: height), frameRate: fps, frameCount: frames, background: .colorBars,
        sprites: [
            .init(
                content: .qrCode(payload: Array("cvcam".utf8), correction: 1), size: .init(width: 84, height: 84),
                origin: CGPoint(x: 10, y: 20), velocity: CGSize(width: 100, height: 0))
        ])
}

/// A session over `device` with one video data output delivering to `recorder`.
func makeSession(
    device: CaptureDevice, recorder: FrameRecorder, discardsLate: Bool = true, format: PixelFormat? = .bgr
) throws -> (CaptureSession, CaptureVideoDataOutput) {
    let session = CaptureSession()
    try session.addInput(try CaptureDeviceInput(device: device))
    let output = CaptureVideoDataOutput()
    output.alwaysDiscardsLateVideoFrames = discardsLate
    output.videoPixelFormat = format
    output.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "test.delegate"))
    try session.addOutput(output)
    return (session, output)
}

func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
