import Foundation
import Logging
import Synchronization
import Testing

@testable import CaptureMQTT
import AppTestSupport
import CaptureKitTesting

/// MQTTClient against a real Mosquitto on loopback, one broker per test (stopped and restarted
/// by the outage tests). Serialized: the outage timings should not compete for the two cores.
@Suite(.serialized, .enabled(if: MosquittoTestBroker.missing == nil, "Mosquitto is not installed (run Tools/setup)"))
struct MQTTClientTests {
    /// Publishes `count` numbered messages on `topic`, one every `interval` seconds, on another thread.
    final class Publisher: Sendable {
        private let done = DispatchSemaphore(value: 0)
        init(_ client: MQTTClient, topic: String, count: Int, interval: Double) {
            let done = done
            DispatchQueue.global().async {
                for n in 0..<count {
                    client.publish(MQTTMessage(topic: topic, text: String(n)))
                    usleep(UInt32(interval * 1_000_000))
                }
                done.signal()
            }
        }
        func wait() { done.wait() }
    }

    @Test func connectsWithUsernameAndPasswordAndPublishes() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let subscriber = try broker.subscriber(["cams/#"])
        let (logger, log) = CapturingLogHandler.logger()
        let client = try MQTTClient(options: clientOptions(broker), logger: logger)
        client.start()
        client.publish(MQTTMessage(topic: "cams/door/events", text: "hello"))
        #expect(client.flush(timeout: 10))
        #expect(subscriber.wait(timeout: 5) { $0 == ["cams/door/events hello"] }, "\(subscriber.lines)")
        let statistics = client.statistics
        #expect(statistics.connected && statistics.delivered == 1 && statistics.queued == 0)
        client.stop()
        #expect(log.text.contains("connected to 127.0.0.1:\(broker.port)"))
        #expect(!log.text.contains(broker.password))
    }

    @Test func aWrongPasswordIsNotAuthorisedAndNeverShown() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let (logger, log) = CapturingLogHandler.logger()
        let wrong = "Wrong-\(UUID().uuidString)"
        let options = try clientOptions(broker, password: wrong)
        let client = try MQTTClient(options: options, logger: logger)
        client.start()
        #expect(waitUntil(10) { client.statistics.lastError != nil })
        client.publish(MQTTMessage(topic: "cams/door/events", text: "queued meanwhile"))
        client.stop()
        let error = try #require(client.statistics.lastError)
        #expect(error.kind == .notAuthorised)
        #expect(error.description.contains("not authorised"))
        #expect(error.description.contains("check username/password"))
        #expect(!client.statistics.connected)
        var dumped = ""
        dump(options, to: &dumped)
        for text in [error.description, String(reflecting: error), "\(options)", dumped, log.text] {
            #expect(!text.contains(wrong))
            #expect(!text.contains(broker.password))
        }
        #expect(log.text.contains("not authorised"))
        // Nothing was delivered, and the queued message is reported lost at stop (no spool).
        #expect(log.text.contains("1 undelivered messages"))
    }

    @Test func mqttsWithTheBrokersCAWorks() throws {
        let broker = try #require(try MosquittoTestBroker.start(tls: true))
        let subscriber = try broker.subscriber(["secure/#"])
        var options = try clientOptions(broker)
        options.broker = try MQTTBroker(url: #require(broker.tlsURL))
        options.caFile = broker.caFile
        let client = try MQTTClient(options: options, logger: Logger(label: "t"))
        client.start()
        client.publish(MQTTMessage(topic: "secure/a", text: "over TLS"))
        #expect(client.flush(timeout: 10), "\(String(describing: client.statistics.lastError))")
        #expect(subscriber.wait(timeout: 5) { $0 == ["secure/a over TLS"] })
        client.stop()
    }

    @Test func mqttsWithoutTheRightCAFailsNamingTLS() throws {
        let broker = try #require(try MosquittoTestBroker.start(tls: true))
        var options = try clientOptions(broker)
        options.broker = try MQTTBroker(url: #require(broker.tlsURL))
        options.caFile = nil  // the system's CAs, which never signed the throwaway CA
        let client = try MQTTClient(options: options, logger: Logger(label: "t"))
        client.start()
        #expect(waitUntil(10) { client.statistics.lastError != nil })
        client.stop()
        let error = try #require(client.statistics.lastError)
        #expect(error.kind == .tls, "\(error)")
        #expect(error.description.contains("TLS") && error.description.contains("certificate"), "\(error)")
        #expect(client.statistics.delivered == 0)
    }

    /// The connected loop sleeps in `poll` until the broker or a publishing thread needs it: an
    /// idle connection turns at most once a second (it turned every 10 ms before, 100 times a
    /// second for nothing), and a message queued from another thread wakes it at once.
    @Test func anIdleConnectionSleepsAndAQueuedMessageWakesIt() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let subscriber = try broker.subscriber(["idle/#"])
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        client.start()
        client.publish(MQTTMessage(topic: "idle/first", text: "1"))
        #expect(client.flush(timeout: 30))
        // A quiet spell: a busy machine can only make the loop turn less often.
        let quiet = client.loopTurnsForTesting
        Thread.sleep(forTimeInterval: 1.5)
        let afterQuiet = client.loopTurnsForTesting
        #expect(afterQuiet.turns - quiet.turns <= 4, "\(afterQuiet.turns - quiet.turns) turns in 1.5 idle seconds")
        let sender = Thread { client.publish(MQTTMessage(topic: "idle/second", text: "2")) }
        sender.start()
        #expect(client.flush(timeout: 30))
        #expect(subscriber.wait(timeout: 10) { $0.contains("idle/second 2") }, "\(subscriber.lines)")
        #expect(client.loopTurnsForTesting.woken > afterQuiet.woken)
        client.stop()
    }

    @Test func twoThousandMessagesArriveInOrder() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let subscriber = try broker.subscriber(["seq"])
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        client.start()
        for n in 0..<2000 { client.publish(MQTTMessage(topic: "seq", text: String(n))) }
        #expect(client.flush(timeout: 30))
        #expect(subscriber.wait(timeout: 10) { $0.count >= 2000 })
        #expect(numbers(subscriber.lines, topic: "seq") == Array(0..<2000))
        #expect(client.statistics.delivered == 2000)
        client.stop()
    }

    @Test func aBrokerOutageLosesNothingAndKeepsOrder() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        // A persistent session: the restarted broker keeps queuing for it while it reconnects.
        let subscriber = try broker.subscriber(["outage"], sessionID: "outage-sub-\(UUID().uuidString.prefix(8))")
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        client.start()
        #expect(waitUntil(5) { client.statistics.connected })
        let count = 800
        let publisher = Publisher(client, topic: "outage", count: count, interval: 0.01)
        Thread.sleep(forTimeInterval: 1.5)
        broker.stop()
        #expect(waitUntil(5) { !client.statistics.connected })
        Thread.sleep(forTimeInterval: 5)
        try broker.restart()
        publisher.wait()
        #expect(client.flush(timeout: 30), "\(client.statistics)")
        #expect(subscriber.wait(timeout: 20) { Set(numbers($0, topic: "outage")).count >= count }, "\(subscriber.lines.count) lines")
        let check = SequenceCheck(numbers(subscriber.lines, topic: "outage"))
        #expect(check.gaps.isEmpty && check.distinct == Set(0..<count), "\(check)")
        let statistics = client.statistics
        #expect(statistics.reconnects >= 1)
        #expect(statistics.dropped == 0)
        client.stop()
    }

    /// The outage above rarely catches a message in flight (the broker acknowledges all it got
    /// before it exits); cutting the connection in the middle of a burst does, every time.
    @Test func aConnectionCutMidBurstResendsWhatWasInFlight() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let subscriber = try broker.subscriber(["burst"])
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        client.start()
        #expect(waitUntil(5) { client.statistics.connected })
        let count = 3000
        for n in 0..<count { client.publish(MQTTMessage(topic: "burst", text: String(n))) }
        #expect(waitUntil(10) { client.statistics.delivered >= 300 })
        client.abortConnectionForTesting()
        #expect(client.flush(timeout: 30), "\(client.statistics)")
        #expect(subscriber.wait(timeout: 10) { Set(numbers($0, topic: "burst")).count >= count })
        let check = SequenceCheck(numbers(subscriber.lines, topic: "burst"))
        #expect(check.gaps.isEmpty && check.distinct == Set(0..<count), "\(check)")
        #expect(client.statistics.reconnects == 1)
        client.stop()
    }

    @Test func withoutSpoolAnOutageDropsExactlyTheOldest() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let subscriber = try broker.subscriber(["bounded"], sessionID: "bounded-sub-\(UUID().uuidString.prefix(8))")
        let (logger, log) = CapturingLogHandler.logger()
        let client = try MQTTClient(options: clientOptions(broker, limits: .init(maxMessages: 50)), logger: logger)
        client.start()
        #expect(waitUntil(5) { client.statistics.connected })
        broker.stop()
        #expect(waitUntil(5) { !client.statistics.connected })
        for n in 0..<200 { client.publish(MQTTMessage(topic: "bounded", text: String(n))) }
        #expect(client.statistics.queued == 50)
        #expect(client.statistics.dropped == 150)
        try broker.restart()
        #expect(client.flush(timeout: 20))
        #expect(subscriber.wait(timeout: 10) { $0.count >= 50 })
        let received = numbers(subscriber.lines, topic: "bounded")
        #expect(received == Array(150..<200))
        #expect(client.statistics.dropped == 200 - Set(received).count)
        #expect(waitUntil(3) { log.text.contains("dropped the 150 oldest messages") }, "\(log.text)")
        client.stop()
    }

    @Test func withSpoolAnOutageLosesNothingAndTheSpoolEmpties() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let subscriber = try broker.subscriber(["spooled"], sessionID: "spool-sub-\(UUID().uuidString.prefix(8))")
        let client = try MQTTClient(
            options: clientOptions(broker, limits: .init(maxMessages: 10, spoolDirectory: folder)), logger: Logger(label: "t"))
        client.start()
        #expect(waitUntil(5) { client.statistics.connected })
        broker.stop()
        #expect(waitUntil(5) { !client.statistics.connected })
        for n in 0..<300 { client.publish(MQTTMessage(topic: "spooled", text: String(n))) }
        let during = client.statistics
        #expect(during.queued <= 10 && during.spooled + during.queued == 300 && during.dropped == 0, "\(during)")
        #expect(try !FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        try broker.restart()
        #expect(client.flush(timeout: 20))
        #expect(subscriber.wait(timeout: 10) { $0.count >= 300 })
        let check = SequenceCheck(numbers(subscriber.lines, topic: "spooled"))
        #expect(check.gaps.isEmpty && check.distinct == Set(0..<300), "\(check)")
        #expect(client.statistics.dropped == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == [])
        client.stop()
    }

    @Test func aSpoolLeftByAStoppedClientIsDeliveredByTheNext() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let subscriber = try broker.subscriber(["left"], sessionID: "left-sub-\(UUID().uuidString.prefix(8))")
        let options = try clientOptions(broker, limits: .init(maxMessages: 10, spoolDirectory: folder))
        do {
            let first = try MQTTClient(options: options, logger: Logger(label: "t"))
            first.start()
            #expect(waitUntil(5) { first.statistics.connected })
            broker.stop()
            #expect(waitUntil(5) { !first.statistics.connected })
            for n in 0..<100 { first.publish(MQTTMessage(topic: "left", text: String(n))) }
            first.stop()
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).contains { $0.hasSuffix(".spool") })
        try broker.restart()
        let second = try MQTTClient(options: options, logger: Logger(label: "t"))
        #expect(second.statistics.spooled == 100)
        second.publish(MQTTMessage(topic: "left", text: "100"))
        second.start()
        #expect(second.flush(timeout: 20))
        #expect(subscriber.wait(timeout: 10) { $0.count >= 101 })
        #expect(numbers(subscriber.lines, topic: "left") == Array(0...100))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == [])
        second.stop()
    }

    @Test func latestOnlyHoldsOneValueThroughAnOutage() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        client.start()
        #expect(waitUntil(5) { client.statistics.connected })
        broker.stop()
        #expect(waitUntil(5) { !client.statistics.connected })
        var largest = 0
        for n in 0..<100 {
            client.publish(MQTTMessage(topic: "cams/door/state", text: String(n), retain: true), delivery: .latestOnly)
            largest = max(largest, client.statistics.queued)
        }
        #expect(largest == 1)
        try broker.restart()
        #expect(client.flush(timeout: 20))
        #expect(broker.retained("cams/door/state") == "99")
        #expect(client.statistics.delivered == 1)
        client.stop()
    }

    @Test func onConnectMessagesGoOutBeforeTheBacklog() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let subscriber = try broker.subscriber(["cam/#"], sessionID: "order-sub-\(UUID().uuidString.prefix(8))")
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        client.onConnect {
            client.publish(MQTTMessage(topic: "cam/availability", text: "online", retain: true))
        }
        client.start()
        #expect(subscriber.wait(timeout: 5) { $0 == ["cam/availability online"] }, "\(subscriber.lines)")
        broker.stop()
        #expect(waitUntil(5) { !client.statistics.connected })
        for n in 0..<20 { client.publish(MQTTMessage(topic: "cam/events", text: String(n))) }
        try broker.restart()
        #expect(client.flush(timeout: 20))
        #expect(subscriber.wait(timeout: 10) { $0.count >= 22 }, "\(subscriber.lines)")
        let lines = subscriber.lines
        #expect(Array(lines.prefix(2)) == ["cam/availability online", "cam/availability online"], "\(lines)")
        #expect(numbers(lines, topic: "cam/events") == Array(0..<20))
        client.stop()
    }

    @Test func subscriptionsAreRenewedAfterABrokerRestart() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        let received = Mutex<[String]>([])
        client.subscribe("commands/#") { message in
            received.withLock { $0.append(message.topic + " " + String(decoding: message.payload, as: UTF8.self)) }
        }
        client.start()
        #expect(waitUntil(5) { client.statistics.connected })
        // Until the SUBACK, a publish may come too early: repeat until one arrives.
        #expect(waitUntil(10) {
            broker.publish("commands/snap", "1")
            return received.withLock { $0.contains("commands/snap 1") }
        })
        try broker.restart()
        #expect(waitUntil(10) { client.statistics.connected && client.statistics.reconnects == 1 })
        #expect(waitUntil(10) {
            broker.publish("commands/snap", "2")
            return received.withLock { $0.contains("commands/snap 2") }
        })
        client.stop()
    }

    /// `stop()` joins the client's thread: once it returns the thread has exited, not merely
    /// finished its work (the thread lingers 50 ms in exiting, as one freeing per-thread data does).
    @Test func theClientsThreadHasExitedWhenStopReturns() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        let notes = ThreadNotes(lingers: true)
        client.onConnect { notes.noteCurrent() }
        client.start()
        #expect(waitUntil(10) { notes.all.count == 1 })
        client.stop()
        #expect(notes.alive.isEmpty, "the client's thread \(notes.alive) is still listed")
    }

    @Test func stopFromAHandlerEndsTheClientWithoutDeadlock() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let client = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        client.subscribe("control/stop") { _ in client.stop() }
        client.start()
        #expect(waitUntil(5) { client.statistics.connected })
        #expect(waitUntil(10) {
            broker.publish("control/stop", "now")
            return !client.statistics.connected
        })
        client.stop()
        client.publish(MQTTMessage(topic: "control/after", text: "x"))
        #expect(client.statistics.rejected == 1)
    }

    @Test func theWillIsPublishedOnAnAbruptDisconnectButNotOnStop() throws {
        let broker = try #require(try MosquittoTestBroker.start())
        let subscriber = try broker.subscriber(["cams/+/availability"])
        let will = MQTTMessage(topic: "cams/door/availability", text: "offline", retain: false)
        let client = try MQTTClient(options: clientOptions(broker, will: will), logger: Logger(label: "t"))
        client.onConnect { client.publish(MQTTMessage(topic: "cams/door/availability", text: "online")) }
        client.start()
        #expect(subscriber.wait(timeout: 5) { $0 == ["cams/door/availability online"] })
        client.abortConnectionForTesting()
        #expect(subscriber.wait(timeout: 5) { $0.contains("cams/door/availability offline") }, "\(subscriber.lines)")
        // It reconnects by itself and says so; then a clean stop sends no will.
        #expect(subscriber.wait(timeout: 5) { $0.filter { $0.hasSuffix(" online") }.count == 2 }, "\(subscriber.lines)")
        client.stop()
        let probe = try MQTTClient(options: clientOptions(broker), logger: Logger(label: "t"))
        probe.start()
        probe.publish(MQTTMessage(topic: "cams/probe/availability", text: "after stop"))
        #expect(probe.flush(timeout: 5))
        #expect(subscriber.wait(timeout: 5) { $0.last == "cams/probe/availability after stop" })
        probe.stop()
        #expect(subscriber.lines.filter { $0.hasSuffix(" offline") }.count == 1, "\(subscriber.lines)")
    }
}
