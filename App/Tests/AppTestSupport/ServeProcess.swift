import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// A running `cvcam serve`.
package final class ServeProcess: @unchecked Sendable {
    // @unchecked: the process and pipes are set once; the collected text is locked.
    package let process: Process
    package let err: Pipe
    private let errText = LockedText()
    private let outText = LockedText()

    /// `cvcam serve --config config arguments…`, run under `prefix` when one is given (the first
    /// word the executable, e.g. `TestHosts.Host.command`'s `ip netns exec …`).
    package init(config: String, arguments: [String] = [], environment: [String: String] = [:], prefix: [String] = []) throws {
        let serveArguments = ["serve", "--config", config] + arguments
        let (process, out, err) =
            prefix.isEmpty
            ? CLI.process(serveArguments, environment: environment)
            : CLI.process(
                Array(prefix.dropFirst()) + [CLI.binary.path] + serveArguments, environment: environment,
                executable: URL(fileURLWithPath: prefix[0]))
        self.process = process
        self.err = err
        out.fileHandleForReading.readabilityHandler = { [outText] handle in
            outText.append(String(decoding: handle.availableData, as: UTF8.self))
        }
        err.fileHandleForReading.readabilityHandler = { [errText] handle in
            errText.append(String(decoding: handle.availableData, as: UTF8.self))
        }
        try MosquittoTestBroker.spawn(process)
    }

    package var stderr: String { errText.text }
    package var stdout: String { outText.text }

    package func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Waits until stderr holds `text`: a line the daemon writes beside an MQTT event may reach
    /// the pipe's reader after a subscriber has the event. False when it did not within `seconds`.
    package func waitForStderr(containing text: String, _ seconds: Double = 30) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while !stderr.contains(text) && Date() < end { Thread.sleep(forTimeInterval: 0.05) }
        return stderr.contains(text)
    }

    /// Waits for the exit; nil when it did not exit within `seconds`.
    package func waitForExit(_ seconds: Double) -> Int32? {
        let end = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < end { Thread.sleep(forTimeInterval: 0.05) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

extension ServeProcess {
/// A new temporary folder for a daemon's files.
package static func folder() throws -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("serve-broker-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir
}

/// The `mqtt:` section for `broker` (TLS when it has a TLS listener), the password in a file.
package static func mqttSection(_ broker: MosquittoTestBroker, dir: URL, extra: String = "") throws -> String {
    let passwordFile = dir.appendingPathComponent("password")
    try broker.password.write(to: passwordFile, atomically: true, encoding: .utf8)
    let url = broker.tlsURL ?? broker.url
    return """
        mqtt:
          broker: \(url)
          clientID: serve-test-\(UUID().uuidString.prefix(8))
          username: \(broker.username)
          passwordFile: \(passwordFile.path)
        \(broker.caFile.map { "  caFile: \($0)\n" } ?? "")  keepAlive: 5
        \(extra)
        """
}
}

/// Text collected from a pipe's handler thread.
package final class LockedText: Sendable {
    package init() {}

    private let value = Mutex("")
    package func append(_ more: String) { value.withLock { $0 += more } }
    package var text: String { value.withLock { $0 } }
}
