import CaptureJobs
import CaptureMQTT
import CapturePreview
import Foundation
import Logging
import Synchronization

/// The daemon's broker link: `ServeBrokerLink` over CaptureMQTT's `MQTTClient` (libmosquitto),
/// with the daemon's last will (`<prefix>/availability` = `offline`, retained) and the queue
/// limits of the configuration. Events go QoS 1 in order; state (`latestOnly`) keeps only the
/// newest value per topic while the broker is away.
///
/// Threading: thread-safe, as `MQTTClient`.
package final class MQTTLink: ServeBrokerLink {
    package let client: MQTTClient
    private let metrics: ServeMetrics?
    private let pump: MetricsPump?

    /// The client options the daemon's settings stand for (also what `ServeConfig` checks).
    package static func clientOptions(_ settings: ServeConfig.MQTT) throws(MQTTError) -> MQTTClientOptions {
        let broker = try MQTTBroker(url: settings.broker)
        let will = MQTTMessage(
            topic: CameraTopics.daemonAvailability(prefix: settings.topicPrefix), text: CameraTopics.offline, qos: 1, retain: true)
        return MQTTClientOptions(
            broker: broker, clientID: settings.clientID, username: settings.username, password: settings.password.map(MQTTSecret.init),
            caFile: settings.caFile, certFile: settings.certFile, keyFile: settings.keyFile, keepAlive: settings.keepAlive,
            will: will,
            outbox: .init(
                maxMessages: settings.maxQueuedMessages, maxBytes: settings.maxQueuedBytes, spoolDirectory: settings.spool,
                maxSpoolBytes: settings.maxSpoolBytes))
    }

    package init(_ settings: ServeConfig.MQTT, metrics: ServeMetrics?, logger: Logger) throws(MQTTError) {
        let client = try MQTTClient(options: try Self.clientOptions(settings), logger: logger)
        self.client = client
        self.metrics = metrics
        let last = Mutex<(dropped: Int, reconnects: Int)>((0, 0))
        pump = metrics.map { metrics in
            MetricsPump(interval: 1) {
                let now = client.statistics
                let before = last.withLock { old in
                    defer { old = (now.dropped, now.reconnects) }
                    return old
                }
                metrics.mqtt.setQueue(depth: now.queued, spooled: now.spooled)
                metrics.mqtt.setConnected(now.connected)
                if now.dropped > before.dropped { metrics.mqtt.recordDropped(now.dropped - before.dropped) }
                for _ in before.reconnects..<max(before.reconnects, now.reconnects) { metrics.mqtt.recordReconnect() }
            }
        }
    }

    package func start() { client.start() }

    package func publish(topic: String, payload: [UInt8], retain: Bool, latestOnly: Bool) {
        client.publish(MQTTMessage(topic: topic, payload: payload, qos: 1, retain: retain), delivery: latestOnly ? .latestOnly : .inOrder)
    }

    package func subscribe(_ filter: String, handler: @escaping @Sendable (String, [UInt8]) -> Void) {
        client.subscribe(filter) { handler($0.topic, $0.payload) }
    }

    package func onConnect(_ handler: @escaping @Sendable () -> Void) { client.onConnect(handler) }

    package func flush(timeout: Double) -> Bool { client.flush(timeout: timeout) }

    package func stop() {
        pump?.stop()
        client.stop()
    }
}
