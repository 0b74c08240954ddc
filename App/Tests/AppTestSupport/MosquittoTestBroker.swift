import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A real Mosquitto broker on loopback for the MQTT tests (Debian's `mosquitto`, which
/// Tools/setup installs). Depends on Foundation only, so the CLI tests can share this file.
///
/// It listens on a free port of 127.0.0.1, refuses anonymous clients (`password_file` made with
/// `mosquitto_passwd -b` for one user), keeps persistent sessions across `restart()`
/// (`persistence true` in its own temporary folder), and with `tls` also listens with a
/// certificate for 127.0.0.1/localhost signed by a throwaway CA that /usr/bin/openssl makes at
/// run time (`caFile`; no key is ever committed). Everything lives in one temporary folder,
/// removed when the broker is released.
package final class MosquittoTestBroker: @unchecked Sendable {
    // @unchecked: `process` is only touched by the test that owns the broker.
    package struct Unavailable: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    package static let executable = "/usr/sbin/mosquitto"
    package static let passwordTool = "/usr/bin/mosquitto_passwd"
    package static let subscribeTool = "/usr/bin/mosquitto_sub"
    package static let publishTool = "/usr/bin/mosquitto_pub"
    package static let openssl = "/usr/bin/openssl"

    package let folder: URL
    package let port: Int
    /// The TLS listener's port, when started with `tls`.
    package let tlsPort: Int?
    package let username: String
    package let password: String
    /// The address it listens on (127.0.0.1 unless a test puts it on another host's address).
    package let host: String
    /// What `mosquitto` is run under, e.g. `ip netns exec NAME` to start it in another network
    /// namespace (empty: run directly).
    package let launchPrefix: [String]
    private var process: Process?

    /// The PEM CA certificate that signed the TLS listener's certificate, when `tls`.
    package var caFile: String? { tlsPort == nil ? nil : folder.appendingPathComponent("ca.pem").path }
    /// `mqtt://127.0.0.1:PORT`.
    package var url: String { "mqtt://\(host):\(port)" }
    /// `mqtts://127.0.0.1:TLSPORT`, when `tls`.
    package var tlsURL: String? { tlsPort.map { "mqtts://127.0.0.1:\($0)" } }

    /// Why the broker cannot run here, or nil when it can.
    package static var missing: String? {
        let tools = [executable, passwordTool, subscribeTool, publishTool]
        if let absent = tools.first(where: { !FileManager.default.isExecutableFile(atPath: $0) }) {
            return "\(absent) is missing (run Tools/setup)"
        }
        return nil
    }

    /// Starts a broker, or returns nil after printing why when Mosquitto is not installed and the
    /// tests are not running under CI (under CI that throws: Tools/setup installs it).
    package static func start(
        tls: Bool = false, username: String = "cvcam", password: String = "pw-\(UUID().uuidString)",
        host: String = "127.0.0.1", port: Int? = nil, launchPrefix: [String] = []
    ) throws -> MosquittoTestBroker? {
        if let missing = missing ?? (tls && !FileManager.default.isExecutableFile(atPath: openssl) ? "\(openssl) is missing" : nil) {
            if ProcessInfo.processInfo.environment["CI"] != nil { throw Unavailable(description: missing) }
            print("skipping MQTT broker test: \(missing)")
            return nil
        }
        return try MosquittoTestBroker(
            tls: tls, username: username, password: password, host: host, port: port, launchPrefix: launchPrefix)
    }

    private init(tls: Bool, username: String, password: String, host: String, port: Int?, launchPrefix: [String]) throws {
        self.username = username
        self.password = password
        self.host = host
        self.launchPrefix = launchPrefix
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-mosquitto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        do {
            self.port = try port ?? Self.freePort()
            tlsPort = tls ? try Self.freePort() : nil
            try Self.run(Self.passwordTool, ["-c", "-b", path("passwords"), username, password])
            if tls { try makeCertificates() }
            try writeConfiguration()
            try launch()
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: folder)
    }

    private func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    /// A port the kernel just handed out on 127.0.0.1 (bind to 0, read it, close).
    package static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Unavailable(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw Unavailable(description: "cannot bind a loopback port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A CA and a server certificate for 127.0.0.1 and localhost signed by it, valid for a day.
    private func makeCertificates() throws {
        try Self.run(Self.openssl, [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=cvcam test CA",
            "-keyout", path("ca.key"), "-out", path("ca.pem"),
        ])
        try Self.run(Self.openssl, [
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", path("server.key"), "-out", path("server.csr"),
        ])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try Self.run(Self.openssl, [
            "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-days", "1", "-extfile", path("server.ext"), "-out", path("server.pem"),
        ])
    }

    private func writeConfiguration() throws {
        var lines = [
            "allow_anonymous false",
            "password_file \(path("passwords"))",
            "persistence true",
            "persistence_location \(folder.path)/",
            "max_queued_messages 100000",
            "listener \(port) \(host)",
        ]
        // Started as root, Mosquitto would drop to the `mosquitto` user, who cannot read this folder.
        if getuid() == 0 { lines.insert("user root", at: 0) }
        if let tlsPort {
            lines += [
                "listener \(tlsPort) 127.0.0.1",
                "cafile \(path("ca.pem"))", "certfile \(path("server.pem"))", "keyfile \(path("server.key"))",
            ]
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path("mosquitto.conf"), atomically: true, encoding: .utf8)
    }

    /// Starts /usr/sbin/mosquitto and waits (up to 10 s) until every listener accepts connections.
    private func launch() throws {
        let process = Process()
        if launchPrefix.isEmpty {
            process.executableURL = URL(fileURLWithPath: Self.executable)
            process.arguments = ["-c", path("mosquitto.conf")]
        } else {
            process.executableURL = URL(fileURLWithPath: launchPrefix[0])
            process.arguments = Array(launchPrefix.dropFirst()) + [Self.executable, "-c", path("mosquitto.conf")]
        }
        if !FileManager.default.fileExists(atPath: path("mosquitto.log")) {
            guard FileManager.default.createFile(atPath: path("mosquitto.log"), contents: nil) else {
                throw Unavailable(description: "cannot create \(path("mosquitto.log"))")
            }
        }
        let log = try FileHandle(forWritingTo: folder.appendingPathComponent("mosquitto.log"))
        log.seekToEndOfFile()
        process.standardOutput = log
        process.standardError = log
        try Self.spawn(process)
        self.process = process
        let deadline = Date(timeIntervalSinceNow: 10)
        for port in [port] + (tlsPort.map { [$0] } ?? []) {
            while !Self.accepts(port, host: host) {
                guard process.isRunning, Date() < deadline else {
                    let said = (try? String(contentsOfFile: path("mosquitto.log"), encoding: .utf8)) ?? ""
                    kill()
                    throw Unavailable(description: "mosquitto did not start listening on \(port): \(said)")
                }
                usleep(20_000)
            }
        }
    }

    /// `process.run()` with SIGTERM, SIGINT and SIGHUP unblocked on this thread while it spawns:
    /// the test runner blocks them, a child inherits the mask, and Mosquitto never unblocks them,
    /// so `terminate()` would not reach it (and it could not save its sessions).
    package static func spawn(_ process: Process) throws {
        var unblock = sigset_t()
        var previous = sigset_t()
        sigemptyset(&unblock)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&unblock, signal) }
        pthread_sigmask(SIG_UNBLOCK, &unblock, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try process.run()
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace` seconds; waits for the exit.
    package static func end(_ process: Process, grace: Double = 10) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date(timeIntervalSinceNow: grace)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            while process.isRunning { usleep(10_000) }
        }
    }

    private static func accepts(_ port: Int, host: String) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// SIGTERM, and waits: the broker saves its persistent sessions and queued messages.
    package func stop() {
        guard let process else { return }
        Self.end(process)
        self.process = nil
    }

    /// Starts the broker again on the same ports, with the sessions it saved.
    package func restart() throws {
        stop()
        try launch()
    }

    /// SIGKILL, and waits: nothing is saved.
    package func kill() {
        guard let process else { return }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        while process.isRunning { usleep(10_000) }
        self.process = nil
    }

    /// The broker's log so far, for failure messages.
    package var log: String { (try? String(contentsOfFile: path("mosquitto.log"), encoding: .utf8)) ?? "" }

    /// `mosquitto_pub` of one message as the broker's user; true when it was accepted.
    @discardableResult
    package func publish(_ topic: String, _ payload: String, retain: Bool = false) -> Bool {
        (try? Self.run(Self.publishTool, credentials + ["-t", topic, "-m", payload, "-q", "1"] + (retain ? ["-r"] : []))) != nil
    }

    /// The retained message on `topic`, or nil when there is none (one `mosquitto_sub -C 1 -W 2`).
    package func retained(_ topic: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.subscribeTool)
        process.arguments = credentials + ["-t", topic, "-C", "1", "-W", "2", "--retained-only"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? text.trimmingCharacters(in: .newlines) : nil
    }

    package var credentials: [String] { ["-h", host, "-p", String(port), "-u", username, "-P", password] }

    @discardableResult
    package static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Unavailable(description: "\(tool) \(arguments.first ?? "") failed (\(process.terminationStatus)): \(said)")
        }
        return said
    }

    /// A `mosquitto_sub` on `filters` (QoS 1) that collects "topic payload" lines. With a
    /// `sessionID` it keeps a persistent session (`-c -i ID`), so the broker queues messages for
    /// it while it is away, and reconnects by itself after a broker restart. Returns once the
    /// subscription is live (a probe message came back).
    package func subscriber(_ filters: [String], sessionID: String? = nil) throws -> Subscriber {
        try Subscriber(broker: self, filters: filters, sessionID: sessionID)
    }

    package final class Subscriber: @unchecked Sendable {
        // @unchecked: `buffer` and `lines` are guarded by `condition`; `process` is only touched by the test.
        private let process = Process()
        private let condition = NSCondition()
        private var buffer = ""
        private var received: [String] = []
        private let probe: String

        fileprivate init(broker: MosquittoTestBroker, filters: [String], sessionID: String?) throws {
            probe = "probe/\(UUID().uuidString)"
            process.executableURL = URL(fileURLWithPath: MosquittoTestBroker.subscribeTool)
            process.arguments = broker.credentials + (filters + [probe]).flatMap { ["-t", $0] } + ["-q", "1", "-F", "%t %p"]
                + (sessionID.map { ["-c", "-i", $0] } ?? [])
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            out.fileHandleForReading.readabilityHandler = { [weak self] handle in
                guard let self else { return }
                let chunk = handle.availableData
                self.condition.lock()
                self.buffer += String(decoding: chunk, as: UTF8.self)
                while let newline = self.buffer.firstIndex(of: "\n") {
                    self.received.append(String(self.buffer[..<newline]))
                    self.buffer.removeSubrange(...newline)
                }
                self.condition.broadcast()
                self.condition.unlock()
            }
            try MosquittoTestBroker.spawn(process)
            let deadline = Date(timeIntervalSinceNow: 10)
            while !waitAll(timeout: 0.2, for: { $0.contains { $0.hasPrefix(self.probe) } }) {
                guard Date() < deadline, process.isRunning else {
                    stop()
                    throw Unavailable(description: "mosquitto_sub did not subscribe: \(broker.log)")
                }
                broker.publish(probe, "ready")
            }
        }

        deinit { stop() }

        /// The "topic payload" lines received so far (without the readiness probes).
        package var lines: [String] {
            condition.lock()
            defer { condition.unlock() }
            return received.filter { !$0.hasPrefix(probe) }
        }

        /// Waits up to `timeout` seconds until `done(lines)` holds; returns whether it did.
        @discardableResult
        package func wait(timeout: Double, for done: ([String]) -> Bool) -> Bool {
            waitAll(timeout: timeout) { all in done(all.filter { !$0.hasPrefix(self.probe) }) }
        }

        /// `wait`, over every line including the probes.
        private func waitAll(timeout: Double, for done: ([String]) -> Bool) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            condition.lock()
            defer { condition.unlock() }
            while !done(received) {
                if !condition.wait(until: deadline) { return done(received) }
            }
            return true
        }

        package func stop() { MosquittoTestBroker.end(process, grace: 5) }
    }
}
