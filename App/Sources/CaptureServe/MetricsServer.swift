import CaptureJobs
import CapturePreview
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// `cvcam serve`'s HTTP endpoint: `GET /metrics` answers `ServeMetrics.render()` in the
/// Prometheus text format; every other path is 404. Every connection passes
/// `HTTPConnectionGuard` first, as the preview's do.
///
/// A swift-service-lifecycle `Service`: run it in the daemon's `ServiceGroup` beside the cameras;
/// it stops on graceful shutdown or when its task is cancelled. The address is checked when the
/// server is made, so a bad `metrics:` entry in the config fails at start-up, not later.
///
/// Threading: a value type; `run()` may be called from any task, once per value.
package struct MetricsServer: Service {
    /// Where the server listens: `host:port`, `[IPv6]:port`, or a bare `port` on 127.0.0.1.
    package struct Address: Sendable, Equatable, CustomStringConvertible {
        /// An IPv4 or IPv6 literal or a host name; loopback unless the config says otherwise,
        /// since the figures name cameras.
        package var host: String
        /// 0 lets the kernel choose (tests); `onListening` then reports the port.
        package var port: Int

        package static let defaultHost = "127.0.0.1"

        package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// Parses `host:port`, `[v6]:port` or `port`; throws `CLIError.message` saying what is wrong.
        package init(parsing text: String) throws {
            func fail(_ why: String) -> CLIError { .message("metrics address '\(text)': \(why)") }
            var host = Self.defaultHost
            var portText = Substring(text)
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]") else { throw fail("'[' without ']'") }
                host = String(text[text.index(after: text.startIndex)..<close])
                let rest = text[text.index(after: close)...]
                guard rest.hasPrefix(":") else { throw fail("expected ':PORT' after ']'") }
                portText = rest.dropFirst()
                guard Self.isIPv6(host) else { throw fail("'\(host)' is not an IPv6 address") }
            } else if let colon = text.lastIndex(of: ":") {
                host = String(text[..<colon])
                portText = text[text.index(after: colon)...]
                if host.contains(":") { throw fail("write an IPv6 address in brackets, e.g. [::1]:9464") }
                guard Self.isHost(host) else { throw fail("'\(host)' is not an IPv4 address or host name") }
            }
            guard !portText.isEmpty, portText.allSatisfy(\.isASCIIDigit), portText.count <= 5,
                let port = Int(portText), (0...65535).contains(port)
            else { throw fail("the port must be a number from 0 to 65535") }
            self.host = host
            self.port = port
        }

        package init(host: String = Self.defaultHost, port: Int) {
            self.host = host
            self.port = port
        }

        private static func isIPv6(_ host: String) -> Bool {
            var address = in6_addr()
            return inet_pton(AF_INET6, host, &address) == 1
        }

        /// An IPv4 literal (all digits and dots, then it must parse) or an RFC 1123 host name.
        private static func isHost(_ host: String) -> Bool {
            guard !host.isEmpty, host.utf8.count <= 253 else { return false }
            if host.allSatisfy({ $0.isASCIIDigit || $0 == "." }) {
                var address = in_addr()
                return inet_pton(AF_INET, host, &address) == 1
            }
            return host.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).allSatisfy { label in
                (1...63).contains(label.count) && label.first != UInt8(ascii: "-") && label.last != UInt8(ascii: "-")
                    && label.allSatisfy { byte in
                        switch byte {
                        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                            true
                        default: false
                        }
                    }
            }
        }
    }

    /// The `Content-Type` of Prometheus' text exposition format.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    package let address: Address
    private let metrics: ServeMetrics
    private let logger: Logger
    private let onListening: @Sendable (Int) async -> Void
    /// What every connection passes first (`HTTPConnectionGuard`): limits, methods, and the
    /// `Host` names of `HostAllowlist` (no token here: on loopback only its own names).
    package let policy: HTTPRequestPolicy

    /// - Parameters:
    ///   - address: `host:port`, `[v6]:port` or `port` (on 127.0.0.1); checked here.
    ///   - allowedHosts: host names answered besides the listener's own (`metrics.allowedHosts`).
    ///   - onListening: called once the socket is bound, with the port it got (the chosen one
    ///     when `address` gave 0).
    package init(
        address: String, metrics: ServeMetrics, allowedHosts: [String] = [], limits: HTTPServerLimits = .standard,
        logger: Logger = Logger(label: "cvcam.metrics"), onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        self.address = try Address(parsing: address)
        self.metrics = metrics
        self.logger = logger
        self.onListening = onListening
        policy = HTTPRequestPolicy(
            limits: limits, hosts: HostAllowlist(listenHost: self.address.host, allowedNames: allowedHosts),
            allowHostHint: "metrics.allowedHosts in the configuration")
    }

    /// Serves until graceful shutdown or cancellation; throws when the address cannot be bound.
    package func run() async throws {
        let router = Router()
        router.get("metrics") { [metrics] _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: Self.contentType],
                body: .init(byteBuffer: ByteBuffer(string: metrics.render())))
        }
        let onListening = self.onListening
        let port = address.port
        let application = Application(
            router: router, server: policy.http1(),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "cvcam"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
        do { try await application.run() } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw CLIError.message(ListenFailure.message("the metrics", address: "\(address)", error, option: "metrics.listen"))
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
