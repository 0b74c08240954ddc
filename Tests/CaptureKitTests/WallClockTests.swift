import CaptureKit
import Foundation
import Testing

/// `WallClock` (CLOCK_MONOTONIC → wall time, measured once) and `LocalTimestamp` (the one
/// formatter of wall times), and which clock each source says it stamps with.
@Suite struct WallClockTests {
    @Test func aMonotonicTimeTakenNowMapsToNow() {
        let clock = WallClock.shared
        #expect(clock.uncertainty >= 0 && clock.uncertainty < 0.005, "bracket ±\(clock.uncertainty) s")
        for _ in 0..<5 {
            let before = Date()
            let mapped = clock.date(monotonic: WallClock.monotonicNow())
            let after = Date()
            // Within the measurement's uncertainty and a millisecond of reading the clocks.
            let slack = clock.uncertainty + 0.001
            #expect(mapped.timeIntervalSince(before) > -slack && after.timeIntervalSince(mapped) > -slack)
        }
    }

    @Test func theOffsetIsMeasuredOnceAndKeepsFrameSpacing() {
        // The shared mapping never changes within a process, so two frames keep their spacing.
        #expect(WallClock.shared == WallClock.shared)
        let clock = WallClock(offset: 1_795_000_000.25)
        let a = clock.date(monotonic: MediaTime(value: 1_000_000, timescale: 1_000_000))
        let b = clock.date(monotonic: MediaTime(value: 1_033_333, timescale: 1_000_000))
        #expect(abs(b.timeIntervalSince(a) - 0.033333) < 1e-6)
        #expect(abs(a.timeIntervalSince1970 - 1_795_000_001.25) < 1e-6)
        // A second measurement agrees with the first to within both brackets (no drift in a test's time).
        let again = WallClock.measure()
        #expect(abs(again.offset - WallClock.shared.offset) < again.uncertainty + WallClock.shared.uncertainty + 0.002)
    }

    @Test func mediaTimeIsStampedWithTheMomentItIsProcessed() {
        let processed = Date(timeIntervalSince1970: 1_795_000_000)
        let clock = WallClock(offset: 5)
        #expect(clock.date(for: MediaTime(seconds: 1.5), on: .media, processedAt: processed) == processed)
        #expect(clock.date(for: MediaTime(seconds: 1.5), on: .monotonic, processedAt: processed).timeIntervalSince1970 == 6.5)
    }

    @Test func camerasStampMonotonicTimeAndEverythingElseMediaTime() throws {
        let scene = SyntheticScene(size: .init(width: 64, height: 48), frameCount: 1)
        #expect(try CaptureDevice(syntheticScene: scene).source.timestampClock == .media)
        let folder = Fixtures.faces.appendingPathComponent("images").path
        #expect(try CaptureDevice(imagesAtPath: folder, frameRate: 1).source.timestampClock == .media)
        // V4L2 cameras: `V4L2EmulatorTests.cameraTimestampsMapToTheWallClockWithin50ms`.
    }

    @Test func localTimestampsAreRFC3339WithMillisecondsAndTheLocalOffset() throws {
        let date = Date(timeIntervalSince1970: 1_795_539_792.3459)
        let stamp = LocalTimestamp(date)
        let text = stamp.rfc3339
        let match = try #require(
            text.wholeMatch(of: /(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})([+-])(\d{2}):(\d{2})/), "\(text)")
        // Milliseconds are truncated, never rounded up into the next second.
        #expect(match.7 == "345")
        // The text names the same instant: parse it back with the offset it carries.
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let parsed = try #require(parser.date(from: text))
        #expect(abs(parsed.timeIntervalSince1970 - 1_795_539_792.345) < 1e-6)
        let sign = match.8 == "-" ? -1 : 1
        #expect(sign * (Int(match.9)! * 3600 + Int(match.10)! * 60) == stamp.utcOffsetSeconds)
        #expect(stamp.utcOffsetSeconds == TimeZone.current.secondsFromGMT(for: date))
        // The file-name form has the same digits.
        #expect(stamp.fileNameStamp == "\(match.1)\(match.2)\(match.3)-\(match.4)\(match.5)\(match.6).\(match.7)")
        #expect(stamp.timeOfDay == "\(match.4):\(match.5):\(match.6).\(match.7)")
        // Before 1970 the milliseconds still count forwards within their second.
        #expect(LocalTimestamp(Date(timeIntervalSince1970: -0.25)).millisecond == 750)
    }
}

/// Notes each frame's mapped wall time next to the moment it arrived.
private final class WallTimeRecorder: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // @unchecked: `lags` is guarded by `lock`.
    private let lock = NSLock()
    private var lags: [Double] = []

    func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        let received = Date()
        let wall = WallClock.shared.date(monotonic: sampleBuffer.presentationTimeStamp)
        lock.withLock { lags.append(received.timeIntervalSince(wall)) }
    }

    /// Seconds from each frame's wall time to its arrival, once `count` frames arrived (or 10 s passed).
    func wait(for count: Int) -> [Double] {
        let deadline = Date(timeIntervalSinceNow: 10)
        while lock.withLock({ lags.count }) < count && Date() < deadline { usleep(10_000) }
        return lock.withLock { lags }
    }
}

extension V4L2EmulatorTests {
    /// The emulator stamps frames with CLOCK_MONOTONIC at the moment it fills them, as a driver
    /// does; mapped through `WallClock`, each lands within 50 ms before its arrival.
    @Test func cameraTimestampsMapToTheWallClockWithin50ms() throws {
        let device = try V4L2Emulator.device()
        #expect(device.source.timestampClock == .monotonic)
        let output = CaptureVideoDataOutput()
        let recorder = WallTimeRecorder()
        output.setSampleBufferDelegate(recorder, queue: DispatchQueue(label: "v4l2.wallclock"))
        let session = try PhotoTestSupport.runningSession(device, preset: .vga640x480, outputs: [output])
        let lags = recorder.wait(for: 15)
        try session.stopRunning()
        #expect(lags.count >= 15)
        // Arrival is after the frame was taken (up to the mapping's bracket) and within 50 ms of
        // it; the first frames are left out, as they may wait in the driver while streaming starts.
        let slack = WallClock.shared.uncertainty + 0.001
        #expect(lags.dropFirst(5).allSatisfy { $0 > -slack && $0 < 0.050 }, "lags \(lags)")
    }
}
