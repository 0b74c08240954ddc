/// One MQTT application message: what `MQTTClient.publish` sends and what subscription handlers get.
///
/// A plain value; thread-safe to share.
public struct MQTTMessage: Sendable, Equatable {
    /// The topic name (no wildcards when publishing).
    public var topic: String
    public var payload: [UInt8]
    /// 0, 1 or 2. Events use 1 (at least once).
    public var qos: Int
    /// Whether the broker keeps it as the topic's last known value (state, availability).
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    /// A message whose payload is `text`'s UTF-8 bytes.
    public init(topic: String, text: String, qos: Int = 1, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }

    /// Bytes the message takes in the outbox's memory accounting (topic + payload).
    var size: Int { topic.utf8.count + payload.count }
}

/// How `MQTTClient.publish` queues a message. A plain value.
public enum MQTTDelivery: Sendable {
    /// An event: queued, sent once each (QoS 1 may duplicate after a reconnect), in publish order,
    /// spooled or dropped oldest-first by the outbox's limits.
    case inOrder
    /// State (usually retained): a queued, not yet sent message on the same topic is replaced by
    /// the newer one, so the outbox holds at most one per topic. Kept in memory, never spooled or
    /// dropped; it may therefore go out after events published later than it. At `stop()` it is
    /// written to the spool like the rest, and from there it is an ordinary queued message.
    case latestOnly
}

/// A password or other secret: its `description`, `debugDescription` and mirror are `<redacted>`,
/// so printing options, errors or `dump(_:)` never shows it. A plain value; thread-safe. Only
/// `mosquitto_username_pw_set` ever receives the secret itself.
public struct MQTTSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The secret itself, for handing to libmosquitto only.
    let value: String

    public init(_ value: String) { self.value = value }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
