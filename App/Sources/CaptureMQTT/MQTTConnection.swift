import CMosquitto
import Foundation
import Glibc
import Logging

// The client's thread: connection attempts with backoff, each on a fresh `mosquitto` instance.
extension MQTTClient {
    /// The body of the client's thread, from `start()` until `stop()`.
    static func run(options: MQTTClientOptions, logger: Logger, core: Core) {
        core.withLock { $0.clientThread = pthread_self() }
        let address = options.broker.address
        var delay = options.reconnectDelay.minimum
        var everConnected = false
        var lastFailure: String?
        let drops = DropReporter(logger: logger)
        var takeover = MQTTTakeoverDetector()
        while !core.stopping {
            let connection = Connection(options: options, logger: logger, core: core, drops: drops)
            switch connection.open() {
            case .stopped:
                connection.close(clean: false)
            case .failed(let error):
                connection.close(clean: false)
                core.withLock { $0.statistics.lastError = error }
                // The same failure again and again is logged once, then at debug level.
                let level: Logger.Level = error.message == lastFailure ? .debug : .warning
                logger.log(level: level, "MQTT cannot connect to \(address): \(error) (retrying in \(delay) s)")
                lastFailure = error.message
                pause(delay, core: core, drops: drops)
                delay = min(delay * 2, options.reconnectDelay.maximum)
            case .connected:
                lastFailure = nil
                core.withLock {
                    if everConnected { $0.statistics.reconnects += 1 }
                    $0.statistics.connected = true
                }
                everConnected = true
                logger.info("MQTT connected to \(address) as \(options.clientID)")
                let connectedAt = monotonicSeconds()
                connection.whileUp = {
                    // A connection that holds ends a suspected takeover loop.
                    if takeover.connectionIsUp(for: monotonicSeconds() - connectedAt) {
                        core.withLock { $0.statistics.takeoverSuspected = false }
                        // A warning, as the error it ends: both show in the daemon's default log.
                        logger.warning("MQTT connection to \(address) as \(options.clientID) has held for \(Int(takeover.stableAfter)) s: the client ID conflict is over")
                    }
                }
                if let lost = connection.serve() {
                    let lasted = monotonicSeconds() - connectedAt
                    core.withLock { state in
                        state.statistics.connected = false
                        state.statistics.lastError = lost
                        state.outbox.connectionLost()
                        state.connectMids.removeAll()
                        state.connectMessages.removeAll()
                    }
                    connection.close(clean: false)
                    // A connection that ends right after it was made is not a reason to reconnect
                    // at once: back off as after a failed attempt (two clients with one ID would
                    // otherwise take the connection from each other twice a second).
                    if lasted > takeover.shortConnection { delay = options.reconnectDelay.minimum }
                    if case .takeoverSuspected(let count) = takeover.connectionEnded(after: lasted, at: monotonicSeconds()) {
                        core.withLock { $0.statistics.takeoverSuspected = true }
                        logger.error(
                            "MQTT connection to \(address) was closed by the broker \(count) times within \(Int(takeover.shortConnection)) s of connecting (in \(Int(takeover.window)) s): another client probably uses the client ID \(options.clientID), and the broker drops the older connection each time the other connects. Give each client its own ID (cvcam serve: mqtt.clientID, or leave it out for one unique to this host, topic prefix and file).")
                    } else {
                        logger.notice("MQTT connection to \(address) lost: \(lost); reconnecting in \(delay) s")
                    }
                    pause(delay, core: core, drops: drops)
                    if lasted <= takeover.shortConnection { delay = min(delay * 2, options.reconnectDelay.maximum) }
                } else {
                    connection.close(clean: true)
                    core.withLock { $0.statistics.connected = false }
                    logger.info("MQTT disconnected from \(address)")
                }
            }
        }
        drops.report(core: core, force: true)
        // The thread writes the outbox to the spool itself (stop() may have been called from a
        // handler, and then nobody waits for it), and says what was lost before it reports done.
        let lost = core.withLock { state -> Int in
            state.statistics.connected = false
            guard state.phase == .stopped, !state.persisted else { return 0 }
            state.persisted = true
            return state.outbox.persist()
        }
        if lost > 0 {
            logger.warning("MQTT client stopped with \(lost) undelivered messages that no spool folder keeps")
        }
        core.withLock { $0.threadFinished = true }
    }

    /// Seconds of CLOCK_MONOTONIC, for how long connections last.
    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Sleeps `seconds` between attempts; `stop()` ends it early.
    private static func pause(_ seconds: Double, core: Core, drops: DropReporter) {
        let end = Date(timeIntervalSinceNow: seconds)
        while Date() < end {
            if core.wait(until: min(end, Date(timeIntervalSinceNow: 1)), { $0.phase != .running }) { return }
            drops.report(core: core)
        }
    }

    /// Logs the outbox's drops as one warning per second at most, with the count.
    final class DropReporter {
        private let logger: Logger
        private var last = Date.distantPast
        init(logger: Logger) { self.logger = logger }

        func report(core: Core, force: Bool = false) {
            guard force || Date().timeIntervalSince(last) >= 1 else { return }
            last = Date()
            let (new, total, limits) = core.withLock { ($0.outbox.takeDropReport(), $0.outbox.dropped, $0.outbox.limits) }
            if new > 0 {
                logger.warning("MQTT outbox full: dropped the \(new) oldest messages (\(total) in all); \(Self.advice(limits))")
            }
        }

        /// What would drop fewer messages: without a spool folder, the limits or a spool folder;
        /// with one, it could not take them either (full, or failing: its errors are logged).
        static func advice(_ limits: MQTTOutbox.Limits) -> String {
            guard let folder = limits.spoolDirectory else {
                return "raise the queue limits or set a spool folder"
            }
            return "the spool folder \(folder) could not take them either (it holds at most maxSpoolBytes, \(limits.maxSpoolBytes) bytes)"
        }
    }

    /// One connection attempt and, when it succeeds, the connection: one `mosquitto` instance.
    /// Used only on the client's thread; libmosquitto's callbacks find it through their userdata.
    final class Connection {
        enum Opening {
            case connected
            case failed(MQTTError)
            case stopped
        }

        let options: MQTTClientOptions
        let logger: Logger
        let core: Core
        let drops: DropReporter
        private var mosq: OpaquePointer?
        /// The CONNACK code, once it arrived.
        fileprivate var connack: Int32?
        fileprivate var disconnected = false
        /// Outbox message per message ID in flight on this connection.
        fileprivate var inFlight: [Int32: UInt64] = [:]
        /// IDs libmosquitto reported written (QoS 0) before `mosquitto_publish` returned them.
        fileprivate var reportedEarly: Set<Int32> = []
        /// libmosquitto's error and warning log lines (OpenSSL's reasons for a failed handshake).
        fileprivate var libraryErrors: [String] = []
        /// Called on every turn of the connected loop (the client's thread).
        var whileUp: (() -> Void)?

        init(options: MQTTClientOptions, logger: Logger, core: Core, drops: DropReporter) {
            self.options = options
            self.logger = logger
            self.core = core
            self.drops = drops
        }

        private var address: String { options.broker.address }

        /// `mosquitto_new`, the settings, `mosquitto_connect`, then `mosquitto_loop` until CONNACK.
        func open() -> Opening {
            guard let mosq = mosquitto_new(options.clientID, options.cleanSession, Unmanaged.passUnretained(self).toOpaque())
            else {
                return .failed(MQTTError(.library, "mosquitto_new failed: \(String(cString: strerror(errno)))"))
            }
            self.mosq = mosq
            mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
            installCallbacks(mosq)
            if let username = options.username {
                let rc = mosquitto_username_pw_set(mosq, username, options.password?.value)
                guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                    return .failed(MQTTError(.invalidOptions, code: rc, "the username or password is not usable: \(MQTTError.libraryReason(rc))"))
                }
            }
            if let will = options.will {
                let rc = will.payload.withUnsafeBytes {
                    mosquitto_will_set(mosq, will.topic, Int32($0.count), $0.baseAddress, Int32(will.qos), will.retain)
                }
                guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                    return .failed(MQTTError(.invalidOptions, code: rc, "the will message is not usable: \(MQTTError.libraryReason(rc))"))
                }
            }
            if options.broker.usesTLS {
                let rc = mosquitto_tls_set(
                    mosq, options.caFile, options.caFile == nil ? "/etc/ssl/certs" : nil, options.certFile, options.keyFile, nil)
                guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                    return .failed(MQTTError(.tls, code: rc, "cannot use the TLS certificate files: \(MQTTError.libraryReason(rc)); check caFile, certFile and keyFile"))
                }
            }
            let rc = mosquitto_connect(mosq, options.broker.host, Int32(options.broker.port), Int32(options.keepAlive))
            let savedErrno = errno
            if rc != MOSQ_ERR_SUCCESS.rawValue { return .failed(connectFailure(rc, errno: savedErrno)) }
            let deadline = Date(timeIntervalSinceNow: options.connectTimeout)
            while connack == nil {
                if core.stopping { return .stopped }
                guard Date() < deadline else {
                    return .failed(MQTTError(.timeout, "no CONNACK from \(address) within \(options.connectTimeout) s; is an MQTT broker listening there?"))
                }
                let rc = mosquitto_loop(mosq, 50, 1)
                let savedErrno = errno
                if rc != MOSQ_ERR_SUCCESS.rawValue && connack == nil { return .failed(connectFailure(rc, errno: savedErrno)) }
            }
            switch connack! {
            case 0:
                return .connected
            case 4, 5:
                return .failed(MQTTError(.notAuthorised, code: connack, "\(address) refused the connection, not authorised (\(String(cString: mosquitto_connack_string(connack!)))): check username/password"))
            case let code:
                return .failed(MQTTError(.refused, code: code, "\(address) refused the connection: \(String(cString: mosquitto_connack_string(code)))"))
            }
        }

        /// What a failed `mosquitto_connect` or `mosquitto_loop` before CONNACK means for the operator.
        private func connectFailure(_ rc: Int32, errno savedErrno: Int32) -> MQTTError {
            let reason = MQTTError.libraryReason(rc, errno: savedErrno)
            if options.broker.usesTLS && (rc == MOSQ_ERR_TLS.rawValue || !libraryErrors.isEmpty) {
                let detail = libraryErrors.last ?? reason
                return MQTTError(.tls, code: rc, "TLS connection to \(address) failed (\(detail)): check that caFile holds the CA that signed the broker's certificate, and that the certificate names \(options.broker.host)")
            }
            if rc == MOSQ_ERR_ERRNO.rawValue && savedErrno == ECONNREFUSED {
                return MQTTError(.connect, code: rc, "connection to \(address) refused: is the broker running and listening on that port?")
            }
            if rc == MOSQ_ERR_EAI.rawValue {
                return MQTTError(.connect, code: rc, "cannot resolve the broker host \(options.broker.host): check the name")
            }
            if connack == nil && (rc == MOSQ_ERR_CONN_LOST.rawValue || rc == MOSQ_ERR_NO_CONN.rawValue) {
                return MQTTError(.connect, code: rc, "\(address) closed the connection before answering CONNECT (\(reason)); is it an MQTT broker, and does it expect TLS (mqtts://)?")
            }
            return MQTTError(.connect, code: rc, "cannot connect to \(address): \(reason)")
        }

        /// The connected phase: subscribe, run the `onConnect` handlers and write what they
        /// published, then send the backlog and keep the loop turning. Returns why the connection
        /// ended, or nil when `stop()` asked.
        func serve() -> MQTTError? {
            guard let mosq else { return nil }
            let (filters, handlers) = core.withLock { state in
                state.newFilters.removeAll()
                state.runningConnectHandlers = true
                return (state.subscriptions.map(\.filter), state.connectHandlers)
            }
            for filter in Set(filters).sorted() { mosquitto_subscribe(mosq, nil, filter, 1) }
            for handler in handlers { handler() }
            let first = core.withLock { state in
                state.runningConnectHandlers = false
                defer { state.connectMessages.removeAll() }
                return state.connectMessages
            }
            for message in first {
                switch write(message) {
                case .written(let mid) where message.qos > 0: core.withLock { _ = $0.connectMids.insert(mid) }
                case .written: break
                case .lost(let error): return error
                case .refused(let error): logger.error("MQTT message on \(message.topic) not sent: \(error)")
                }
            }
            while true {
                let (stopping, abort, filters) = core.withLock { state in
                    defer {
                        state.abortRequested = false
                        state.newFilters.removeAll()
                    }
                    return (state.phase != .running, state.abortRequested, state.newFilters)
                }
                if stopping { return nil }
                if abort { shutdown(mosquitto_socket(mosq), Int32(SHUT_RDWR)) }
                for filter in filters { mosquitto_subscribe(mosq, nil, filter, 1) }
                let batch = core.withLock { state in
                    var batch: [MQTTOutbox.Entry] = []
                    while let entry = state.outbox.nextToSend() { batch.append(entry) }
                    return batch
                }
                for entry in batch {
                    switch write(entry.message) {
                    case .written(let mid):
                        if entry.message.qos == 0 {
                            acknowledged(entry.seq)
                        } else {
                            inFlight[mid] = entry.seq
                        }
                    case .lost(let error):
                        return error
                    case .refused(let error):
                        logger.error("MQTT message on \(entry.message.topic) dropped: \(error)")
                        core.withLock { state in
                            state.outbox.acknowledge(entry.seq)
                            state.statistics.rejected += 1
                        }
                    }
                }
                let rc = turn(mosq)
                let savedErrno = errno
                if rc != MOSQ_ERR_SUCCESS.rawValue {
                    return MQTTError(.connectionLost, code: rc, MQTTError.libraryReason(rc, errno: savedErrno))
                }
                drops.report(core: core)
                whileUp?()
            }
        }

        /// One turn of the connected loop: waits up to a second for the broker's socket or a
        /// wake-up from another thread (`Core.wake`), then reads, writes what is pending and keeps
        /// the connection alive (`poll`, `mosquitto_loop_read`, `mosquitto_loop_write`,
        /// `mosquitto_loop_misc`, as `mosquitto_loop` does inside). `mosquitto_loop` itself
        /// cannot be woken by a message queued on another thread, so it had to turn every 10 ms.
        private func turn(_ mosq: OpaquePointer) -> Int32 {
            let socket = mosquitto_socket(mosq)
            guard socket >= 0 else { return MOSQ_ERR_NO_CONN.rawValue }
            let readable = Int16(POLLIN), writable = Int16(POLLOUT)
            var fds = [
                pollfd(fd: socket, events: readable | (mosquitto_want_write(mosq) ? writable : 0), revents: 0),
                pollfd(fd: core.wakeDescriptor, events: readable, revents: 0),
            ]
            let count = poll(&fds, nfds_t(fds.count), 1000)
            if count < 0 { return errno == EINTR ? MOSQ_ERR_SUCCESS.rawValue : MOSQ_ERR_ERRNO.rawValue }
            let woken = fds[1].revents & readable != 0
            if woken { core.drainWakes() }
            core.withLock { state in
                state.loopTurns += 1
                if woken { state.wokenTurns += 1 }
            }
            if fds[0].revents & (readable | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                let rc = mosquitto_loop_read(mosq, 1)
                if rc != MOSQ_ERR_SUCCESS.rawValue { return rc }
            }
            if mosquitto_want_write(mosq) {
                let rc = mosquitto_loop_write(mosq, 1)
                if rc != MOSQ_ERR_SUCCESS.rawValue { return rc }
            }
            return mosquitto_loop_misc(mosq)
        }

        enum Written {
            case written(Int32)
            case lost(MQTTError)
            case refused(MQTTError)
        }

        /// `mosquitto_publish`; QoS 0 messages count as delivered once written.
        private func write(_ message: MQTTMessage) -> Written {
            var mid: Int32 = 0
            let rc = message.payload.withUnsafeBytes {
                mosquitto_publish(mosq, &mid, message.topic, Int32($0.count), $0.baseAddress, Int32(message.qos), message.retain)
            }
            let savedErrno = errno
            reportedEarly.remove(mid)
            switch rc {
            case MOSQ_ERR_SUCCESS.rawValue:
                return .written(mid)
            case MOSQ_ERR_INVAL.rawValue, MOSQ_ERR_PAYLOAD_SIZE.rawValue, MOSQ_ERR_MALFORMED_UTF8.rawValue,
                MOSQ_ERR_OVERSIZE_PACKET.rawValue, MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue:
                return .refused(MQTTError(.library, code: rc, MQTTError.libraryReason(rc, errno: savedErrno)))
            default:
                return .lost(MQTTError(.connectionLost, code: rc, MQTTError.libraryReason(rc, errno: savedErrno)))
            }
        }

        fileprivate func acknowledged(_ seq: UInt64) {
            core.withLock { state in
                if state.outbox.acknowledge(seq) { state.statistics.delivered += 1 }
            }
        }

        /// Called from `on_publish`: the broker acknowledged message `mid` (QoS 0: it was written).
        fileprivate func published(_ mid: Int32) {
            if let seq = inFlight.removeValue(forKey: mid) {
                acknowledged(seq)
            } else {
                let known = core.withLock { state in
                    guard state.connectMids.remove(mid) != nil else { return false }
                    state.statistics.delivered += 1
                    return true
                }
                if !known { reportedEarly.insert(mid) }
            }
        }

        /// Called from `on_message`: hands a copy to every handler whose filter matches.
        fileprivate func received(_ raw: UnsafePointer<mosquitto_message>) {
            let topic = String(cString: raw.pointee.topic)
            let payload = raw.pointee.payloadlen > 0 && raw.pointee.payload != nil
                ? Array(UnsafeRawBufferPointer(start: raw.pointee.payload, count: Int(raw.pointee.payloadlen))) : []
            let message = MQTTMessage(topic: topic, payload: payload, qos: Int(raw.pointee.qos), retain: raw.pointee.retain)
            let subscriptions = core.withLock { $0.subscriptions }
            for (filter, handler) in subscriptions {
                var matches = false
                if mosquitto_topic_matches_sub(filter, topic, &matches) == MOSQ_ERR_SUCCESS.rawValue && matches {
                    handler(message)
                }
            }
        }

        fileprivate func logged(level: Int32, _ text: String) {
            if level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 { libraryErrors.append(text) }
            logger.trace("libmosquitto: \(text)")
        }

        /// With `clean`, `mosquitto_disconnect` (the broker then discards the will) and a few loop
        /// turns to send it; then `mosquitto_destroy`.
        func close(clean: Bool) {
            guard let mosq else { return }
            if clean && !disconnected && mosquitto_disconnect(mosq) == MOSQ_ERR_SUCCESS.rawValue {
                let deadline = Date(timeIntervalSinceNow: 1)
                while !disconnected && Date() < deadline && mosquitto_loop(mosq, 20, 1) == MOSQ_ERR_SUCCESS.rawValue {}
            }
            mosquitto_destroy(mosq)
            self.mosq = nil
        }

        private func installCallbacks(_ mosq: OpaquePointer) {
            mosquitto_connect_callback_set(mosq) { _, context, rc in
                Connection.from(context).connack = rc
            }
            mosquitto_disconnect_callback_set(mosq) { _, context, _ in
                Connection.from(context).disconnected = true
            }
            mosquitto_publish_callback_set(mosq) { _, context, mid in
                Connection.from(context).published(mid)
            }
            mosquitto_message_callback_set(mosq) { _, context, message in
                if let message { Connection.from(context).received(message) }
            }
            mosquitto_log_callback_set(mosq) { _, context, level, text in
                if let text { Connection.from(context).logged(level: level, String(cString: text)) }
            }
        }

        private static func from(_ context: UnsafeMutableRawPointer?) -> Connection {
            Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
        }
    }
}
