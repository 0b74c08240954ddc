import Foundation

/// Which `Host` header values a server answers to: its defence against DNS rebinding, where a
/// page on any web site makes the user's browser send requests to 127.0.0.1 under the site's own
/// name (`Host: attacker.example:8080`), so the browser lets the page read the answers.
///
/// A rebinding request always names the attacker's host, never an IP address (the browser puts
/// the name it resolved into `Host`). So:
/// - always answered: `localhost`, the loopback addresses (`127.0.0.1`…, `[::1]`), the address
///   the server listens on (`--listen`, `metrics.listen`) and the names given with
///   `--allow-host` / `allowedHosts` (`*` allows any);
/// - on a listener that other machines can reach (not loopback): also any IP address and this
///   machine's host name (`gethostname`, with and without its domain), since that is how others
///   reach it;
/// - with a token on such a listener (`anyHostWithToken`), and no names given: any host, since
///   the token protects every request (a rebinding page does not have it).
///
/// Names compare without case and without a trailing dot; the port is not compared (a reverse
/// proxy may forward another one, and a rebinding page can pick the port anyway).
///
/// Threading: a value type; thread-safe.
package struct HostAllowlist: Sendable, Equatable {
    /// The listener's host as configured (an address or a name).
    package var listenHost: String
    /// Names added by the user; `*` allows any host.
    package var allowedNames: [String]
    /// Whether a token guards every request (only then may a non-loopback listener skip the check).
    package var hasToken: Bool

    package init(listenHost: String, allowedNames: [String] = [], hasToken: Bool = false) {
        self.listenHost = listenHost
        self.allowedNames = allowedNames.map(Self.normalised)
        self.hasToken = hasToken
    }

    /// Whether the listener is reachable from this machine only.
    package var listensOnLoopback: Bool {
        let host = Self.normalised(listenHost)
        return host == "localhost" || host == "::1" || Self.isLoopbackIPv4(host)
    }

    /// Whether a request whose `Host` header is `header` (`name`, `name:port`, `[v6]:port`) is answered.
    package func allows(_ header: String) -> Bool {
        guard let host = Self.hostPart(of: header) else { return false }
        if allowedNames.contains("*") || allowedNames.contains(host) { return true }
        if !listensOnLoopback && hasToken && allowedNames.isEmpty { return true }
        if host == "localhost" || host == "::1" || Self.isLoopbackIPv4(host) || host == Self.normalised(listenHost) {
            return true
        }
        guard !listensOnLoopback else { return false }
        return Self.isIPAddress(host) || Self.machineNames.contains(host)
    }

    /// `header` without its port, brackets, trailing dot and case; nil when it is malformed
    /// (empty, spaces, controls, an unclosed bracket, a port that is not a number).
    package static func hostPart(of header: String) -> String? {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.count <= 300,
            text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return nil }
        var host: Substring
        var port: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                port = rest.dropFirst()
            }
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        } else {
            host = Substring(text)
        }
        if let port, !(port.allSatisfy(\.isASCII) && port.allSatisfy(\.isNumber) && port.count <= 5) { return nil }
        guard !host.isEmpty else { return nil }
        return normalised(String(host))
    }

    static func normalised(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        while name.hasSuffix(".") && name.count > 1 { name.removeLast() }
        return name
    }

    static func isLoopbackIPv4(_ host: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1 && UInt32(bigEndian: address.s_addr) >> 24 == 127
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// This machine's names: `gethostname`, and its first label when it has a domain.
    /// The corresponding C call is `gethostname`.
    static let machineNames: Set<String> = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return [] }
        let name = normalised(String(cString: buffer))
        guard !name.isEmpty else { return [] }
        return [name, String(name.split(separator: ".").first ?? Substring(name))]
    }()
}

extension HostAllowlist {
    /// Whether `name` may be given to `--allow-host` / `allowedHosts`: `*`, a host name or an
    /// IP address (IPv6 with or without brackets), without a port.
    package static func isValidName(_ name: String) -> Bool {
        if name == "*" { return true }
        let bare = normalised(name)
        if isIPAddress(bare) { return true }
        guard !bare.isEmpty, bare.utf8.count <= 253 else { return false }
        return bare.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
    }
}
