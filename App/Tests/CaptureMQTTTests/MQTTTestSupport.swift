import CaptureMQTT
import Foundation
import Logging
import AppTestSupport

/// Collects every log line a Logger made with it writes, to check what the client logs (and that
/// no secret is among it).
struct CapturingLogHandler: LogHandler {
    final class Store: @unchecked Sendable {
        // @unchecked: `lines` is only touched under `lock`.
        private let lock = NSLock()
        private var lines: [String] = []
        func append(_ line: String) { lock.withLock { lines.append(line) } }
        var text: String { lock.withLock { lines.joined(separator: "\n") } }
    }

    let store: Store
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.append("\(event.level) \(event.message) \(metadata.merging(event.metadata ?? [:]) { $1 })")
    }

    /// A trace-level logger writing into a new store.
    static func logger() -> (Logger, Store) {
        let store = Store()
        return (Logger(label: "mqtt-test") { _ in CapturingLogHandler(store: store) }, store)
    }
}

/// Polls `condition` every 20 ms for up to `timeout` seconds.
@discardableResult
func waitUntil(_ timeout: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while !condition() {
        if Date() >= deadline { return false }
        usleep(20_000)
    }
    return true
}

/// Options for a client of the test broker: its user, fast reconnects, a unique client ID.
func clientOptions(
    _ broker: MosquittoTestBroker, password: String? = nil, limits: MQTTOutbox.Limits = .init(),
    will: MQTTMessage? = nil, clientID: String = "cvcam-test-\(UUID().uuidString.prefix(8))"
) throws -> MQTTClientOptions {
    MQTTClientOptions(
        broker: try MQTTBroker(url: broker.url), clientID: clientID, username: broker.username,
        password: MQTTSecret(password ?? broker.password), will: will,
        reconnectDelay: .init(minimum: 0.1, maximum: 0.5), connectTimeout: 5, outbox: limits)
}

/// A fresh temporary folder (for spools), removed by the caller.
func temporaryFolder() throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-mqtt-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.path
}

/// How a received sequence of numbered messages compares with what QoS 1 promises.
struct SequenceCheck: CustomStringConvertible {
    /// Values larger than the previous maximum + 1 (something skipped), or below it but never seen.
    var gaps: [Int] = []
    var repeats = 0
    var distinct = Set<Int>()

    /// Every new value must be exactly one more than the largest so far (no loss, no reordering);
    /// a value at or below it must be a repeat of one already received (QoS 1 resends the
    /// unacknowledged tail after a reconnect).
    init(_ values: [Int], from first: Int = 0) {
        var largest = first - 1
        for value in values {
            if value == largest + 1 {
                largest = value
            } else if value <= largest && distinct.contains(value) {
                repeats += 1
            } else {
                gaps.append(value)
                largest = max(largest, value)
            }
            distinct.insert(value)
        }
    }

    var description: String { "gaps or reorderings at \(gaps.prefix(20)), \(repeats) repeats, \(distinct.count) distinct" }
}

/// The integer payloads of "topic payload" lines on `topic`.
func numbers(_ lines: [String], topic: String) -> [Int] {
    lines.compactMap { line in
        guard line.hasPrefix(topic + " ") else { return nil }
        return Int(line.dropFirst(topic.count + 1))
    }
}
