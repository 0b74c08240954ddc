import Foundation
import Synchronization

/// Frames from a network camera (RTSP, RTSPS, MJPEG over HTTP/HTTPS), with reconnection.
///
/// A connection lives on its own thread (`NetworkStreamConnectionThread`): it connects, then
/// reads frames into a one-frame mailbox (the newest wins; a consumer that falls behind sees the
/// overwritten frames as a sequence gap, like a camera's dropped buffers). The capture thread
/// waits on the mailbox in short slices, so a stop never waits for the network. An MJPEG
/// stream's frames carry the camera's JPEG (`SourceFrame.jpegData`; see `NetworkStreamReader`).
///
/// States (`ConnectionState`), driven by the session's runner through `FrameSource`:
///
///     idle ── open() ──▶ streaming ── read fails / times out ──▶ lost(failures: 0)
///                            ▲                                      │ open() once the backoff
///                            └──────────── attempt succeeds ◀───────┘ delay has passed;
///                                                                      a failure: failures + 1
///
/// A drop makes `nextFrame` throw `.deviceDisconnected`, so the session reports an interruption
/// exactly as for an unplugged camera; the runner then calls `open` repeatedly, and this source
/// attempts a connection only when `backoff` says so (earlier calls throw at once). While lost,
/// `open` waits at most `reconnectSlice` for an attempt and leaves a slow one running for the
/// next call, so stopping a session is never held up by a connect. A camera that comes back
/// at another frame size is not resumed (the session's outputs are sized for the first).
///
/// Time: a frame's `presentationTimeStamp` is when it was received and decoded, in seconds
/// of CLOCK_MONOTONIC, the clock V4L2 stamps camera frames with, so streams and cameras share
/// one timeline. The stream's own timestamps are not used: an RTSP camera's clock starts
/// anywhere and restarts with each connection, and MJPEG over HTTP carries none.
///
/// Frame rate: RTSP's, as FFmpeg derives it from the RTP timestamps; for MJPEG over HTTP
/// (which FFmpeg reports as a 25 fps guess) or an RTSP stream reporting none, the rate measured
/// over the first second of frames when the source is created (`frameRateIsMeasured`).
///
/// Threading: `formats`, `info`, `connectionState` from any thread; `open`/`nextFrame`/`close`
/// on the capture thread only (FrameSource's rule).
public final class NetworkStreamSource: FrameSource, Sendable {
    /// Where the source is in its connect/drop/backoff cycle.
    public enum ConnectionState: Sendable, Equatable {
        /// Not connected and not trying (before the first `open`, after `close`).
        case idle
        /// Connected; frames flow.
        case streaming
        /// The stream dropped; `failures` attempts have failed since, and the next may start at
        /// `nextAttempt` (seconds on the source's clock).
        case lost(failures: Int, nextAttempt: Double)
    }

    /// The camera's address.
    public let url: NetworkStreamURL
    /// What the stream reported when it was first opened.
    public let info: NetworkStreamInfo
    /// The stream's frame rate (see the type's doc for where it comes from).
    public let framesPerSecond: Double
    /// True when `framesPerSecond` was measured from arriving frames rather than reported by the stream.
    public let frameRateIsMeasured: Bool
    public let formats: [CaptureDevice.Format]
    public let isLive = true
    public let pacing = FramePacing.realTime
    /// How long connecting and reading may take.
    public let timeouts: NetworkStreamTimeouts
    /// When a lost stream is tried again.
    public let backoff: NetworkStreamBackoff
    /// Longest an `open` waits for a reconnect attempt before leaving it to the next call.
    static let reconnectSlice = 0.2

    private let clock: @Sendable () -> Double
    private let opener: NetworkStreamOpener
    private let core: Mutex<Core>

    private struct Core {
        var state = ConnectionState.idle
        var connection: NetworkStreamConnectionThread?
    }

    /// Connects once to learn the stream's size and rate (measuring the rate when the stream
    /// does not carry one), and keeps that connection for the first `open`.
    ///
    /// - Parameters:
    ///   - url: the stream (RTSP, RTSPS, or MJPEG over HTTP(S)).
    ///   - timeouts: how long connecting and each read may take.
    ///   - backoff: the waits between reconnection attempts.
    ///   - clock: monotonic seconds, for frame times and the backoff schedule (tests inject one).
    ///   - opener: makes connections (tests inject scripted ones).
    /// - Throws: `.streamUnreachable` when the first connection fails or delivers fewer than two
    ///   frames within the read timeout; `.cannotOpenVideo` when it reports no usable size.
    public init(
        url: NetworkStreamURL, timeouts: NetworkStreamTimeouts = .init(), backoff: NetworkStreamBackoff = .init(),
        clock: @escaping @Sendable () -> Double = NetworkStreamSource.monotonicSeconds,
        opener: @escaping NetworkStreamOpener = NetworkStreamReader.opener
    ) throws(CaptureError) {
        self.url = url
        self.timeouts = timeouts
        self.backoff = backoff
        self.clock = clock
        self.opener = opener
        let probe = NetworkStreamConnectionThread(url: url, timeouts: timeouts, clock: clock, opener: opener)
        let info: NetworkStreamInfo
        switch probe.waitForOutcome(timeout: timeouts.connect + 5) {
        case .success(let opened): info = opened
        case .failure(let error):
            probe.stopAndJoin()
            throw error
        case nil:
            probe.stopAndJoin()
            throw Self.timedOut(url, timeouts)
        }
        self.info = info
        let reported = info.reportedFramesPerSecond
        // MJPEG over HTTP carries no timestamps: FFmpeg's rate for it is a guess.
        if url.scheme.hasPrefix("http") || !(reported > 0 && reported <= 1000) {
            guard let measured = probe.measureFrameRate(within: max(3, timeouts.read)) else {
                probe.stopAndJoin()
                throw CaptureError(
                    .streamUnreachable,
                    "\(url.redacted) connected but sent fewer than two frames in \(max(3, timeouts.read)) s: check the camera's stream settings",
                    path: url.redacted)
            }
            framesPerSecond = measured
            frameRateIsMeasured = true
        } else {
            framesPerSecond = reported
            frameRateIsMeasured = false
        }
        formats = [
            CaptureDevice.Format(
                mediaSubType: info.codec, pixelFormat: .bgr, dimensions: info.dimensions,
                videoSupportedFrameRateRanges: [.init(framesPerSecond: framesPerSecond)])
        ]
        core = Mutex(Core(state: .idle, connection: probe))
    }

    // Joined: a connection thread must not outlive its source (it may be decoding in OpenCV).
    deinit { core.withLock { $0.connection }?.stopAndJoin() }

    /// Where the source is in its connect/drop/backoff cycle.
    public var connectionState: ConnectionState { core.withLock { $0.state } }

    public func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        let (state, existing) = core.withLock { ($0.state, $0.connection) }
        if case .lost(let failures, let nextAttempt) = state {
            var attempt = existing
            if attempt == nil {
                let now = clock()
                guard now >= nextAttempt else {
                    throw CaptureError(
                        .deviceDisconnected,
                        "\(url.redacted) is lost; attempt \(failures + 1) in \(String(format: "%.1f", nextAttempt - now)) s",
                        path: url.redacted)
                }
                attempt = start()
            }
            guard let attempt, let outcome = attempt.waitForOutcome(timeout: Self.reconnectSlice) else {
                throw CaptureError(.deviceDisconnected, "\(url.redacted) is lost; still connecting", path: url.redacted)
            }
            do throws(CaptureError) {
                try accept(outcome, on: attempt, format: format)
            } catch {
                core.withLock {
                    $0.connection = nil
                    $0.state = .lost(failures: failures + 1, nextAttempt: clock() + backoff.delay(afterFailures: failures + 1))
                }
                throw error
            }
            return
        }
        var connection = existing
        if connection == nil || connection?.hasEnded == true {
            connection?.stopAndJoin()
            connection = start()
        }
        guard let connection else { return }
        guard let outcome = connection.waitForOutcome(timeout: timeouts.connect + 5) else {
            connection.stopAndJoin()
            core.withLock { $0.connection = nil }
            throw Self.timedOut(url, timeouts)
        }
        do throws(CaptureError) { try accept(outcome, on: connection, format: format) } catch {
            core.withLock { $0.connection = nil }
            throw error
        }
    }

    /// Makes a connection attempt the current one.
    private func start() -> NetworkStreamConnectionThread {
        let connection = NetworkStreamConnectionThread(url: url, timeouts: timeouts, clock: clock, opener: opener)
        core.withLock { $0.connection = connection }
        return connection
    }

    /// Streams from `connection` if it connected at the session's size; else stops it and throws.
    private func accept(
        _ outcome: Result<NetworkStreamInfo, CaptureError>, on connection: NetworkStreamConnectionThread,
        format: CaptureDevice.Format
    ) throws(CaptureError) {
        switch outcome {
        case .failure(let error):
            connection.stopAndJoin()
            throw error
        case .success(let opened) where opened.dimensions != format.dimensions:
            connection.stopAndJoin()
            throw CaptureError(
                .formatNotSupported,
                "\(url.redacted) now streams \(opened.dimensions), not \(format.dimensions): restart cvcam to use the new size",
                path: url.redacted)
        case .success:
            core.withLock { $0.state = .streaming }
        }
    }

    public func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        guard let connection = core.withLock({ $0.connection }) else {
            if isCancelled() { return nil }
            throw CaptureError(.deviceDisconnected, "\(url.redacted) is not connected", path: url.redacted)
        }
        while true {
            switch connection.takeFrame(waiting: 0.05) {
            case .frame(let frame, let time, let sequence):
                return SourceFrame(
                    pixelBuffer: frame.pixelBuffer, presentationTimeStamp: MediaTime(seconds: time), sequenceNumber: sequence,
                    jpegData: frame.jpegData)
            case .ended(let reason):
                connection.stopAndJoin()
                core.withLock {
                    $0.connection = nil
                    $0.state = .lost(failures: 0, nextAttempt: clock() + backoff.delay(afterFailures: 0))
                }
                throw CaptureError(
                    .deviceDisconnected,
                    "lost \(url.redacted) (\(reason)); reconnecting, first attempt in \(backoff.delay(afterFailures: 0)) s, then backing off up to \(backoff.maximumDelay) s",
                    path: url.redacted)
            case .none:
                if isCancelled() { return nil }
            }
        }
    }

    /// Ends the connection and waits for its thread: a read in progress is finished first (at
    /// most the read timeout when the camera went silent; a connection attempt at most the
    /// connect timeout), so no thread of this source is inside FFmpeg or OpenCV once it returns.
    public func close() {
        let connection = core.withLock { core -> NetworkStreamConnectionThread? in
            defer { core.connection = nil }
            if core.state == .streaming { core.state = .idle }
            return core.connection
        }
        connection?.stopAndJoin()
    }

    private static func timedOut(_ url: NetworkStreamURL, _ timeouts: NetworkStreamTimeouts) -> CaptureError {
        CaptureError(
            .streamUnreachable,
            "\(url.redacted) did not answer within \(timeouts.connect) s: check the address and port, or raise --connect-timeout",
            path: url.redacted)
    }

    /// Seconds of CLOCK_MONOTONIC (the clock V4L2 stamps frames with).
    public static let monotonicSeconds: @Sendable () -> Double = {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// One connection attempt and, once connected, its reading loop, on a thread of its own.
/// Frames go into a one-frame mailbox (the newest wins).
///
/// The thread calls into FFmpeg and OpenCV (CaptureVision's stream reader, `cv::imdecode`), so
/// it must be joined before the process exits: a thread still decoding while `exit()` runs the libraries'
/// destructors crashes the process. Its owner joins it (`stopAndJoin`); as a last line for exit
/// paths that never release the source (an error thrown after the input was opened), every
/// thread still running is stopped and joined by an `atexit` handler (`LiveStreamThreads`),
/// which runs before those destructors.
///
/// Threading: every method from any thread except the connection's own; the state is guarded
/// by `condition`.
final class NetworkStreamConnectionThread: @unchecked Sendable {
    // @unchecked: every mutable field is read and written under `condition`'s lock.

    enum Take {
        case frame(NetworkStreamFrame, time: Double, sequence: UInt64)
        case ended(String)
    }

    private let condition = NSCondition()
    private var outcome: Result<NetworkStreamInfo, CaptureError>?
    private var latest: (frame: NetworkStreamFrame, time: Double, sequence: UInt64)?
    private var received: UInt64 = 0
    private var firstTime = 0.0
    private var lastTime = 0.0
    private var endReason: String?
    private var stopRequested = false
    /// Set by the thread as its very last step, after the connection is closed.
    private var threadEnded = false
    /// Longest a stop may wait for the thread: a read or connect blocked in FFmpeg ends within its timeout.
    let joinBound: Double
    /// The camera's address, redacted (what a test stops its own threads by).
    let redactedURL: String
    /// The connection's thread, its one job the attempt and the reading loop; joined
    /// (`pthread_join`) by `stopAndJoin`, so no thread of the stream outlives the stop.
    private let thread = WorkerThread(name: "cvcam.stream")

    init(
        url: NetworkStreamURL, timeouts: NetworkStreamTimeouts, clock: @escaping @Sendable () -> Double,
        opener: @escaping NetworkStreamOpener
    ) {
        joinBound = max(timeouts.connect, timeouts.read) + 1
        redactedURL = url.redacted
        LiveStreamThreads.shared.add(self)
        thread.run { [self] in
            run(url: url, timeouts: timeouts, clock: clock, opener: opener)
            update { $0.threadEnded = true }
            LiveStreamThreads.shared.remove(self)
        }
    }

    private func run(
        url: NetworkStreamURL, timeouts: NetworkStreamTimeouts, clock: @Sendable () -> Double, opener: NetworkStreamOpener
    ) {
        let connection: any NetworkStreamConnection
        do {
            connection = try opener(url, timeouts)
        } catch {
            update { $0.outcome = .failure(error) }
            return
        }
        defer { connection.close() }
        update { $0.outcome = .success(connection.info) }
        while !update({ $0.stopRequested }) {
            let reason: String
            do {
                if let frame = try connection.readFrame() {
                    let now = clock()
                    update { s in
                        if s.received == 0 { s.firstTime = now }
                        s.lastTime = now
                        // A damaged frame the reader dropped is a gap in the sequence, as on a camera.
                        s.received += 1 + UInt64(frame.damagedBefore)
                        s.latest = (frame, now, s.received)
                    }
                    continue
                }
                reason = "no frame within \(timeouts.read) s, or the server closed the stream"
            } catch {
                reason = error.message
            }
            update { $0.endReason = reason }
            return
        }
    }

    /// Runs `body` under the lock and wakes every waiter.
    @discardableResult
    private func update<T>(_ body: (NetworkStreamConnectionThread) -> T) -> T {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body(self)
    }

    /// Waits up to `timeout` seconds for the attempt to connect or fail; nil while it is still trying.
    func waitForOutcome(timeout: Double) -> Result<NetworkStreamInfo, CaptureError>? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while outcome == nil && condition.wait(until: deadline) {}
        return outcome
    }

    /// The newest frame, waiting up to `seconds` for one; `.ended` once the stream has dropped
    /// (after its last frame was taken); nil when nothing came.
    func takeFrame(waiting seconds: Double) -> Take? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let frame = latest {
                latest = nil
                return .frame(frame.frame, time: frame.time, sequence: frame.sequence)
            }
            if let endReason { return .ended(endReason) }
            if case .failure(let error) = outcome { return .ended(error.message) }
            if !condition.wait(until: deadline) { return nil }
        }
    }

    /// Frames per second over the frames received in about one second (at least two frames,
    /// waiting up to `limit` seconds for them); nil when fewer than two came.
    func measureFrameRate(within limit: Double) -> Double? {
        let start = Date()
        condition.lock()
        defer { condition.unlock() }
        while true {
            let span = lastTime - firstTime
            if received >= 2 && (span >= 1 || received >= 31) { break }
            if endReason != nil || Date().timeIntervalSince(start) >= limit { break }
            _ = condition.wait(until: min(Date(timeIntervalSinceNow: 0.05), start.addingTimeInterval(limit)))
        }
        guard received >= 2, lastTime > firstTime else { return nil }
        return Double(received - 1) / (lastTime - firstTime)
    }

    /// Whether the stream has dropped or the attempt failed.
    var hasEnded: Bool {
        condition.lock()
        defer { condition.unlock() }
        if case .failure = outcome { return true }
        return endReason != nil
    }

    /// Asks the thread to finish; it closes the connection after its current read.
    func stop() { update { $0.stopRequested = true } }

    /// Asks the thread to finish and waits until it has closed the connection and ended: after
    /// the read or connection attempt in progress, so within the read (or connect) timeout.
    func stopAndJoin() {
        condition.lock()
        stopRequested = true
        condition.broadcast()
        while !threadEnded { condition.wait() }
        condition.unlock()
        thread.stopAndJoin()
    }

    /// Waits up to `seconds` for the thread to finish its work, and joins it if it did; whether
    /// it did.
    fileprivate func join(within seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        while !threadEnded {
            if !condition.wait(until: deadline) { break }
        }
        let ended = threadEnded
        condition.unlock()
        if ended { thread.stopAndJoin() }
        return ended
    }
}

/// Every network-stream thread still running, so the process can stop and join them at `exit`.
///
/// The `atexit` handler is registered with the first thread. Handlers and C++ static destructors
/// run in the reverse order of their registration, and OpenCV's and FFmpeg's were registered when
/// their libraries loaded, before any stream thread existed: so this handler runs first, while
/// the libraries are still whole. It waits at most the longest of the threads' timeouts plus a
/// second (a read or connect blocked in FFmpeg ends within its timeout).
///
/// Threading: thread-safe (a Mutex).
final class LiveStreamThreads: Sendable {
    static let shared = LiveStreamThreads()
    private let threads = Mutex<(registered: Bool, live: [ObjectIdentifier: NetworkStreamConnectionThread])>((false, [:]))

    func add(_ thread: NetworkStreamConnectionThread) {
        let register = threads.withLock { state -> Bool in
            state.live[ObjectIdentifier(thread)] = thread
            defer { state.registered = true }
            return !state.registered
        }
        if register { atexit { LiveStreamThreads.shared.stopAndJoinAll() } }
    }

    func remove(_ thread: NetworkStreamConnectionThread) {
        _ = threads.withLock { $0.live.removeValue(forKey: ObjectIdentifier(thread)) }
    }

    /// How many stream threads are running (tests).
    var count: Int { threads.withLock { $0.live.count } }

    /// Stops every live thread (or those `include` picks: a test must leave the others' threads
    /// alone) and waits for them to end, each at most its `joinBound`.
    func stopAndJoinAll(where include: (NetworkStreamConnectionThread) -> Bool = { _ in true }) {
        let live = threads.withLock { Array($0.live.values) }.filter(include)
        for thread in live { thread.stop() }
        let deadline = Date(timeIntervalSinceNow: live.map(\.joinBound).max() ?? 0)
        for thread in live { _ = thread.join(within: max(0, deadline.timeIntervalSinceNow)) }
    }
}

extension CaptureDevice {
    /// A network camera (`DeviceType.external`): RTSP, RTSPS, or MJPEG over HTTP(S). Its name
    /// and unique ID carry the redacted URL only.
    ///
    /// - Throws: `.streamUnreachable` or `.cannotOpenVideo` (see `NetworkStreamSource`).
    public convenience init(
        networkStream url: NetworkStreamURL, timeouts: NetworkStreamTimeouts = .init(),
        backoff: NetworkStreamBackoff = .init()
    ) throws(CaptureError) {
        let source = try NetworkStreamSource(url: url, timeouts: timeouts, backoff: backoff)
        try self.init(
            uniqueID: "stream:" + url.redacted, localizedName: "Network camera \(url.redacted)", deviceType: .external,
            source: source)
    }
}
