import Foundation
import Logging
import Testing

@testable import CaptureMQTT
import AppTestSupport

@Suite struct MQTTBrokerURLTests {
    @Test func defaultPortsFollowTheScheme() throws {
        #expect(try MQTTBroker(url: "mqtt://broker.local") == MQTTBroker(host: "broker.local", port: 1883, usesTLS: false))
        #expect(try MQTTBroker(url: "mqtts://broker.local/") == MQTTBroker(host: "broker.local", port: 8883, usesTLS: true))
        #expect(try MQTTBroker(url: "MQTT://10.0.0.2:1884") == MQTTBroker(host: "10.0.0.2", port: 1884, usesTLS: false))
        #expect(try MQTTBroker(url: "mqtt://[::1]:1885") == MQTTBroker(host: "::1", port: 1885, usesTLS: false))
        #expect(try MQTTBroker(url: "mqtt://[::1]:1885").description == "mqtt://[::1]:1885")
    }

    @Test(arguments: [
        ("http://broker", "mqtt:// or mqtts://"),
        ("broker:1883", "mqtt://host"),
        ("mqtt://broker:0", "1 to 65535"),
        ("mqtt://broker:65536", "1 to 65535"),
        ("mqtt://broker:x", "1 to 65535"),
        ("mqtt://:1883", "host is missing"),
        ("mqtt://broker/cams", "no path"),
    ])
    func refusesWhatIsNotABrokerURL(url: String, says: String) {
        #expect {
            try MQTTBroker(url: url)
        } throws: { error in
            (error as? MQTTError)?.kind == .invalidOptions && "\(error)".contains(says)
        }
    }

    @Test func userInfoIsRefusedWithoutEchoingThePassword() {
        do {
            _ = try MQTTBroker(url: "mqtt://cam:hunter2secret@broker:1883")
            Issue.record("a URL with user info was accepted")
        } catch {
            #expect(error.description.contains("username and password settings"))
            #expect(!error.description.contains("hunter2secret"))
        }
    }

    /// Issue #30: no refused broker URL is quoted, whatever part of it holds the secret (a
    /// wrong scheme with user info, a query token, a password taken for a port, a scheme that
    /// is not a word).
    @Test(arguments: [
        "http://user:S3cretPW@broker:1883", "ws://user:S3cretPW@broker", "mqtt://broker/?password=S3cretPW",
        "mqtt://broker:1883?token=S3cretPW", "mqtt://admin:S3cretPW", "user:S3cretPW@broker://x", "mqtt://broker/S3cretPW",
    ])
    func noRefusalQuotesTheURL(url: String) {
        do {
            _ = try MQTTBroker(url: url)
            Issue.record("\(url) was accepted")
        } catch {
            #expect(error.description.hasPrefix("invalid broker URL: "))
            #expect(!error.description.contains("S3cretPW"), "\(error)")
        }
    }
}

@Suite struct MQTTSecretAndOptionsTests {
    @Test func aSecretNeverPrintsItself() {
        let secret = MQTTSecret("hunter2secret")
        var dumped = ""
        dump(secret, to: &dumped)
        for text in [secret.description, secret.debugDescription, "\(secret)", String(reflecting: secret), dumped] {
            #expect(!text.contains("hunter2secret"), "\(text)")
        }
        let options = MQTTClientOptions(broker: MQTTBroker(host: "h"), clientID: "c", username: "u", password: secret)
        var dumpedOptions = ""
        dump(options, to: &dumpedOptions)
        #expect(!String(describing: options).contains("hunter2secret"))
        #expect(!dumpedOptions.contains("hunter2secret"))
    }

    @Test func unreadableTLSFilesAreRefusedAtInit() throws {
        let options = MQTTClientOptions(
            broker: try MQTTBroker(url: "mqtts://127.0.0.1"), clientID: "c", caFile: "/nonexistent/ca.pem")
        #expect {
            try MQTTClient(options: options, logger: Logger(label: "t"))
        } throws: { error in
            let error = error as? MQTTError
            return error?.kind == .unreadableFile && error!.description.contains("cannot read the CA file /nonexistent/ca.pem")
        }
    }

    @Test func inconsistentOptionsAreRefusedAtInit() throws {
        let plain = try MQTTBroker(url: "mqtt://127.0.0.1")
        let tls = try MQTTBroker(url: "mqtts://127.0.0.1")
        let cases: [(MQTTClientOptions, String)] = [
            (MQTTClientOptions(broker: plain, clientID: ""), "client ID"),
            (MQTTClientOptions(broker: plain, clientID: "c", keepAlive: 2), "keepAlive"),
            (MQTTClientOptions(broker: plain, clientID: "c", caFile: "/etc/hostname"), "use mqtts://"),
            (MQTTClientOptions(broker: tls, clientID: "c", certFile: "/etc/hostname"), "needs its key"),
            (MQTTClientOptions(broker: plain, clientID: "c", password: MQTTSecret("p")), "needs a username"),
            (MQTTClientOptions(broker: plain, clientID: "c", will: MQTTMessage(topic: "a/#", text: "x")), "not a topic"),
            (MQTTClientOptions(broker: plain, clientID: "c", outbox: .init(maxMessages: 0)), "at least 1"),
        ]
        for (options, says) in cases {
            #expect(throws: MQTTError.self, "\(says)") { try MQTTClient(options: options, logger: Logger(label: "t")) }
            do { _ = try MQTTClient(options: options, logger: Logger(label: "t")) } catch {
                #expect(error.description.contains(says), "\(error)")
            }
        }
    }

    @Test func invalidMessagesAreRejectedNotQueued() throws {
        let (logger, log) = CapturingLogHandler.logger()
        let client = try MQTTClient(
            options: MQTTClientOptions(broker: MQTTBroker(host: "127.0.0.1"), clientID: "c"), logger: logger)
        client.publish(MQTTMessage(topic: "cams/+/events", text: "x"))
        client.publish(MQTTMessage(topic: "cams/1/events", text: "x", qos: 3))
        client.publish(MQTTMessage(topic: "", text: "x"))
        client.publish(MQTTMessage(topic: "cams/1/events", text: "ok"))
        #expect(client.statistics.rejected == 3)
        #expect(client.statistics.queued == 1)
        #expect(log.text.contains("cams/+/events"))
        client.stop()
        client.publish(MQTTMessage(topic: "cams/1/events", text: "too late"))
        #expect(client.statistics.rejected == 4)
        #expect(log.text.contains("after stop() refused"))
    }
}

/// The outbox-full warning's advice fits the configuration (issue #30, item 16): "set a spool
/// folder" only when none is set; with one, the folder and its limit.
@Suite struct MQTTDropAdviceTests {
    @Test func theAdviceNamesTheSpoolFolderWhenThereIsOne() {
        let without = MQTTClient.DropReporter.advice(MQTTOutbox.Limits())
        #expect(without.contains("set a spool folder"))
        let with = MQTTClient.DropReporter.advice(MQTTOutbox.Limits(spoolDirectory: "/var/spool/cvcam", maxSpoolBytes: 4096))
        #expect(!with.contains("set a spool folder"), "\(with)")
        #expect(with.contains("/var/spool/cvcam") && with.contains("4096"), "\(with)")
    }
}
