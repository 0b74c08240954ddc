import Foundation
import Logging
import Testing

@testable import CaptureMQTT
import AppTestSupport

/// The outbox alone, without a broker: order, limits, latestOnly, spool files.
@Suite struct MQTTOutboxTests {
    private func message(_ n: Int, topic: String = "t") -> MQTTMessage { MQTTMessage(topic: topic, text: String(n)) }

    /// Sends and acknowledges everything the outbox yields; returns the payloads in order.
    private func drain(_ outbox: MQTTOutbox) -> [Int] {
        var out: [Int] = []
        while let entry = outbox.nextToSend() {
            out.append(Int(String(decoding: entry.message.payload, as: UTF8.self))!)
            #expect(outbox.acknowledge(entry.seq))
        }
        return out
    }

    @Test func unacknowledgedMessagesAreSentAgainFirstAfterADisconnect() throws {
        let outbox = try MQTTOutbox(limits: .init(), logger: Logger(label: "t"))
        for n in 0..<5 { outbox.append(message(n), delivery: .inOrder) }
        let first = outbox.nextToSend()!, second = outbox.nextToSend()!
        outbox.acknowledge(first.seq)
        outbox.connectionLost()
        // The window holds one unacknowledged message (1): it goes out again, before 2.
        #expect(outbox.nextToSend()?.seq == second.seq)
        outbox.acknowledge(second.seq)
        #expect(drain(outbox) == [2, 3, 4])
        #expect(outbox.isEmpty)
    }

    @Test func theWindowBoundsWhatIsInFlight() throws {
        let outbox = try MQTTOutbox(limits: .init(), logger: Logger(label: "t"))
        for n in 0..<100 { outbox.append(message(n), delivery: .inOrder) }
        var sent = 0
        while outbox.nextToSend() != nil { sent += 1 }
        #expect(sent == outbox.window)
        #expect(outbox.queued == 100)
    }

    @Test func withoutSpoolTheOldestAreDroppedAndCounted() throws {
        let outbox = try MQTTOutbox(limits: .init(maxMessages: 10), logger: Logger(label: "t"))
        for n in 0..<25 { outbox.append(message(n), delivery: .inOrder) }
        #expect(outbox.dropped == 15)
        #expect(outbox.takeDropReport() == 15)
        #expect(outbox.takeDropReport() == 0)
        #expect(drain(outbox) == Array(15..<25))
    }

    @Test func byteLimitDropsTheOldest() throws {
        let outbox = try MQTTOutbox(limits: .init(maxBytes: 100), logger: Logger(label: "t"))
        for n in 0..<10 { outbox.append(MQTTMessage(topic: "t", payload: [UInt8](repeating: UInt8(n), count: 29)), delivery: .inOrder) }
        // 30 bytes each: three fit in 100.
        #expect(outbox.dropped == 7)
        var kept: [UInt8] = []
        while let entry = outbox.nextToSend() {
            kept.append(entry.message.payload[0])
            outbox.acknowledge(entry.seq)
        }
        #expect(kept == [7, 8, 9])
    }

    @Test func latestOnlyKeepsOneWaitingMessagePerTopic() throws {
        let outbox = try MQTTOutbox(limits: .init(maxMessages: 5), logger: Logger(label: "t"))
        for n in 0..<100 {
            outbox.append(message(n, topic: "state/a"), delivery: .latestOnly)
            outbox.append(message(n, topic: "state/b"), delivery: .latestOnly)
            #expect(outbox.queued <= 2)
        }
        #expect(outbox.dropped == 0)
        #expect(drain(outbox) == [99, 99])
    }

    @Test func spoolKeepsOrderAndRemovesFilesOnceAcknowledged() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let outbox = try MQTTOutbox(limits: .init(maxMessages: 8, spoolDirectory: folder), logger: Logger(label: "t"))
        for n in 0..<100 { outbox.append(message(n), delivery: .inOrder) }
        #expect(outbox.dropped == 0)
        #expect(outbox.queued <= 8)
        #expect(outbox.spooled + outbox.queued == 100)
        #expect(try spoolFiles(folder).count > 1)
        #expect(drain(outbox) == Array(0..<100))
        #expect(try spoolFiles(folder).isEmpty)
    }

    @Test func aFullSpoolDropsItsOldestFile() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let outbox = try MQTTOutbox(
            limits: .init(maxMessages: 4, spoolDirectory: folder, maxSpoolBytes: 200), logger: Logger(label: "t"))
        for n in 0..<100 { outbox.append(message(n), delivery: .inOrder) }
        let delivered = drain(outbox)
        #expect(delivered.count + outbox.dropped == 100)
        #expect(outbox.dropped > 0)
        // What is left is the newest, in order.
        #expect(delivered == Array((100 - delivered.count)..<100))
    }

    @Test func aStoppedOutboxLeavesItsMessagesToTheNextInOrder() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let limits = MQTTOutbox.Limits(maxMessages: 6, spoolDirectory: folder)
        do {
            let outbox = try MQTTOutbox(limits: limits, logger: Logger(label: "t"))
            for n in 0..<20 { outbox.append(message(n), delivery: .inOrder) }
            // Two in flight when the "connection" drops, one acknowledged.
            let first = outbox.nextToSend()!
            _ = outbox.nextToSend()
            outbox.acknowledge(first.seq)
            outbox.connectionLost()
            #expect(outbox.persist() == 0)
        }
        let next = try MQTTOutbox(limits: limits, logger: Logger(label: "t"))
        #expect(next.spooled == 19)
        for n in 20..<25 { next.append(message(n), delivery: .inOrder) }
        #expect(drain(next) == Array(1..<25))
        #expect(try spoolFiles(folder).isEmpty)
    }

    @Test func aTornOrCorruptSpoolFileIsSetAsideNotSent() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let good = MQTTOutbox.encode([MQTTOutbox.Entry(seq: 5, message: message(5), latestOnly: false)])
        try Data(good).write(to: URL(fileURLWithPath: folder + "/00000000000000000005.spool"))
        let torn = MQTTOutbox.encode([MQTTOutbox.Entry(seq: 1, message: message(1), latestOnly: false)]).dropLast(1)
        try Data(torn).write(to: URL(fileURLWithPath: folder + "/00000000000000000001.spool"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: folder + "/00000000000000000009.spool.tmp"))
        let outbox = try MQTTOutbox(limits: .init(spoolDirectory: folder), logger: Logger(label: "t"))
        #expect(drain(outbox) == [5])
        let left = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(left == ["00000000000000000001.spool.corrupt"])
        // New messages number after the spool's.
        outbox.append(message(6), delivery: .inOrder)
        #expect(outbox.nextToSend()!.seq == 6)
    }

    @Test func spoolFilesRoundTrip() {
        let entries = [
            MQTTOutbox.Entry(seq: 7, message: MQTTMessage(topic: "a/b", payload: [0, 255, 10], qos: 1, retain: true), latestOnly: false),
            MQTTOutbox.Entry(seq: 9, message: MQTTMessage(topic: "ü", payload: [], qos: 0), latestOnly: false),
        ]
        let decoded = MQTTOutbox.decode(MQTTOutbox.encode(entries), file: "f")
        #expect(decoded?.map(\.message) == entries.map(\.message))
        #expect(decoded?.map(\.seq) == [7, 9])
        #expect(MQTTOutbox.decode(MQTTOutbox.encode(entries) + [0], file: nil) == nil)
    }

    private func spoolFiles(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".spool") }
    }
}
