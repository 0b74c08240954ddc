import CMosquitto
import Glibc

/// Why an MQTT operation failed, and what to do about it.
///
/// A small extensible struct (as swift-system's `Errno`): `kind` says what failed, `code` carries
/// libmosquitto's `MOSQ_ERR_*` value or the broker's CONNACK code when there is one, and
/// `description` is a sentence for the operator. It never contains a password: options hold it as
/// an ``MQTTSecret``, and no message is built from it. A plain value; thread-safe.
public struct MQTTError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What failed.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The broker URL or an option is unusable (nothing was tried on the network).
        public static let invalidOptions = Kind(rawValue: "invalid options")
        /// A TLS file (CA, certificate, key) cannot be read.
        public static let unreadableFile = Kind(rawValue: "unreadable file")
        /// The TCP connection could not be made (refused, unreachable, unknown host).
        public static let connect = Kind(rawValue: "connect")
        /// The TLS handshake failed (certificate not trusted, wrong host name, bad key).
        public static let tls = Kind(rawValue: "TLS")
        /// The broker answered CONNACK with "not authorised" or "bad user name or password".
        public static let notAuthorised = Kind(rawValue: "not authorised")
        /// The broker refused the connection for another reason (protocol, identifier, unavailable).
        public static let refused = Kind(rawValue: "refused")
        /// No CONNACK arrived within the connect timeout.
        public static let timeout = Kind(rawValue: "timeout")
        /// An established connection ended.
        public static let connectionLost = Kind(rawValue: "connection lost")
        /// The spool folder cannot be created, read or written.
        public static let spool = Kind(rawValue: "spool")
        /// libmosquitto refused a call for another reason.
        public static let library = Kind(rawValue: "library")
    }

    public var kind: Kind
    /// libmosquitto's `MOSQ_ERR_*` (or the CONNACK code for `.notAuthorised`/`.refused`), when known.
    public var code: Int32?
    /// What failed and what to do, for the operator.
    public var message: String

    public init(_ kind: Kind, code: Int32? = nil, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// libmosquitto's sentence for a `MOSQ_ERR_*` value; errno's for `MOSQ_ERR_ERRNO`.
    /// The corresponding C functions are `mosquitto_strerror` and `strerror`.
    static func libraryReason(_ rc: Int32, errno savedErrno: Int32 = errno) -> String {
        if rc == Int32(MOSQ_ERR_ERRNO.rawValue) { return String(cString: strerror(savedErrno)) }
        let sentence = String(cString: mosquitto_strerror(rc))
        // "The connection was lost." reads better inside our own sentences without its full stop.
        return sentence.hasSuffix(".") ? String(sentence.dropLast()) : sentence
    }
}
