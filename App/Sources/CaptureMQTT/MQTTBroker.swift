/// Where the broker is: `mqtt://host[:1883]` or `mqtts://host[:8883]` (TLS).
///
/// A plain value; thread-safe. IPv6 literals are written in brackets (`mqtt://[::1]:1883`).
/// Credentials do not belong in the URL (it ends up in logs and process listings): set
/// `MQTTClientOptions.username` and `.password` instead.
public struct MQTTBroker: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// `mqtts://`: the client speaks TLS (`mosquitto_tls_set`).
    public var usesTLS: Bool

    public init(host: String, port: Int? = nil, usesTLS: Bool = false) {
        self.host = host
        self.port = port ?? (usesTLS ? 8883 : 1883)
        self.usesTLS = usesTLS
    }

    /// Parses `mqtt://host[:port]` or `mqtts://host[:port]`; a trailing `/` is allowed, any other
    /// path, a query, user info or another scheme is refused with `.invalidOptions`.
    ///
    /// The error never quotes the URL (it may hold a password or a token): it names what is
    /// wrong, and the scheme when it is a plain word.
    public init(url: String) throws(MQTTError) {
        func invalid(_ why: String) -> MQTTError { MQTTError(.invalidOptions, "invalid broker URL: \(why)") }
        guard let schemeEnd = url.range(of: "://") else {
            throw invalid("write it as mqtt://host[:1883] or mqtts://host[:8883]")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "mqtt" || scheme == "mqtts" else {
            let word = scheme.count <= 16 && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
            throw invalid("the scheme must be mqtt:// or mqtts://\(word && !scheme.isEmpty ? ", not \(scheme)://" : "")")
        }
        var rest = Substring(url[schemeEnd.upperBound...])
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("@") else {
            throw invalid("user name and password do not go in the URL: use the username and password settings")
        }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#") else {
            throw invalid("a broker URL has no path or query")
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw invalid("unclosed '[' in an IPv6 address") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("expected ':port' after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw invalid("the host is missing") }
        var port: Int?
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value), portText.allSatisfy(\.isASCII) else {
                throw invalid("the port must be a number from 1 to 65535")
            }
            port = value
        }
        self.init(host: String(host), port: port, usesTLS: scheme == "mqtts")
    }

    /// `mqtt://host:port` (brackets around IPv6 literals).
    public var description: String {
        "\(usesTLS ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// `host:port`, as log lines name the broker.
    var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
