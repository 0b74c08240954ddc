/// Everything an ``MQTTClient`` needs to know before it starts. A plain value; thread-safe.
public struct MQTTClientOptions: Sendable {
    /// How long to wait between connection attempts: `minimum` after a loss, doubling on each
    /// failed attempt up to `maximum`, back to `minimum` once connected.
    public struct ReconnectDelay: Sendable, Equatable {
        public var minimum: Double
        public var maximum: Double
        public init(minimum: Double = 0.5, maximum: Double = 30) {
            self.minimum = minimum
            self.maximum = maximum
        }
    }

    public var broker: MQTTBroker
    /// The MQTT client identifier; with `cleanSession == false` the broker keeps the session under it.
    public var clientID: String
    public var username: String?
    public var password: MQTTSecret?
    /// PEM CA certificate(s) to trust (`mqtts://` only); without it the system's `/etc/ssl/certs`.
    public var caFile: String?
    /// PEM client certificate and its key, for brokers that require client certificates.
    public var certFile: String?
    public var keyFile: String?
    /// Seconds between PINGREQs when idle (MQTT keep-alive); 0 turns it off, otherwise at least 5.
    public var keepAlive: Int
    /// Published by the broker when the connection dies without a DISCONNECT (availability "offline").
    public var will: MQTTMessage?
    public var cleanSession: Bool
    public var reconnectDelay: ReconnectDelay
    /// Seconds to wait for the broker's CONNACK once the TCP (and TLS) connection is made. Making
    /// that connection (`mosquitto_connect`, blocking on the client's thread, never a caller's) is
    /// bounded by the kernel's TCP timeouts, which can be minutes for a host that drops packets.
    public var connectTimeout: Double
    /// The outbox's memory and disk limits.
    public var outbox: MQTTOutbox.Limits

    public init(
        broker: MQTTBroker, clientID: String, username: String? = nil, password: MQTTSecret? = nil,
        caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, keepAlive: Int = 30,
        will: MQTTMessage? = nil, cleanSession: Bool = true, reconnectDelay: ReconnectDelay = .init(),
        connectTimeout: Double = 10, outbox: MQTTOutbox.Limits = .init()
    ) {
        self.broker = broker
        self.clientID = clientID
        self.username = username
        self.password = password
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.keepAlive = keepAlive
        self.will = will
        self.cleanSession = cleanSession
        self.reconnectDelay = reconnectDelay
        self.connectTimeout = connectTimeout
        self.outbox = outbox
    }
}

/// A snapshot of an ``MQTTClient``'s counters (`MQTTClient.statistics`). A plain value.
public struct MQTTStatistics: Sendable, Equatable {
    /// Whether the broker has accepted the current connection (CONNACK 0).
    public var connected: Bool = false
    /// Messages held in memory: in flight (sent, not yet acknowledged) and waiting.
    public var queued: Int = 0
    /// Messages waiting in spool files on disk.
    public var spooled: Int = 0
    /// Messages the outbox's limits made it drop, oldest first, since the client was made.
    public var dropped: Int = 0
    /// Messages `publish` refused (invalid topic or QoS, too large); each is logged as an error.
    public var rejected: Int = 0
    /// Successful connections after the first.
    public var reconnects: Int = 0
    /// Messages the broker acknowledged (PUBACK; QoS 0: written to the socket).
    public var delivered: Int = 0
    /// Why the last connection attempt failed or the last connection ended.
    public var lastError: MQTTError?
    /// True while connections keep ending right after they were made, the sign of another client
    /// using the same client ID (logged as an error once per episode); false again once a
    /// connection holds.
    public var takeoverSuspected: Bool = false
}
