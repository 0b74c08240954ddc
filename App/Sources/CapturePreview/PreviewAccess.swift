import CaptureJobs
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket

/// Who may use the preview, checked on every request and WebSocket upgrade.
///
/// - With a token (`--http-token`, required beyond loopback): a request must carry it, as
///   `Authorization: Bearer <token>`, the `cvcam_preview_<port>` cookie, or `?token=` (how a user opens
///   the first page; that answer sets the cookie, HttpOnly and SameSite=Strict, so the stream and
///   the WebSocket, which cannot send headers, carry it from then on). Compared in constant time.
/// - A request with an `Origin` header must come from the page's own origin (its host and port
///   equal the `Host` header): another site open in the same browser cannot drive the camera
///   through the user's localhost, token or not. No CORS header is ever sent.
/// - Every answer says `nosniff`, no referrer (the token may be in the URL), and a
///   content-security policy allowing only the page's own scripts, styles, images and socket.
///
/// Threading: a value type; thread-safe.
package struct PreviewAccess: RouterMiddleware {
    package typealias Context = BasicWebSocketRequestContext

    /// Nil: no token is needed (loopback only; `PreviewCommand.validate` enforces that).
    package let token: String?

    /// The cookie carrying the token, named after the port the page was opened on: browsers
    /// keep cookies per host, not per port, so two previews on one host (each with its own
    /// token) would otherwise overwrite each other's.
    package static func cookieName(authority: String?) -> String {
        var port = "80"
        if let authority, let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            let digits = authority[authority.index(after: colon)...]
            if !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) { port = String(digits) }
        }
        return "cvcam_preview_\(port)"
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let origin = request.headers[.origin], !Self.sameOrigin(origin, host: request.head.authority) {
            return Self.refusal(.forbidden, "cross-origin requests are refused")
        }
        var setCookie = false
        if let token {
            let offered = Self.offeredTokens(request)
            guard offered.contains(where: { Self.constantTimeEqual($0.value, token) }) else {
                return Self.refusal(.unauthorized, "this preview needs its token: open it as /?token=<token>, or send Authorization: Bearer <token>")
            }
            setCookie = offered.contains { $0.fromQuery }
        }
        var response = try await next(request, context)
        if setCookie, let token {
            response.headers[.setCookie] =
                "\(Self.cookieName(authority: request.head.authority))=\(token); Path=/; HttpOnly; SameSite=Strict"
        }
        Self.addSecurityHeaders(&response.headers)
        return response
    }

    package static func addSecurityHeaders(_ headers: inout HTTPFields) {
        headers[.xContentTypeOptions] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'"
        headers[.cacheControl] = "no-store"
    }

    package static func refusal(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers: HTTPFields = [.contentType: "text/plain; charset=utf-8"]
        addSecurityHeaders(&headers)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }

    /// The tokens a request offers, and whether each came from the query string.
    package static func offeredTokens(_ request: Request) -> [(value: String, fromQuery: Bool)] {
        var offered: [(String, Bool)] = []
        if let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") {
            offered.append((String(authorization.dropFirst("Bearer ".count)), false))
        }
        let cookieName = Self.cookieName(authority: request.head.authority)
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == cookieName { offered.append((String(parts[1]), false)) }
            }
        }
        if let query = request.uri.queryParameters.get("token") { offered.append((query, true)) }
        return offered
    }

    /// Compares without stopping at the first difference, so timing does not tell how much of a
    /// guess was right.
    package static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0
    }

    /// Whether `origin` (scheme://host[:port]) names the same host and port as `host`.
    package static func sameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, let url = URL(string: origin), let originHost = url.host else { return false }
        let originAuthority = url.port.map { "\(originHost):\($0)" } ?? originHost
        let bracketed = originHost.contains(":") ? "[\(originHost)]" + (url.port.map { ":\($0)" } ?? "") : originAuthority
        return host.lowercased() == originAuthority.lowercased() || host.lowercased() == bracketed.lowercased()
    }

    /// Creates the value from each of its properties.
    package init(token: String? = nil) {
        self.token = token
    }
}

/// `--listen HOST:PORT`: where the preview's server binds.
///
/// Value type; thread-safe.
package struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: Int

    package static let defaultValue = ListenAddress(host: "127.0.0.1", port: 8080)

    /// Parses `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (loopback); port 0 picks a free one.
    package init?(_ text: String) {
        let hostPart: Substring, portPart: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") { return nil }  // IPv6 needs brackets
        }
        guard let port = Int(portPart), (0...65535).contains(port) else { return nil }
        let host = hostPart.isEmpty ? "127.0.0.1" : String(hostPart)
        guard host.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-:".unicodeScalars.contains($0)) })
        else { return nil }
        self.host = host
        self.port = port
    }

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Whether only this machine can reach the address (the only place a token is optional).
    package var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
