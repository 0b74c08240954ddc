@testable import CaptureKit
@testable import CaptureVision
import CaptureKitTesting
import CVBridge
import Foundation
import Testing

/// What a video file's header declares is range-checked where it enters (`VideoContainerInfo`),
/// and only a file that really ended early is called truncated (issue #17).
@Suite struct VideoContainerTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/video")

    /// Everything a session delivers from `path`, and the error it stopped with.
    func play(_ path: String) throws -> (frames: [SampleBuffer], error: CaptureError?) {
        let device = try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible)
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder, discardsLate: false)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 30))
        return (recorder.frames, session.lastRuntimeError)
    }

    func error(_ body: () throws -> Void) -> CaptureError? {
        do {
            try body()
            return nil
        } catch {
            return error as? CaptureError
        }
    }

    /// An AVI the project writes (raw RGBA frames, so the header's size is the decoder's size),
    /// with little-endian 32-bit fields patched: (chunk id, offset into the chunk's data, value).
    func hostileAVI(_ dir: TemporaryDirectory, frames: Int = 10, _ patches: [(String, Int, Int32)]) throws -> String {
        let path = dir.path("hostile.avi")
        #expect(try movingScene(width: 32, height: 24, fps: 30, frames: frames).writeClip(to: path, fourCC: "RGBA") == frames)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        for (chunk, offset, value) in patches {
            let id = Array(chunk.utf8)
            let at = try #require((0...(bytes.count - 4)).first { Array(bytes[$0..<$0 + 4]) == id }, "no \(chunk) chunk")
            let field = at + 8 + offset
            for k in 0..<4 { bytes[field + k] = UInt8(truncatingIfNeeded: UInt32(bitPattern: value) >> (8 * k)) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    // MARK: Truncation

    @Test func intactFileWhoseClockStartsAtOneHourIsReadToTheEnd() throws {
        // Its container declares start 3600 s and duration 3602 s: OpenCV counts 36020 frames.
        let path = Self.fixtures.appendingPathComponent("clock-at-1h.mkv").path
        let result = try play(path)
        #expect(result.error == nil, "\(String(describing: result.error))")
        #expect(result.frames.count == 20)
        // Times count from the stream's start: 0, 0.1, … 1.9, not 3600 s.
        for (i, frame) in result.frames.enumerated() {
            #expect(abs(frame.presentationTimeStamp.seconds - Double(i) / 10) < 0.002, "frame \(i): \(frame.presentationTimeStamp)")
        }
    }

    @Test func cutCopyOfTheOneHourFileIsStillTruncated() throws {
        let dir = try TemporaryDirectory()
        let data = try Data(contentsOf: Self.fixtures.appendingPathComponent("clock-at-1h.mkv"))
        let path = dir.path("cut.mkv")
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: path))
        let result = try play(path)
        #expect(result.error?.code == .truncatedVideo, "\(String(describing: result.error))")
        #expect(result.frames.count < 20)
    }

    @Test func endedEarlyTakesTheEarlierOfTheTwoEnds() throws {
        func info(start: Double, duration: Double, count: Double = 0) throws -> VideoContainerInfo {
            var raw = cvb_video_info()
            (raw.width, raw.height, raw.fps, raw.frame_count) = (32, 24, 10, count)
            (raw.start_seconds, raw.duration_seconds) = (start, duration)
            return try VideoContainerInfo(VideoStreamInfo(raw), path: "x")
        }
        let d = 0.1
        // Duration written from 0 (3602 s) or from the start (2 s): 2 s of frames reach both.
        #expect(!(try info(start: 3600, duration: 3602).endedEarly(lastFrame: 1.9, framesRead: 20, frameDuration: d)))
        #expect(!(try info(start: 3600, duration: 2).endedEarly(lastFrame: 1.9, framesRead: 20, frameDuration: d)))
        #expect(try info(start: 3600, duration: 3602).endedEarly(lastFrame: 0.9, framesRead: 10, frameDuration: d))
        #expect(try info(start: 0, duration: 2).endedEarly(lastFrame: 0.9, framesRead: 10, frameDuration: d))
        // A frame of rounding is allowed.
        #expect(!(try info(start: 0, duration: 2).endedEarly(lastFrame: 1.8, framesRead: 19, frameDuration: d)))
        // No duration: the declared count decides; neither: nothing to compare with.
        #expect(try info(start: .nan, duration: .nan, count: 20).endedEarly(lastFrame: 0.9, framesRead: 10, frameDuration: d))
        #expect(!(try info(start: .nan, duration: .nan, count: 20).endedEarly(lastFrame: 1.8, framesRead: 19, frameDuration: d)))
        #expect(!(try info(start: .nan, duration: .nan).endedEarly(lastFrame: 0, framesRead: 0, frameDuration: d)))
    }

    // MARK: Range checks where the numbers enter

    static let absurd: [Double] = [.nan, .infinity, -.infinity, -1, 0, 4e9, 1e300, -1e300]

    @Test(arguments: absurd) func absurdRatesCountsAndTimesBecomeUnknown(_ value: Double) throws {
        var raw = cvb_video_info()
        (raw.width, raw.height) = (32, 24)
        (raw.fps, raw.frame_count, raw.start_seconds, raw.duration_seconds) = (value, value, value, value)
        let info = try VideoContainerInfo(VideoStreamInfo(raw), path: "x")
        #expect(info.framesPerSecond == nil)
        #expect(info.frameCount == nil)
        #expect(info.durationSeconds == nil)
        if value != 0 && value != -1 { #expect(info.startSeconds == nil) }
        #expect(!info.endedEarly(lastFrame: 0, framesRead: 0, frameDuration: 1.0 / 30))
    }

    @Test func sensibleNumbersPassThrough() throws {
        var raw = cvb_video_info()
        (raw.width, raw.height, raw.fps, raw.frame_count) = (1920, 1080, 30000.0 / 1001, 300)
        (raw.start_seconds, raw.duration_seconds) = (-0.04, 10.01)
        let info = try VideoContainerInfo(VideoStreamInfo(raw), path: "x")
        #expect(info.width == 1920 && info.height == 1080 && info.framesPerSecond == 30000.0 / 1001)
        #expect(info.frameCount == 300 && info.startSeconds == -0.04 && info.durationSeconds == 10.01)
    }

    @Test(arguments: [(0.0, 24.0), (-32, 24), (32, .nan), (.infinity, 24), (1e300, 1e300), (32.5, 0)])
    func unusableSizesAreRefused(width: Double, height: Double) {
        var raw = cvb_video_info()
        (raw.width, raw.height, raw.fps) = (width, height, 30)
        let e = error { _ = try VideoContainerInfo(VideoStreamInfo(raw), path: "v.avi") }
        #expect(e?.code == .cannotOpenVideo)
        #expect(e?.message.contains("no usable frame size") == true)
    }

    @Test func framesOverThePixelLimitAreRefused() {
        var raw = cvb_video_info()
        (raw.width, raw.height, raw.fps) = (100_000, 100_000, 30)
        let e = error { _ = try VideoContainerInfo(VideoStreamInfo(raw), path: "v.avi") }
        #expect(e?.code == .imageTooLarge)
        #expect(e?.message.contains("CVCAM_MAX_IMAGE_PIXELS") == true)
        #expect(error { _ = try VideoContainerInfo(VideoStreamInfo(raw), path: "v.avi", maximumPixels: 10_000_000_000) } == nil)
    }

    // MARK: Crafted AVI files end to end

    @Test func frameRateOfFourGigahertzFallsBackAndEveryFrameIsRead() throws {
        let dir = try TemporaryDirectory()
        // strh dwScale = 1, dwRate = 4e9 (as Int32 bits): a 1/4e9 s frame.
        let path = try hostileAVI(dir, [("strh", 20, 1), ("strh", 24, Int32(bitPattern: 4_000_000_000))])
        let source = try VideoFileSource(path: path)
        #expect(source.frameRate == 30)
        let result = try play(path)
        #expect(result.error == nil, "\(String(describing: result.error))")
        #expect(result.frames.count == 10)
        let times = result.frames.map(\.presentationTimeStamp)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "\(times)")
        #expect(times.allSatisfy { $0.seconds.isFinite && $0.seconds >= 0 && $0.seconds < 10 })
    }

    @Test func absurdFrameCountMeansNoTruncationCheck() throws {
        let dir = try TemporaryDirectory()
        // strh dwLength = 0xFFFFFFFF: 4.3e9 frames, a 4.5-year duration, for 10 frames.
        let path = try hostileAVI(dir, [("strh", 32, -1)])
        #expect(try VideoFileSource(path: path).declaredFrameCount == 0)
        let result = try play(path)
        #expect(result.error == nil, "\(String(describing: result.error))")
        #expect(result.frames.count == 10)
    }

    @Test func zeroAndNegativeSizesAreRefusedWithATypedError() throws {
        for (width, height): (Int32, Int32) in [(0, 24), (-32, 24), (20_000, -20_000)] {
            let dir = try TemporaryDirectory()
            let path = try hostileAVI(dir, [("strf", 4, width), ("strf", 8, height)])
            let e = error { _ = try CaptureDevice(videoFileAtPath: path) }
            #expect(e?.code == .cannotOpenVideo, "\(width)x\(height): \(String(describing: e))")
        }
    }

    @Test func sizeTheDataCannotFillEndsWithATypedError() throws {
        let dir = try TemporaryDirectory()
        // 100000x24 declared, 32x24 stored: opens, then no frame decodes.
        let path = try hostileAVI(dir, [("strf", 4, 100_000)])
        let device = try CaptureDevice(videoFileAtPath: path, pacing: .asFastAsPossible)
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder, discardsLate: false)
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 30))
        #expect(recorder.frames.isEmpty)
        let code = session.lastRuntimeError?.code
        #expect(code == .truncatedVideo || code == .decodeFailed, "\(String(describing: session.lastRuntimeError))")
    }
}
