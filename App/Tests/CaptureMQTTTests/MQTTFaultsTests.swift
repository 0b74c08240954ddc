import Foundation
import Logging
import Testing

@testable import CaptureMQTT
import AppTestSupport

/// Faults of a week in the field (issue #30): a spool whose deliveries must not come back after
/// a crash or a read-only file system, and two clients fighting over one client ID.
@Suite(.serialized) struct MQTTFaultsTests {
    private func message(_ n: Int) -> MQTTMessage { MQTTMessage(topic: "t", text: String(n)) }
    private func number(_ entry: MQTTOutbox.Entry) -> Int { Int(String(decoding: entry.message.payload, as: UTF8.self))! }
    private func spoolFiles(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".spool") }.sorted()
    }

    /// Sends and acknowledges up to `count` messages (all when nil); returns their numbers.
    private func deliver(_ outbox: MQTTOutbox, _ count: Int? = nil) -> [Int] {
        var out: [Int] = []
        while count.map({ out.count < $0 }) ?? true, let entry = outbox.nextToSend() {
            out.append(number(entry))
            #expect(outbox.acknowledge(entry.seq))
        }
        return out
    }

    // MARK: Item 8: acknowledgements are durable; a read-only spool falls back to memory

    /// A daemon killed (no `persist`) while it replays a spool file: the next one sends only what
    /// the broker had not acknowledged.
    @Test func whatTheBrokerAcknowledgedIsNotSentAgainAfterAKill() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let limits = MQTTOutbox.Limits(maxMessages: 8, spoolDirectory: folder)
        var first: [Int] = []
        do {
            let outbox = try MQTTOutbox(limits: limits, logger: Logger(label: "t"))
            for n in 0..<100 { outbox.append(message(n), delivery: .inOrder) }
            #expect(outbox.spooled > 50)
            first = deliver(outbox, 37)
            // Killed here: nothing persisted, the outbox simply goes away.
        }
        #expect(first == Array(0..<37))
        let next = try MQTTOutbox(limits: limits, logger: Logger(label: "t"))
        let second = deliver(next)
        #expect(Set(first).isDisjoint(with: second), "sent again: \(Set(first).intersection(second).sorted())")
        // What was spooled and not acknowledged comes, in order (the memory tail died with the process).
        #expect(second == second.sorted() && second.first == 37)
        #expect(try spoolFiles(folder).isEmpty)
    }

    /// A spool folder on a read-only file system from the start: no error, one warning, memory
    /// only within the limits, and its files left alone.
    @Test func aReadOnlySpoolAtStartIsLeftAloneWithOneWarning() throws {
        guard let disk = TemporaryFileSystem.make(megabytes: 8) else { return }
        let folder = disk.path + "/spool"
        let limits = MQTTOutbox.Limits(maxMessages: 8, spoolDirectory: folder)
        do {
            let outbox = try MQTTOutbox(limits: limits, logger: Logger(label: "t"))
            for n in 0..<40 { outbox.append(message(n), delivery: .inOrder) }
            #expect(outbox.persist() == 0)
        }
        let before = try spoolFiles(folder)
        #expect(!before.isEmpty)
        #expect(disk.remount(readOnly: true) == nil)
        let (logger, log) = CapturingLogHandler.logger()
        let outbox = try MQTTOutbox(limits: limits, logger: logger)
        #expect(outbox.spooled == 0 && outbox.activeSpool == nil)
        for n in 100..<200 { outbox.append(message(n), delivery: .inOrder) }
        #expect(outbox.dropped == 92)
        #expect(deliver(outbox) == Array(192..<200))
        #expect(outbox.persist() == 0)
        let warnings = log.text.split(separator: "\n").filter { $0.hasPrefix("warning") && $0.contains(folder) }
        #expect(warnings.count == 1, "\(log.text)")
        #expect(!log.text.contains("error"), "\(log.text)")
        #expect(try spoolFiles(folder) == before)
    }

    /// A spool folder that turns read-only while messages are replayed (and spooled): one
    /// warning, memory only from then on, and after it is writable again the messages marked
    /// delivered before are not sent again.
    @Test func aSpoolThatTurnsReadOnlyWarnsOnceAndNeverResendsWhatItMarked() throws {
        guard let disk = TemporaryFileSystem.make(megabytes: 8) else { return }
        let folder = disk.path + "/spool"
        let limits = MQTTOutbox.Limits(maxMessages: 8, spoolDirectory: folder)
        let (logger, log) = CapturingLogHandler.logger()
        var delivered: [Int] = []
        do {
            let outbox = try MQTTOutbox(limits: limits, logger: logger)
            for n in 0..<100 { outbox.append(message(n), delivery: .inOrder) }
            delivered = deliver(outbox, 20)
            #expect(disk.remount(readOnly: true) == nil)
            // Marking the next acknowledgement fails: memory only, said once.
            delivered += deliver(outbox, 5)
            for n in 100..<300 { outbox.append(message(n), delivery: .inOrder) }
            delivered += deliver(outbox, 5)
            #expect(outbox.activeSpool == nil)
            _ = outbox.persist()
        }
        let warnings = log.text.split(separator: "\n").filter { $0.hasPrefix("warning") && $0.contains(folder) }
        #expect(warnings.count == 1, "\(log.text)")
        #expect(disk.remount(readOnly: false) == nil)
        let next = try MQTTOutbox(limits: limits, logger: Logger(label: "t"))
        let again = deliver(next)
        #expect(Set(delivered.prefix(20)).isDisjoint(with: again), "sent again: \(Set(delivered).intersection(again).sorted())")
        #expect(again.first.map { $0 >= 20 } ?? false)
    }

    // MARK: Item 6: two clients with one client ID

    @Test func theDetectorReportsAShortConnectionLoopOncePerEpisode() {
        var detector = MQTTTakeoverDetector(shortConnection: 5, window: 60, threshold: 3, stableAfter: 30)
        // Ordinary losses of long connections: nothing.
        #expect(detector.connectionEnded(after: 600, at: 1000) == .quiet)
        #expect(detector.connectionEnded(after: 40, at: 1100) == .quiet)
        // Three connections dropped right after they were made: reported, once.
        #expect(detector.connectionEnded(after: 0.4, at: 1101) == .quiet)
        #expect(detector.connectionEnded(after: 1.2, at: 1103) == .quiet)
        #expect(detector.connectionEnded(after: 0.3, at: 1106) == .takeoverSuspected(count: 3))
        for t in 0..<20 { #expect(detector.connectionEnded(after: 0.5, at: 1110 + Double(t) * 2) == .quiet) }
        // A connection that holds ends the episode; the next loop is a new one.
        let early = detector.connectionIsUp(for: 10)
        let held = detector.connectionIsUp(for: 31)
        #expect(!early && held)
        #expect(!detector.inEpisode)
        #expect(detector.connectionEnded(after: 0.2, at: 2000) == .quiet)
        #expect(detector.connectionEnded(after: 0.2, at: 2001) == .quiet)
        #expect(detector.connectionEnded(after: 0.2, at: 2002) == .takeoverSuspected(count: 3))
        // Short losses spread wider than the window are not a loop.
        var spread = MQTTTakeoverDetector(shortConnection: 5, window: 60, threshold: 3, stableAfter: 30)
        for t in 0..<10 { #expect(spread.connectionEnded(after: 1, at: Double(t) * 100) == .quiet) }
    }

    /// Two clients on the test broker with one client ID: each is told, once, that another
    /// client probably uses its ID, and they back off instead of taking turns twice a second.
    @Test func twoClientsWithOneIDAreToldOnceAndBackOff() throws {
        guard let broker = try MosquittoTestBroker.start() else { return }
        let id = "dup-\(UUID().uuidString.prefix(8))"
        var options = try clientOptions(broker, clientID: id)
        options.reconnectDelay = .init(minimum: 0.2, maximum: 4)
        let (loggerA, logA) = CapturingLogHandler.logger()
        let (loggerB, logB) = CapturingLogHandler.logger()
        let a = try MQTTClient(options: options, logger: loggerA)
        let b = try MQTTClient(options: options, logger: loggerB)
        a.start()
        b.start()
        defer {
            a.stop()
            b.stop()
        }
        func reports(_ log: CapturingLogHandler.Store) -> Int {
            log.text.split(separator: "\n").filter { $0.hasPrefix("error") && $0.contains("another client probably uses the client ID \(id)") }.count
        }
        let told = waitUntil(60) { reports(logA) >= 1 && reports(logB) >= 1 }
        #expect(told, "A: \(logA.text)\nB: \(logB.text)")
        #expect(a.statistics.takeoverSuspected || b.statistics.takeoverSuspected)
        let start = broker.log.components(separatedBy: "already connected").count
        Thread.sleep(forTimeInterval: 12)
        // Still fighting (nothing can fix a duplicate ID), but said once, and slowly: with the
        // delay doubling to 4 s, a few takeovers in 12 s, not the 50 of a 0.2 s retry.
        #expect(reports(logA) == 1 && reports(logB) == 1, "A: \(logA.text)\nB: \(logB.text)")
        let takeovers = broker.log.components(separatedBy: "already connected").count - start
        #expect(takeovers <= 12, "\(takeovers) takeovers in 12 s")
    }
}
