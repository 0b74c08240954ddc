import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

/// Bad input gets a clear, typed error, and nothing crashes.
@Suite struct BadInputTests {
    func error(_ body: () throws -> Void) -> CaptureError? {
        do {
            try body()
            return nil
        } catch let error as CaptureError {
            return error
        } catch {
            return nil
        }
    }

    @Test func missingPath() {
        let e = error { _ = try CaptureDevice(videoFileAtPath: "/nonexistent/clip.mp4") }
        #expect(e?.code == .fileNotFound)
        #expect(e?.path == "/nonexistent/clip.mp4")
        #expect(e?.message.contains("/nonexistent/clip.mp4") == true)
        #expect(error { _ = try CaptureDevice(imagesAtPath: "/nonexistent/folder") }?.code == .fileNotFound)
    }

    @Test func folderWithNoImages() throws {
        let dir = try TemporaryDirectory()
        try "hello".write(toFile: dir.path("readme.txt"), atomically: true, encoding: .utf8)
        let e = error { _ = try CaptureDevice(imagesAtPath: dir.url.path) }
        #expect(e?.code == .noImagesInFolder)
        #expect(e?.message.contains("holds no images") == true)
    }

    @Test func textFileNamedMP4() throws {
        let dir = try TemporaryDirectory()
        try "this is not a video\n".write(toFile: dir.path("fake.mp4"), atomically: true, encoding: .utf8)
        let e = error { _ = try CaptureDevice(videoFileAtPath: dir.path("fake.mp4")) }
        #expect(e?.code == .cannotOpenVideo)
        #expect(e?.message.contains("not a video") == true)
    }

    @Test func folderGivenAsAVideo() throws {
        let dir = try TemporaryDirectory()
        #expect(error { _ = try CaptureDevice(videoFileAtPath: dir.url.path) }?.code == .cannotOpenVideo)
    }

    @Test func truncatedVideoEndsWithARuntimeErrorAfterTheLastGoodFrame() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("clip.mkv")
        // Matroska declares its duration up front; cut the file to half.
        try movingScene(frames: 60).writeClip(to: path, fourCC: "MJPG")
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: path))

        let device = try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible)
        // A slow consumer, so frames are still queued when the error comes.
        let recorder = FrameRecorder(delay: 0.01)
        let (session, _) = try makeSession(device: device, recorder: recorder, discardsLate: false)
        let log = EventLog(session)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 30))
        let events = log.events(waitingFor: "didStopRunning")
        #expect(events.contains { $0.hasPrefix("runtimeError(truncatedVideo") }, "events: \(events)")
        #expect(session.lastRuntimeError?.code == .truncatedVideo)
        // Every frame before the cut was delivered, in order.
        let delivered = recorder.frames.map(\.sequenceNumber)
        #expect(delivered.count >= 20 && delivered.count < 60, "delivered \(delivered.count)")
        #expect(delivered == Array(0..<UInt64(delivered.count)))
        // Nothing read before the failure is lost, even frames still queued when it came.
        #expect(delivered.count == session.capturedFrameCount)
    }

    @Test func corruptBytesInsideAVideo() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("clip.avi")
        try movingScene(frames: 30).writeClip(to: path)
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        // Overwrite the middle third with noise.
        var rng = SystemRandomNumberGenerator()
        for i in (data.count / 3)..<(2 * data.count / 3) { data[i] = UInt8.random(in: 0...255, using: &rng) }
        try data.write(to: URL(fileURLWithPath: path))
        // Either it opens and ends (with or without an error event) or it is refused: never a crash.
        guard let device = try? CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible) else { return }
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder, discardsLate: false)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 30))
        #expect(recorder.frames.count <= 30)
    }

    @Test func unsupportedPresetForTheInput() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("clip.avi")
        try movingScene(frames: 3).writeClip(to: path)
        let device = try CaptureDevice(videoFileAtPath: path)
        let session = CaptureSession()
        try session.setSessionPreset(.hd1920x1080)  // no input yet: accepted
        let e = error { try session.addInput(try CaptureDeviceInput(device: device)) }
        #expect(e?.code == .presetNotSupported)
        #expect(e?.message.contains("320x240") == true)
        try session.setSessionPreset(.inputPriority)
        try session.addInput(try CaptureDeviceInput(device: device))
        #expect(error { try session.setSessionPreset(.vga640x480) }?.code == .presetNotSupported)
        // Inside a configuration block the check happens at the commit.
        session.beginConfiguration()
        try? session.setSessionPreset(.hd1280x720)
        #expect(session.sessionPreset == .inputPriority)
        try session.commitConfiguration()
    }

    @Test func sameInputTwiceAndNoInputs() throws {
        let session = CaptureSession()
        #expect(error { try session.startRunning() }?.code == .sessionHasNoInputs)
        let input = try CaptureDeviceInput(device: CaptureDevice(syntheticScene: movingScene()))
        try session.addInput(input)
        #expect(error { try session.addInput(input) }?.code == .inputAlreadyAdded)
    }

    @Test func syntheticSceneWithAMissingImage() {
        let scene = SyntheticScene(
            size: .init(width: 64, height: 64),
            sprites: [.init(content: .image(path: "/nonexistent.png"), size: .init(width: 8, height: 8), origin: .zero)])
        #expect(error { _ = try CaptureDevice(syntheticScene: scene) }?.code == .fileNotFound)
        #expect(error { _ = try CaptureDevice(syntheticScene: SyntheticScene(size: .init(width: 0, height: 10))) }?.code == .invalidConfiguration)
    }
}
