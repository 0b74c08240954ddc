import CaptureKit
import CaptureKitTesting
import CaptureVision
import Foundation
import Synchronization
import Testing

@Suite struct NetworkStreamURLTests {
    @Test func passwordAndSecretQueryValuesAreRedacted() throws {
        let url = try NetworkStreamURL("rtsp://alice:s3cret@cam.local:554/live?channel=1&password=xyz&Token=abc")
        #expect(url.redacted == "rtsp://alice:***@cam.local:554/live?channel=1&password=***&Token=***")
        #expect(url.description == url.redacted)
        #expect(url.connectionString.contains("alice:s3cret@"))
        #expect(url.connectionString.contains("password=xyz"))
        #expect(url.scheme == "rtsp" && url.host == "cam.local" && url.user == "alice")
    }

    @Test func environmentCredentialsFillWhatTheURLLacks() throws {
        let filled = try NetworkStreamURL("rtsp://cam/live", user: "bob", password: "p@ss w0rd")
        #expect(filled.connectionString == "rtsp://bob:p%40ss%20w0rd@cam/live")
        #expect(filled.redacted == "rtsp://bob:***@cam/live")
        let passwordOnly = try NetworkStreamURL("rtsps://admin@cam/live", password: "hunter22")
        #expect(passwordOnly.connectionString == "rtsps://admin:hunter22@cam/live")
        #expect(passwordOnly.redacted == "rtsps://admin:***@cam/live")
        // The URL's own credentials win.
        let own = try NetworkStreamURL("http://alice:x1@cam/mjpg", user: "bob", password: "y2")
        #expect(own.connectionString == "http://alice:x1@cam/mjpg")
        // A password without a user cannot be sent: it is not added.
        #expect(try NetworkStreamURL("rtsp://cam/live", password: "lonely").connectionString == "rtsp://cam/live")
    }

    @Test func messagesQuotingTheURLOrPasswordAreRedacted() throws {
        let url = try NetworkStreamURL("rtsp://alice:s3cret@cam/live")
        #expect(url.redact("open rtsp://alice:s3cret@cam/live failed") == "open rtsp://alice:***@cam/live failed")
        #expect(url.redact("auth s3cret rejected") == "auth *** rejected")
        let short = try NetworkStreamURL("rtsp://al:ab@cam/live")
        #expect(short.redact("rtsp://al:ab@cam/live: absent") == "rtsp://al:***@cam/live: absent")
    }

    @Test func badAddressesAreRefusedWithRedactedMessages() {
        for text in ["ftp://bob:pw123@host/x", "rtsp:///path", "rtsp://carol:pw456@/x"] {
            let error = #expect(throws: CaptureError.self) { try NetworkStreamURL(text) }
            #expect(error?.code == .invalidStreamURL)
            #expect(error?.message.contains("pw123") == false && error?.message.contains("pw456") == false)
        }
        #expect(NetworkStreamURL.isNetworkStream("RTSP://cam/live"))
        #expect(NetworkStreamURL.isNetworkStream("https://cam/mjpg"))
        #expect(!NetworkStreamURL.isNetworkStream("http.mp4"))
        #expect(!NetworkStreamURL.isNetworkStream("synthetic:size=10x10"))
    }
}

@Suite struct NetworkStreamBackoffTests {
    @Test func defaultScheduleDoublesFromHalfASecondToThirty() {
        let backoff = NetworkStreamBackoff()
        #expect((0..<9).map { backoff.delay(afterFailures: $0) } == [0.5, 1, 2, 4, 8, 16, 30, 30, 30])
        #expect(backoff.delay(afterFailures: 10_000) == 30)
        #expect(backoff.delay(afterFailures: -1) == 0.5)
    }

    @Test func customSchedule() {
        let backoff = NetworkStreamBackoff(initialDelay: 1, multiplier: 3, maximumDelay: 20)
        #expect((0..<5).map { backoff.delay(afterFailures: $0) } == [1, 3, 9, 20, 20])
    }
}

/// A connection that delivers `frames` frames every `interval` seconds, then ends (a drop).
private final class ScriptedConnection: NetworkStreamConnection {
    let info: NetworkStreamInfo
    private var remaining: Int
    private let interval: Double
    private let pool: PixelBufferPool

    init(info: NetworkStreamInfo, frames: Int, interval: Double) {
        self.info = info
        remaining = frames
        self.interval = interval
        pool = PixelBufferPool(width: info.dimensions.width, height: info.dimensions.height, pixelFormat: .bgr)
    }

    func readFrame() throws(CaptureError) -> NetworkStreamFrame? {
        guard remaining > 0 else { return nil }
        remaining -= 1
        Thread.sleep(forTimeInterval: interval)
        return NetworkStreamFrame(pixelBuffer: try pool.makeBuffer())
    }

    func close() {}
}

/// Scripted attempts: each opener call takes the next step (connect with N frames, or fail).
private final class ScriptedOpener: Sendable {
    enum Step: Sendable {
        case connect(frames: Int)
        case fail
    }
    let steps: Mutex<[Step]>
    let attempts = Atomic<Int>(0)
    let info: NetworkStreamInfo
    let interval: Double

    init(_ steps: [Step], info: NetworkStreamInfo, interval: Double = 0.002) {
        self.steps = Mutex(steps)
        self.info = info
        self.interval = interval
    }

    var opener: NetworkStreamOpener {
        { [self] url, _ throws(CaptureError) in
            attempts.add(1, ordering: .relaxed)
            let step = steps.withLock { $0.isEmpty ? .fail : $0.removeFirst() }
            switch step {
            case .connect(let frames): return ScriptedConnection(info: info, frames: frames, interval: interval)
            case .fail: throw CaptureError(.streamUnreachable, "\(url.redacted) refused")
            }
        }
    }
}

@Suite struct NetworkStreamStateMachineTests {
    let info = NetworkStreamInfo(dimensions: .init(width: 64, height: 48), reportedFramesPerSecond: 20, codec: "MJPG")

    @Test func dropBacksOffAndReconnectsOnSchedule() throws {
        let now = Mutex<Double>(100)
        let script = ScriptedOpener([.connect(frames: 5), .fail, .fail, .connect(frames: 1000)], info: info)
        let source = try NetworkStreamSource(
            url: try NetworkStreamURL("rtsp://u:pw@cam/live"), backoff: .init(initialDelay: 1, multiplier: 2, maximumDelay: 4),
            clock: { now.withLock { $0 } }, opener: script.opener)
        #expect(source.framesPerSecond == 20 && !source.frameRateIsMeasured)
        #expect(source.formats.first?.dimensions == .init(width: 64, height: 48))
        let format = try #require(source.formats.first)
        let duration = MediaTime.frameDuration(framesPerSecond: 20)

        // The first open adopts the connection the initialiser made.
        try source.open(format: format, frameDuration: duration)
        #expect(source.connectionState == .streaming)
        #expect(script.attempts.load(ordering: .relaxed) == 1)
        var frames = 0
        let dropped = #expect(throws: CaptureError.self) {
            while try source.nextFrame(isCancelled: { false }) != nil { frames += 1 }
        }
        #expect(dropped?.code == .deviceDisconnected)
        #expect(dropped?.message.contains("pw") == false)
        #expect(frames >= 1 && frames <= 5)
        #expect(source.connectionState == .lost(failures: 0, nextAttempt: 101))
        source.close()

        // Before the first delay has passed, open does not even try.
        #expect(throws: CaptureError.self) { try source.open(format: format, frameDuration: duration) }
        #expect(script.attempts.load(ordering: .relaxed) == 1)
        now.withLock { $0 = 101 }
        #expect(throws: CaptureError.self) { try source.open(format: format, frameDuration: duration) }
        #expect(script.attempts.load(ordering: .relaxed) == 2)
        #expect(source.connectionState == .lost(failures: 1, nextAttempt: 103))
        now.withLock { $0 = 102.9 }
        #expect(throws: CaptureError.self) { try source.open(format: format, frameDuration: duration) }
        #expect(script.attempts.load(ordering: .relaxed) == 2)
        now.withLock { $0 = 103 }
        #expect(throws: CaptureError.self) { try source.open(format: format, frameDuration: duration) }
        #expect(source.connectionState == .lost(failures: 2, nextAttempt: 107))
        now.withLock { $0 = 107 }
        try source.open(format: format, frameDuration: duration)
        #expect(script.attempts.load(ordering: .relaxed) == 4)
        #expect(source.connectionState == .streaming)
        let frame = try #require(try source.nextFrame(isCancelled: { false }))
        // Frames are stamped on the source's clock when received.
        #expect(frame.presentationTimeStamp.seconds == 107)
        source.close()
        #expect(source.connectionState == .idle)
    }

    @Test func nextFrameHonoursCancellationWhileTheStreamIsSilent() throws {
        // One frame every 5 s: nextFrame must still return soon after cancellation.
        let script = ScriptedOpener([.connect(frames: 100)], info: info, interval: 5)
        let source = try NetworkStreamSource(
            url: try NetworkStreamURL("rtsp://cam/live"), opener: script.opener)
        let format = try #require(source.formats.first)
        try source.open(format: format, frameDuration: .frameDuration(framesPerSecond: 20))
        let start = monotonicSeconds()
        let frame = try source.nextFrame(isCancelled: { monotonicSeconds() - start > 0.2 })
        #expect(frame == nil)
        #expect(monotonicSeconds() - start < 1)
        source.close()
    }

    @Test func httpRateIsMeasuredNotTakenFromFFmpegsGuess() throws {
        // FFmpeg reports 25 fps for MJPEG over HTTP whatever the camera sends.
        let guessed = NetworkStreamInfo(dimensions: .init(width: 32, height: 24), reportedFramesPerSecond: 25, codec: "MJPG")
        let script = ScriptedOpener([.connect(frames: 1000)], info: guessed, interval: 0.1)
        let source = try NetworkStreamSource(url: try NetworkStreamURL("http://cam/mjpg"), opener: script.opener)
        #expect(source.frameRateIsMeasured)
        #expect(source.framesPerSecond > 7 && source.framesPerSecond < 11, "measured \(source.framesPerSecond)")
        source.close()
    }

    @Test func aFailedFirstConnectionThrowsWhatTheOpenerSaid() throws {
        let script = ScriptedOpener([.fail], info: info)
        let error = #expect(throws: CaptureError.self) {
            try NetworkStreamSource(url: try NetworkStreamURL("rtsp://u:pw9876@cam/live"), opener: script.opener)
        }
        #expect(error?.code == .streamUnreachable)
        #expect(error?.message == "rtsp://u:***@cam/live refused")
    }
}

/// Against real servers on loopback (Tests/Servers): RTSP through GStreamer's RTSP server,
/// MJPEG over HTTP through a Python server.
@Suite(.serialized) struct NetworkStreamServerTests {
    /// CLOCK_MONOTONIC in seconds, read independently of the source.
    static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    @Test func rtspFramesArriveWithTheStreamsSizeRateAndReceiptTimes() throws {
        guard let server = try NetworkStreamTestServer.start(.rtsp, arguments: ["--size", "320x240", "--fps", "15"]) else { return }
        defer { server.stop() }
        let device = try CaptureDevice(networkStream: try NetworkStreamURL(server.url()))
        let source = try #require(device.source as? NetworkStreamSource)
        #expect(device.activeFormat.dimensions == .init(width: 320, height: 240))
        #expect(abs(source.framesPerSecond - 15) < 0.01 && !source.frameRateIsMeasured)
        #expect(device.activeFormat.mediaSubType == "mjpe", "OpenCV's code for FFmpeg's mjpeg decoder")
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder)
        let before = Self.monotonicNow()
        try session.startRunning()
        // A generous bound: a busy machine decodes late, never fewer frames in the end.
        let frames = recorder.wait(for: 30, timeout: 90)
        let after = Self.monotonicNow()
        try session.stopRunning()
        try #require(frames.count >= 30)
        #expect(frames.allSatisfy { $0.width == 320 && $0.height == 240 })
        let times = frames.map(\.presentationTimeStamp.seconds)
        #expect(times.allSatisfy { $0 >= before - 5 && $0 <= after }, "receipt times on CLOCK_MONOTONIC")
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        // Once past what FFmpeg buffered while probing, 15 frames at 15 fps take about a second:
        // never much less (they are receipt times); more only as much as the machine is late.
        let span = times[29] - times[15]
        #expect(span > 0.5 && span < 30, "15 frames over \(span) s")
    }

    @Test func rtspWithCredentialsConnectsAndWrongOnesFailRedacted() throws {
        guard
            let server = try NetworkStreamTestServer.start(
                .rtsp, arguments: ["--user", "alice", "--password", "Sesame42"])
        else { return }
        defer { server.stop() }
        let device = try CaptureDevice(networkStream: try NetworkStreamURL("rtsp://127.0.0.1:\(server.port)/stream", user: "alice", password: "Sesame42"))
        #expect(!device.localizedName.contains("Sesame42") && device.localizedName.contains("alice:***@"))
        #expect(!device.uniqueID.contains("Sesame42"))
        let error = #expect(throws: CaptureError.self) {
            try CaptureDevice(
                networkStream: try NetworkStreamURL(server.url(user: "alice", password: "Wrong9876")),
                timeouts: .init(connect: 5))
        }
        #expect(error?.code == .streamUnreachable)
        #expect(error?.description.contains("Wrong9876") == false)
        #expect(error?.message.contains("rtsp://alice:***@127.0.0.1") == true)
    }

    /// Runs a session on `device` until `count` frames arrived (or 10 s passed) and returns them.
    private func streamedFrames(from device: CaptureDevice, count: Int) throws -> [SampleBuffer] {
        let recorder = FrameRecorder()
        let (session, _) = try makeSession(device: device, recorder: recorder)
        try session.startRunning()
        let frames = recorder.wait(for: count, timeout: 90)
        try session.stopRunning()
        return frames
    }

    @Test func mjpegOverHTTPReportsTheMeasuredRate() throws {
        guard
            let server = try NetworkStreamTestServer.start(
                .mjpeg, arguments: ["--size", "352x288", "--fps", "12", "--user", "bob", "--password", "Open4Me"])
        else { return }
        defer { server.stop() }
        let device = try CaptureDevice(networkStream: try NetworkStreamURL(server.url(user: "bob", password: "Open4Me")))
        let source = try #require(device.source as? NetworkStreamSource)
        #expect(device.activeFormat.dimensions == .init(width: 352, height: 288))
        #expect(source.frameRateIsMeasured)
        #expect(abs(source.framesPerSecond - 12) < 2, "measured \(source.framesPerSecond) fps")
        let frames = try streamedFrames(from: device, count: 6)
        #expect(frames.count >= 6 && frames.allSatisfy { $0.width == 352 && $0.height == 288 })
    }

    /// https:// with a self-signed certificate made at run time: FFmpeg (tls_verify off by
    /// default) accepts it, and the frames are the server's; plain http:// to it does not connect.
    @Test func mjpegOverHTTPSDeliversFramesOfTheStreamsSize() throws {
        guard
            let server = try NetworkStreamTestServer.start(
                .mjpeg, arguments: ["--size", "352x288", "--fps", "12", "--user", "bob", "--password", "Open4Me"], tls: true)
        else { return }
        defer { server.stop() }
        let url = server.url(user: "bob", password: "Open4Me")
        #expect(url.hasPrefix("https://"))
        let device = try CaptureDevice(networkStream: try NetworkStreamURL(url))
        #expect(device.activeFormat.dimensions == .init(width: 352, height: 288))
        #expect(!device.localizedName.contains("Open4Me") && device.localizedName.contains("https://bob:***@"))
        let frames = try streamedFrames(from: device, count: 6)
        #expect(frames.count >= 6 && frames.allSatisfy { $0.width == 352 && $0.height == 288 })
        let plain = #expect(throws: CaptureError.self) {
            try CaptureDevice(
                networkStream: try NetworkStreamURL("http://bob:Open4Me@127.0.0.1:\(server.port)/stream"),
                timeouts: .init(connect: 3))
        }
        #expect(plain?.code == .streamUnreachable, "the server speaks only TLS")
    }

    /// rtsps:// to GStreamer's RTSP server with TLS (RTP interleaved in the TLS connection).
    @Test func rtspsDeliversFramesOfTheStreamsSize() throws {
        guard
            let server = try NetworkStreamTestServer.start(
                .rtsp, arguments: ["--size", "320x240", "--fps", "15", "--user", "alice", "--password", "Sesame42"], tls: true)
        else { return }
        defer { server.stop() }
        let url = server.url(user: "alice", password: "Sesame42")
        #expect(url.hasPrefix("rtsps://"))
        let device = try CaptureDevice(networkStream: try NetworkStreamURL(url))
        #expect(device.activeFormat.dimensions == .init(width: 320, height: 240))
        #expect(device.activeFormat.mediaSubType == "mjpe")
        let frames = try streamedFrames(from: device, count: 15)
        #expect(frames.count >= 15 && frames.allSatisfy { $0.width == 320 && $0.height == 240 })
    }

    /// Checks that every frame carries a JPEG whose decode is exactly the frame's pixels.
    private func expectPixelsAreTheirJPEGsDecode(_ frames: [SampleBuffer]) throws {
        for frame in frames {
            let jpeg = try #require(frame.jpegData, "an MJPEG stream's frame keeps the camera's JPEG")
            #expect(jpeg.prefix(2) == Data([0xFF, 0xD8]) && jpeg.suffix(2) == Data([0xFF, 0xD9]))
            let decoded = try PixelBuffer(width: frame.width, height: frame.height, pixelFormat: .bgr)
            try Imaging.decode(jpeg, into: decoded, "decoding the kept JPEG")
            #expect(decoded.packedBytes() == frame.pixelBuffer.packedBytes())
        }
    }

    /// MJPEG over HTTP is read undecoded: each frame's JPEG is the very file the camera sent, and
    /// the pixels are its decode, so the preview can pass it through.
    @Test func mjpegOverHTTPFramesCarryTheCamerasOwnJPEG() throws {
        guard
            let (server, served) = try NetworkStreamTestServer.startMJPEGKeepingItsFrames(
                ["--size", "320x240", "--fps", "20"])
        else { return }
        defer { server.stop() }
        #expect(served.count == 64)
        let device = try CaptureDevice(networkStream: try NetworkStreamURL(server.url()))
        #expect(device.activeFormat.mediaSubType == "mjpe")
        let frames = try streamedFrames(from: device, count: 10)
        #expect(frames.count >= 10)
        #expect(frames.allSatisfy { $0.jpegData.map { served.contains([UInt8]($0)) } == true }, "byte for byte what the server sent")
        try expectPixelsAreTheirJPEGsDecode(frames)
    }

    /// A part that is no JPEG (a damaged frame) is dropped and shows as a gap in the sequence, as
    /// a camera's damaged buffer does; the frames around it still arrive with their JPEG.
    @Test func aDamagedMJPEGFrameIsDroppedAsAGap() throws {
        guard
            let (server, served) = try NetworkStreamTestServer.startMJPEGKeepingItsFrames(
                ["--size", "320x240", "--fps", "20", "--garbage-every", "4"])
        else { return }
        defer { server.stop() }
        let device = try CaptureDevice(networkStream: try NetworkStreamURL(server.url()))
        let frames = try streamedFrames(from: device, count: 12)
        #expect(frames.count >= 12)
        #expect(frames.allSatisfy { $0.jpegData.map { served.contains([UInt8]($0)) } == true })
        let span = Int(frames[frames.count - 1].sequenceNumber - frames[0].sequenceNumber) + 1
        #expect(span >= frames.count + frames.count / 3 - 1, "one frame in four dropped: \(frames.map(\.sequenceNumber))")
    }

    /// A camera reconfigured to another size mid-stream: its JPEGs no longer decode into the
    /// session's buffers, so after `damagedPacketLimit` of them the stream counts as lost, and the
    /// reconnection names the new size instead of resuming at it.
    @Test func anMJPEGCameraThatChangesSizeIsLostAndNamesTheNewSize() throws {
        guard
            let server = try NetworkStreamTestServer.start(
                .mjpeg, arguments: ["--size", "320x240", "--fps", "50", "--resize-after", "120", "640x480"])
        else { return }
        defer { server.stop() }
        let source = try NetworkStreamSource(
            url: try NetworkStreamURL(server.url()), backoff: .init(initialDelay: 0.1, multiplier: 1, maximumDelay: 0.1))
        let format = source.formats[0]
        #expect(format.dimensions == .init(width: 320, height: 240))
        try source.open(format: format, frameDuration: MediaTime(value: 1, timescale: 50))
        defer { source.close() }
        var frames = 0
        let lost = #expect(throws: CaptureError.self) {
            while try source.nextFrame(isCancelled: { false }) != nil { frames += 1 }
        }
        #expect(lost?.code == .deviceDisconnected)
        #expect(lost?.message.contains("25 JPEG frames in a row that do not decode to 320x240") == true, "\(String(describing: lost))")
        #expect(frames > 10 && frames <= 120, "frames at the first size: \(frames)")
        var reopened: CaptureError?
        let deadline = Date(timeIntervalSinceNow: 15)
        while Date() < deadline {
            do throws(CaptureError) {
                try source.open(format: format, frameDuration: MediaTime(value: 1, timescale: 50))
                Issue.record("the stream resumed at another size")
                return
            } catch {
                if error.code == .formatNotSupported {
                    reopened = error
                    break
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        #expect(reopened?.message.contains("now streams 640x480, not 320x240") == true, "\(String(describing: reopened))")
    }

    /// RTSP's MJPEG payload (RFC 2435) comes out of FFmpeg's depacketiser as whole JPEGs, kept too.
    @Test func rtspMJPEGFramesCarryTheirJPEG() throws {
        guard let server = try NetworkStreamTestServer.start(.rtsp, arguments: ["--size", "320x240", "--fps", "15"]) else { return }
        defer { server.stop() }
        let device = try CaptureDevice(networkStream: try NetworkStreamURL(server.url()))
        let frames = try streamedFrames(from: device, count: 10)
        #expect(frames.count >= 10)
        try expectPixelsAreTheirJPEGsDecode(frames)
    }

    @Test func aClosedPortFailsFastWithAClearError() throws {
        let port = closedLoopbackPort()
        let start = Self.monotonicNow()
        let error = #expect(throws: CaptureError.self) {
            try CaptureDevice(
                networkStream: try NetworkStreamURL("rtsp://eve:Hidden77@127.0.0.1:\(port)/stream"),
                timeouts: .init(connect: 3))
        }
        #expect(Self.monotonicNow() - start < 4)
        #expect(error?.code == .streamUnreachable)
        #expect(error?.message.hasPrefix("cannot open rtsp://eve:***@127.0.0.1:\(port)/stream: ") == true)
        #expect(error?.description.contains("Hidden77") == false)
    }

    @Test func aServerRestartInterruptsAndResumes() throws {
        guard let first = try NetworkStreamTestServer.start(.rtsp, arguments: ["--fps", "20"]) else { return }
        let port = first.port
        let device = try CaptureDevice(
            networkStream: try NetworkStreamURL(first.url()), timeouts: .init(connect: 5, read: 3),
            backoff: .init(initialDelay: 0.2, multiplier: 2, maximumDelay: 1))
        let recorder = FrameRecorder(keepsFrames: false)
        let (session, _) = try makeSession(device: device, recorder: recorder)
        let log = EventLog(session)
        try session.startRunning()
        _ = recorder.wait(for: 10, timeout: 90)
        #expect(recorder.received >= 10)

        first.stop()
        #expect(log.events(waitingFor: "wasInterrupted", timeout: 60).last?.hasPrefix("wasInterrupted(deviceDisconnected: lost rtsp://127.0.0.1:\(port)/stream") == true)
        #expect(session.isInterrupted)
        let second = try #require(try NetworkStreamTestServer.start(.rtsp, port: port, arguments: ["--fps", "20"]))
        defer { second.stop() }
        #expect(log.events(waitingFor: "interruptionEnded", timeout: 60).last == "interruptionEnded")
        let resumedAt = recorder.received
        _ = recorder.wait(for: resumedAt + 10, timeout: 90)
        #expect(recorder.received >= resumedAt + 10, "frames continue after the restart")
        #expect(session.isRunning)
        let stopStart = Self.monotonicNow()
        try session.stopRunning()
        #expect(Self.monotonicNow() - stopStart < 1.5)
        let names = log.events(waitingFor: "didStopRunning").map { String($0.prefix { $0 != "(" }) }
        #expect(names == ["didStartRunning", "wasInterrupted", "interruptionEnded", "didStopRunning"])
        #expect(session.lastRuntimeError == nil, "an interruption that ended did not stop the session")
    }

    @Test func stoppingWhileTheServerIsGoneReturnsPromptly() throws {
        guard let server = try NetworkStreamTestServer.start(.rtsp) else { return }
        let device = try CaptureDevice(networkStream: try NetworkStreamURL(server.url()), timeouts: .init(connect: 5, read: 3))
        let recorder = FrameRecorder(keepsFrames: false)
        let (session, _) = try makeSession(device: device, recorder: recorder)
        let log = EventLog(session)
        try session.startRunning()
        _ = recorder.wait(for: 5, timeout: 90)
        server.stop()
        #expect(log.events(waitingFor: "wasInterrupted", timeout: 60).last?.hasPrefix("wasInterrupted") == true)
        let start = Self.monotonicNow()
        try session.stopRunning()
        #expect(Self.monotonicNow() - start < 1.5)
    }
}
