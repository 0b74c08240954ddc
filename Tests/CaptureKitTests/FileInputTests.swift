import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

/// Video files, image folders and the frame clock, on clips the tests generate.
@Suite struct FileInputTests {
    /// Writes `frames` frames of the moving scene at `fps` to an MJPEG AVI.
    func clip(_ dir: TemporaryDirectory, name: String = "clip.avi", frames: Int = 30, fps: Double = 30,
              width: Int = 320, height: Int = 240) throws -> String {
        let path = dir.path(name)
        let written = try movingScene(width: width, height: height, fps: fps, frames: frames).writeClip(to: path)
        #expect(written == frames)
        return path
    }

    func run(_ device: CaptureDevice, discardsLate: Bool = false, format: PixelFormat? = .bgr, delay: Double = 0)
        throws -> (frames: [SampleBuffer], drops: [FrameDropReason], seconds: Double, output: CaptureVideoDataOutput)
    {
        let recorder = FrameRecorder(delay: delay)
        let (session, output) = try makeSession(device: device, recorder: recorder, discardsLate: discardsLate, format: format)
        let start = monotonicSeconds()
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 60))
        let seconds = monotonicSeconds() - start
        return (recorder.frames, recorder.drops, seconds, output)
    }

    @Test func videoFileFramesSizesAndTimestamps() throws {
        let dir = try TemporaryDirectory()
        let path = try clip(dir, frames: 30, fps: 30)
        let device = try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible)
        #expect(device.deviceType == .videoFile)
        #expect(device.activeFormat.dimensions == .init(width: 320, height: 240))
        #expect(device.activeFormat.mediaSubType == "MJPG")
        #expect(abs(device.activeFormat.videoSupportedFrameRateRanges[0].maxFrameRate - 30) < 0.01)

        let result = try run(device)
        #expect(result.frames.count == 30)
        #expect(result.drops.isEmpty)
        for (i, frame) in result.frames.enumerated() {
            #expect(frame.width == 320 && frame.height == 240 && frame.pixelFormat == .bgr)
            #expect(frame.sequenceNumber == UInt64(i))
            #expect(abs(frame.presentationTimeStamp.seconds - Double(i) / 30) < 0.002, "frame \(i)")
        }
        // The content is the scene: the first bar of the colour bars is light gray (192).
        let px = result.frames[0].pixelBuffer.pixel(x: 2, y: 230)
        #expect(px.allSatisfy { abs(Int($0) - 192) < 12 }, "got \(px)")
    }

    @Test(arguments: [("clip.mp4", "mp4v"), ("clip.mkv", "MJPG"), ("clip.avi", "MJPG"), ("clip.avi", "XVID")])
    func containersThroughFFmpeg(name: String, codec: String) throws {
        let dir = try TemporaryDirectory()
        let path = dir.path(name)
        #expect(try movingScene(fps: 25, frames: 20).writeClip(to: path, fourCC: codec) == 20)
        let device = try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible)
        let result = try run(device)
        #expect(result.frames.count == 20, "\(name) \(codec)")
        #expect(result.frames.allSatisfy { $0.width == 320 && $0.height == 240 })
        let times = result.frames.map(\.presentationTimeStamp.seconds)
        #expect(result.frames.map(\.sequenceNumber) == Array(0..<20), "\(name) \(codec) delivery order")
        #expect(zip(times, times.dropFirst()).allSatisfy { abs($1 - $0 - 0.04) < 0.002 }, "\(times)")
    }

    @Test func grayOutputAndRotation() throws {
        let dir = try TemporaryDirectory()
        let path = try clip(dir, frames: 5)
        let gray = try run(try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible), format: .gray)
        #expect(gray.frames.count == 5)
        #expect(gray.frames.allSatisfy { $0.pixelFormat == .gray && $0.width == 320 })

        // Rotation by 90° swaps the frame's sides; mirroring moves the left bar to the right.
        let recorder = FrameRecorder()
        let (session, output) = try makeSession(
            device: try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible), recorder: recorder,
            discardsLate: false)
        output.connection(with: .video)!.videoRotationAngle = 90
        try session.startRunning()
        session.waitUntilStopped(timeout: 30)
        #expect(recorder.frames.count == 5)
        #expect(recorder.frames.allSatisfy { $0.width == 240 && $0.height == 320 })
        // 90° clockwise: the bottom-left of the source (first bar, light gray) goes to the top-left.
        let topLeft = recorder.frames[0].pixelBuffer.pixel(x: 2, y: 2)
        #expect(topLeft.allSatisfy { abs(Int($0) - 192) < 12 }, "got \(topLeft)")

        let mirrored = FrameRecorder()
        let (s2, o2) = try makeSession(
            device: try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible), recorder: mirrored,
            discardsLate: false)
        o2.connection(with: .video)!.isVideoMirrored = true
        try s2.startRunning()
        s2.waitUntilStopped(timeout: 30)
        // The last bar (near black, 16) is now on the left; the first (192) on the right.
        let left = mirrored.frames[0].pixelBuffer.pixel(x: 2, y: 230)
        let right = mirrored.frames[0].pixelBuffer.pixel(x: 317, y: 230)
        #expect(left.allSatisfy { $0 < 40 }, "got \(left)")
        #expect(right.allSatisfy { abs(Int($0) - 192) < 12 }, "got \(right)")
    }

    @Test func pacedModeRunsAtTheClipsRateAndBatchModeDoesNotWait() throws {
        let dir = try TemporaryDirectory()
        // 24 frames at 30 fps: 23 frame intervals, 0.767 s of media after the first frame.
        let path = try clip(dir, frames: 24, fps: 30)
        let paced = try run(try CaptureDevice(videoFileAtPath: path, pacing: .realTime))
        let batch = try run(try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible))
        #expect(paced.frames.count == 24)
        #expect(batch.frames.count == 24)
        // Unpaced decoding of 24 small frames takes a few ms, so the lower bound cannot pass unpaced.
        #expect(paced.seconds >= 0.72, "paced run took \(paced.seconds) s")
        #expect(paced.seconds < 3.0, "paced run took \(paced.seconds) s")
        #expect(batch.seconds < paced.seconds / 2, "batch \(batch.seconds) s vs paced \(paced.seconds) s")
    }

    @Test func imageFolderInNaturalOrderAtItsRate() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("frames")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // img10 must come after img2 (natural order); sizes differ on purpose.
        let sources = ["img2.png": "astronaut.png", "img10.jpg": "grace_hopper.jpg", "img1.png": "camera.png"]
        for (name, fixture) in sources {
            try FileManager.default.copyItem(
                atPath: Fixtures.faceImage(fixture), toPath: folder.appendingPathComponent(name).path)
        }
        try "not an image".write(to: folder.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        let source = try ImageFolderSource(path: folder.path, frameRate: 5, pacing: .asFastAsPossible)
        #expect(source.files.map { ($0 as NSString).lastPathComponent } == ["img1.png", "img2.png", "img10.jpg"])

        let device = try CaptureDevice(imagesAtPath: folder.path, frameRate: 5, pacing: .asFastAsPossible)
        let result = try run(device)
        #expect(result.frames.count == 3)
        let camera = try ImageFolderSource.decode(Fixtures.faceImage("camera.png"))
        let hopper = try ImageFolderSource.decode(Fixtures.faceImage("grace_hopper.jpg"))
        #expect(result.frames[0].width == camera.width && result.frames[0].height == camera.height)
        #expect(result.frames[2].width == hopper.width && result.frames[2].height == hopper.height)
        #expect(result.frames.map(\.presentationTimeStamp.seconds) == [0, 0.2, 0.4])
    }

    @Test func unreadableImageInAFolderIsSkippedWithAWarning() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("frames")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Fixtures.faceImage("camera.png"), toPath: folder.appendingPathComponent("a.png").path)
        try Data("garbage".utf8).write(to: folder.appendingPathComponent("b.png"))
        try FileManager.default.copyItem(
            atPath: Fixtures.faceImage("astronaut.png"), toPath: folder.appendingPathComponent("c.png").path)
        let skipped = SkippedLog()
        let device = try CaptureDevice(
            imagesAtPath: folder.path, pacing: .asFastAsPossible, onSkippedImage: { skipped.add($0) })
        let result = try run(device)
        #expect(result.frames.count == 2)
        #expect(skipped.errors.map(\.code) == [.unreadableImage])
        #expect(skipped.errors.first?.path?.hasSuffix("b.png") == true)
        // The gap in the sequence is reported as a discontinuity.
        #expect(result.drops == [.discontinuity])
    }

    @Test func eventsForAFileThatEnds() throws {
        let dir = try TemporaryDirectory()
        let path = try clip(dir, frames: 3)
        let device = try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible)
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder)
        let log = EventLog(session)
        try session.startRunning()
        session.waitUntilStopped(timeout: 10)
        let events = log.events(waitingFor: "didStopRunning")
        #expect(events.count == 3)
        #expect(events.first == "didStartRunning")
        #expect(events.dropFirst().first?.hasPrefix("inputDidReachEnd") == true)
        #expect(events.last == "didStopRunning")
    }

    @Test func asyncSequenceDeliversEveryFrameAndEnds() async throws {
        let dir = try TemporaryDirectory()
        let path = try clip(dir, frames: 12)
        let session = CaptureSession()
        try session.addInput(try CaptureDeviceInput(device: CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible)))
        let output = CaptureVideoDataOutput()
        output.alwaysDiscardsLateVideoFrames = false
        try session.addOutput(output)
        let frames = output.sampleBuffers()
        try session.startRunning()
        var sequence: [UInt64] = []
        for await frame in frames { sequence.append(frame.sequenceNumber) }
        #expect(sequence == Array(0..<12))
    }
}

final class SkippedLog: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var _errors: [CaptureError] = []
    func add(_ e: CaptureError) { lock.withLock { _errors.append(e) } }
    var errors: [CaptureError] { lock.withLock { _errors } }
}
