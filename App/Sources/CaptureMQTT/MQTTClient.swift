import CMosquitto
import Foundation
import Glibc
import Logging

/// `mosquitto_lib_init`, once per process (libmosquitto asks for it before any other call).
private let libraryInitialised: Int32 = mosquitto_lib_init()

/// An MQTT client that owns its outbox: events survive broker outages, in order.
///
/// ```
///            start()                 CONNACK 0
///   idle ─────────────▶ connecting ─────────────▶ connected ──┐
///                          ▲   │ refused/failed       │ lost   │ stop(): DISCONNECT
///                          │   ▼                      ▼        ▼
///                          └── waiting (backoff) ◀────┘     stopped
/// ```
///
/// Design: one thread the client owns makes every libmosquitto call. Each connection attempt is a
/// fresh `mosquitto` instance (`mosquitto_new` … `mosquitto_destroy`), so nothing of an old
/// connection's internal queue survives into the next; once connected, the thread sleeps in
/// `poll` on the broker's socket and a wake-up pipe the publishing threads write to.
/// Messages wait in the ``MQTTOutbox`` and are written a small window at a time; a message leaves
/// the outbox only on its acknowledgement (`on_publish`), and after a reconnect the unacknowledged
/// ones are written again first, in order. So a broker outage loses nothing (within the outbox's
/// limits, which count what they drop), never reorders, and may duplicate the last few messages
/// before the outage, as QoS 1 allows.
///
/// Threading: every method is thread-safe and returns without waiting for the network
/// (`flush(timeout:)` and `stop()` wait, by design). Subscription and `onConnect` handlers run on
/// the client's thread: keep them short; they may call `publish`.
public final class MQTTClient: Sendable {
    private let options: MQTTClientOptions
    private let logger: Logger
    private let core: Core

    /// Checks the options (TLS files readable, client ID, keep-alive, limits) and opens the spool
    /// folder, taking over messages an earlier run left in it. Does not connect: call `start()`.
    /// The first client in a process calls `mosquitto_lib_init`.
    public init(options: MQTTClientOptions, logger: Logger) throws(MQTTError) {
        _ = libraryInitialised
        try Self.validate(options)
        self.options = options
        self.logger = logger
        core = Core(outbox: try MQTTOutbox(limits: options.outbox, logger: logger))
    }

    deinit { stop() }

    /// Checks `options` as `init` does (client ID, keep-alive, delays, credentials, TLS files
    /// and the broker's scheme, the will), without opening anything: for a configuration check
    /// that must refuse what starting the client would refuse.
    public static func validate(_ options: MQTTClientOptions) throws(MQTTError) {
        guard !options.clientID.isEmpty, options.clientID.utf8.count <= 65535 else {
            throw MQTTError(.invalidOptions, "the MQTT client ID must not be empty")
        }
        guard options.keepAlive == 0 || (5...65535).contains(options.keepAlive) else {
            throw MQTTError(.invalidOptions, "keepAlive must be 0 (off) or 5…65535 seconds, not \(options.keepAlive)")
        }
        guard options.reconnectDelay.minimum > 0, options.reconnectDelay.maximum >= options.reconnectDelay.minimum,
            options.connectTimeout > 0
        else {
            throw MQTTError(.invalidOptions, "reconnectDelay needs 0 < minimum ≤ maximum, and connectTimeout must be positive")
        }
        if options.password != nil && options.username == nil {
            throw MQTTError(.invalidOptions, "a password needs a username")
        }
        let tlsFiles = [("CA", options.caFile), ("client certificate", options.certFile), ("client key", options.keyFile)]
        if !options.broker.usesTLS, let named = tlsFiles.first(where: { $0.1 != nil }) {
            throw MQTTError(.invalidOptions, "a \(named.0) file is set but the broker URL is mqtt://; use mqtts:// for TLS")
        }
        if (options.certFile == nil) != (options.keyFile == nil) {
            throw MQTTError(.invalidOptions, "a client certificate needs its key, and a key its certificate (certFile and keyFile)")
        }
        for case (let what, let path?) in tlsFiles where access(path, R_OK) != 0 {
            throw MQTTError(.unreadableFile, "cannot read the \(what) file \(path): \(String(cString: strerror(errno))); check the path and that this user may read it")
        }
        if let will = options.will { try checkPublishable(will) }
    }

    /// Whether libmosquitto would accept the message for publishing (`mosquitto_pub_topic_check2`).
    static func checkPublishable(_ message: MQTTMessage) throws(MQTTError) {
        let topicValid = message.topic.withCString { mosquitto_pub_topic_check2($0, strlen($0)) } == MOSQ_ERR_SUCCESS.rawValue
        guard topicValid, !message.topic.isEmpty else {
            throw MQTTError(.invalidOptions, "'\(message.topic)' is not a topic to publish to (empty, or has + or #)")
        }
        guard (0...2).contains(message.qos) else {
            throw MQTTError(.invalidOptions, "QoS must be 0, 1 or 2, not \(message.qos)")
        }
        guard message.payload.count <= 268_435_455 - message.topic.utf8.count - 4 else {
            throw MQTTError(.invalidOptions, "a \(message.payload.count)-byte payload is larger than MQTT allows")
        }
    }

    // MARK: Public API

    /// Starts the client's thread, which connects in the background and reconnects with backoff
    /// (`reconnectDelay`) until `stop()`. Calling it again, or after `stop()`, does nothing.
    /// The corresponding C functions, on that thread, are `mosquitto_new`, `mosquitto_tls_set`,
    /// `mosquitto_will_set`, `mosquitto_connect`, `mosquitto_loop` until CONNACK, then
    /// `mosquitto_loop_read`/`_write`/`_misc`.
    public func start() {
        guard core.begin() else { return }
        let options = options
        let logger = logger
        let core = core
        // A thread stop() can join (`pthread_join`): a `Foundation.Thread` cannot be, and one
        // still exiting while `exit()` runs libmosquitto's and OpenSSL's destructors may crash.
        let body: @Sendable () -> Void = { MQTTClient.run(options: options, logger: logger, core: core) }
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let body = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body
            MQTTClient.nameCurrentThread("cvcam.mqtt")
            body()
            return nil
        }, context)
        if created == 0 {
            core.withLock { $0.joinableThread = thread }
        } else {
            // No thread to be had (the process is at its limit): one stop() cannot join, but
            // still waits for (`threadFinished`).
            Unmanaged<Box>.fromOpaque(context).release()
            Thread(block: body).start()
        }
    }

    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Names the calling thread for `ps` and `/proc/self/task/*/comm` (at most 15 bytes). As
    /// CaptureJobs' `JoinedThread` does: CaptureMQTT may import only libmosquitto and swift-log
    /// (`Tools/check-layers`).
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Queues a message and returns at once; the client's thread sends it when connected
    /// (`mosquitto_publish`), and it leaves the queue on the broker's acknowledgement.
    /// After `stop()` a message is refused (logged, counted in `rejected`): nothing would send it.
    /// An invalid message (topic with wildcards, QoS outside 0…2, too large) is logged as an error,
    /// counted in `statistics.rejected` and not queued. Called from an `onConnect` handler, the
    /// message belongs to that connection: it goes out before the backlog, and if the connection
    /// drops before its acknowledgement the handler publishes it again on the next one.
    public func publish(_ message: MQTTMessage, delivery: MQTTDelivery = .inOrder) {
        do throws(MQTTError) { try Self.checkPublishable(message) } catch {
            logger.error("MQTT publish refused: \(error)")
            core.withLock { $0.statistics.rejected += 1 }
            return
        }
        let accepted = core.withLock { state -> Bool in
            guard state.phase != .stopped else {
                state.statistics.rejected += 1
                return false
            }
            if state.runningConnectHandlers, pthread_equal(state.clientThread, pthread_self()) != 0 {
                state.connectMessages.append(message)
            } else {
                state.outbox.append(message, delivery: delivery)
            }
            return true
        }
        guard accepted else {
            logger.warning("MQTT publish on \(message.topic) after stop() refused")
            return
        }
        core.wake()
    }

    /// Subscribes to `filter` at QoS 1 now if connected and again on every connect; `handler` runs
    /// on the client's thread for each matching message (`mosquitto_subscribe`,
    /// `mosquitto_topic_matches_sub`). An invalid filter is logged as an error and ignored.
    public func subscribe(_ filter: String, handler: @escaping @Sendable (MQTTMessage) -> Void) {
        guard filter.withCString({ mosquitto_sub_topic_check2($0, strlen($0)) }) == MOSQ_ERR_SUCCESS.rawValue, !filter.isEmpty
        else {
            logger.error("MQTT subscribe refused: '\(filter)' is not a valid topic filter")
            return
        }
        core.withLock {
            $0.subscriptions.append((filter, handler))
            $0.newFilters.append(filter)
        }
        core.wake()
    }

    /// Adds a handler that runs on every (re)connect, after the subscriptions and before the
    /// backlog is sent: the place to publish availability ("online") and retained state.
    /// Handlers stay until the client is released: a handler that captures the client keeps it
    /// alive, so call `stop()` (which `cvcam serve` does anyway) rather than rely on `deinit`.
    public func onConnect(_ handler: @escaping @Sendable () -> Void) {
        core.withLock { $0.connectHandlers.append(handler) }
    }

    /// Waits until every queued message (memory and spool) is acknowledged, or `timeout` seconds
    /// pass; true when everything was delivered. Blocks the caller; does not connect by itself.
    public func flush(timeout: Double) -> Bool {
        core.wait(until: Date(timeIntervalSinceNow: timeout)) {
            $0.outbox.isEmpty && $0.connectMids.isEmpty && $0.connectMessages.isEmpty
        }
    }

    /// Ends the connection with a clean DISCONNECT (`mosquitto_disconnect`, then `mosquitto_destroy`;
    /// the broker then does not publish the will),
    /// stops the thread and writes what is still queued to the spool folder (without one, the
    /// undelivered messages are lost and a warning counts them). Blocks until done; idempotent.
    /// Called from a handler, it returns at once and the thread finishes after the handler.
    public func stop() {
        let (started, onClientThread) = core.withLock { state -> (Bool, Bool) in
            state.phase = .stopped
            return (state.threadStarted, state.threadStarted && pthread_equal(state.clientThread, pthread_self()) != 0)
        }
        core.wake()
        // Whoever takes the thread joins it (or, on the thread itself, detaches it).
        let joinable = core.withLock { state -> pthread_t? in
            defer { state.joinableThread = nil }
            return state.joinableThread
        }
        // From a handler (on the client's thread) the thread cannot wait for itself: it ends
        // after the handler returns, and writes the outbox to the spool then.
        if onClientThread {
            if let joinable { pthread_detach(joinable) }
            return
        }
        if started {
            _ = core.wait(until: nil) { $0.threadFinished }
        }
        // Finished its work; joined, it has also exited.
        if let joinable { pthread_join(joinable, nil) }
        let lost = core.withLock { state -> Int in
            guard !state.persisted else { return 0 }
            state.persisted = true
            return state.outbox.persist()
        }
        if lost > 0 {
            logger.warning("MQTT client stopped with \(lost) undelivered messages that no spool folder keeps")
        }
    }

    /// A snapshot of the counters. Thread-safe.
    public var statistics: MQTTStatistics {
        core.withLock { state in
            var statistics = state.statistics
            statistics.queued = state.outbox.queued + state.connectMessages.count
            statistics.spooled = state.outbox.spooled
            statistics.dropped = state.outbox.dropped
            return statistics
        }
    }

    /// Test hook: the connected loop's turns so far, and how many a wake-up began.
    var loopTurnsForTesting: (turns: Int, woken: Int) { core.withLock { ($0.loopTurns, $0.wokenTurns) } }

    /// Test hook: shuts the current connection's socket down without a DISCONNECT (as a crash or a
    /// cut cable would), so the broker publishes the will. The client then reconnects.
    func abortConnectionForTesting() {
        core.withLock { $0.abortRequested = true }
        core.wake()
    }
}

// MARK: - Shared state

extension MQTTClient {
    struct State {
        enum Phase { case idle, running, stopped }
        var phase = Phase.idle
        var outbox: MQTTOutbox
        var statistics = MQTTStatistics()
        var subscriptions: [(filter: String, handler: @Sendable (MQTTMessage) -> Void)] = []
        /// Filters added since the current connection subscribed.
        var newFilters: [String] = []
        var connectHandlers: [@Sendable () -> Void] = []
        var clientThread = pthread_t()
        /// The client's thread until a `stop()` takes it to join (nil when it could not be
        /// created as a joinable thread).
        var joinableThread: pthread_t?
        var runningConnectHandlers = false
        /// Published by `onConnect` handlers, to be written before the backlog.
        var connectMessages: [MQTTMessage] = []
        /// Their message IDs on the current connection, until acknowledged.
        var connectMids: Set<Int32> = []
        var abortRequested = false
        /// Turns of the connected loop, and those a wake-up began (tests: an idle connection
        /// sleeps, and a queued message wakes it).
        var loopTurns = 0
        var wokenTurns = 0
        var threadStarted = false
        var threadFinished = false
        var persisted = false
    }

    /// The state the caller's threads and the client's thread share, behind one condition lock.
    final class Core: @unchecked Sendable {
        // @unchecked: `state` is only read or written while `condition` is locked (withLock, wait).
        private let condition = NSCondition()
        private var state: State
        /// A non-blocking pipe whose read end the connected loop polls beside the broker's
        /// socket: other threads write a byte when they give the loop work (a message queued, a
        /// subscription, stop), so the loop sleeps until then instead of turning every few ms.
        private let wakeRead: Int32, wakeWrite: Int32

        init(outbox: MQTTOutbox) {
            state = State(outbox: outbox)
            var ends: [Int32] = [-1, -1]
            if pipe(&ends) == 0 {
                for end in ends {
                    _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                    _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                }
            } else {
                ends = [-1, -1]
            }
            (wakeRead, wakeWrite) = (ends[0], ends[1])
        }

        deinit {
            if wakeRead >= 0 { close(wakeRead) }
            if wakeWrite >= 0 { close(wakeWrite) }
        }

        /// The read end the connected loop polls (-1 if the pipe could not be made: the loop
        /// then turns on its poll timeout alone).
        var wakeDescriptor: Int32 { wakeRead }

        /// Wakes the connected loop. A full pipe already holds a wake-up, so a failed write is fine.
        func wake() {
            guard wakeWrite >= 0 else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(wakeWrite, &byte, 1)
        }

        /// Empties the pipe (the client's thread, after its poll saw it readable).
        func drainWakes() {
            guard wakeRead >= 0 else { return }
            var bytes = [UInt8](repeating: 0, count: 64)
            while Glibc.read(wakeRead, &bytes, bytes.count) > 0 {}
        }

        func withLock<T>(_ body: (inout State) -> T) -> T {
            condition.lock()
            defer {
                condition.broadcast()
                condition.unlock()
            }
            return body(&state)
        }

        /// Waits until `done` holds or `deadline` passes (nil: no deadline); returns `done`'s last answer.
        func wait(until deadline: Date?, _ done: (State) -> Bool) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            while !done(state) {
                // Foundation's wait(until: .distantFuture) traps converting it to a timespec.
                guard let deadline else {
                    condition.wait()
                    continue
                }
                if !condition.wait(until: deadline) { return done(state) }
            }
            return true
        }

        /// idle → running; false in any other phase.
        func begin() -> Bool {
            withLock { state in
                guard state.phase == .idle else { return false }
                state.phase = .running
                state.threadStarted = true
                return true
            }
        }

        var stopping: Bool { withLock { $0.phase != .running } }
    }
}
