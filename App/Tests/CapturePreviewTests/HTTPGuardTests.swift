import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The preview's server against hostile clients (issue #30, items 2 and 4), in-process with raw
/// loopback sockets: every malformed request gets its status line and the connection closes;
/// idle, slow and surplus connections are closed; only the server's own host names are answered.
/// The limits are the standard ones but for the timeouts and connection counts, made small so a
/// test waits seconds, with generous bounds on each wait.
@Suite(.serialized) struct HTTPGuardTests {
    static var limits: HTTPServerLimits {
        var limits = HTTPServerLimits.standard
        limits.headTimeout = 1
        limits.idleTimeout = 1
        limits.maximumConnectionsPerAddress = 4
        limits.maximumConnections = 6
        limits.lingerAfterRefusal = 1
        return limits
    }

    /// A preview server with no camera listed (its routes answer 200 for `/`, 404 elsewhere).
    /// Starting it and `body` block, so they run on a thread of their own: blocking a thread of
    /// Swift's cooperative pool (as wide as the cores) could starve the server, which runs there.
    static func withServer(
        token: String? = nil, allowedHosts: [String] = [], limits: HTTPServerLimits = Self.limits, listen: String = "127.0.0.1:0",
        _ body: @escaping @Sendable (Int) throws -> Void
    ) async throws {
        let server = PreviewServer(cameras: PreviewDirectory(), token: token, allowedHosts: allowedHosts, limits: limits)
        let address = try #require(ListenAddress(listen))
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            Thread {
                done.resume(with: Result {
                    let running = try server.start(on: address)
                    defer { running.stop() }
                    try body(running.port)
                })
            }.start()
        }
    }

    static let host = "127.0.0.1"

    @Test func malformedRequestsGetTheirStatusAndAreClosed() async throws {
        try await Self.withServer { port throws in
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let cases: [(String, [UInt8], Int)] = [
                ("a 100 kB URL", Array("GET /\(String(repeating: "a", count: 100_000)) HTTP/1.1\r\n\(host)\r\n".utf8), 414),
                ("a 1 MB header", Array("GET / HTTP/1.1\r\n\(host)X-Big: \(String(repeating: "b", count: 1 << 20))\r\n\r\n".utf8), 431),
                ("20,000 headers", Array(("GET / HTTP/1.1\r\n\(host)" + String(repeating: "X-A: b\r\n", count: 20_000) + "\r\n").utf8), 431),
                ("an unknown method", Array("BREW /pot HTTP/1.1\r\n\(host)\r\n".utf8), 501),
                ("TLS on the plain port", RawHTTPProbe.tlsClientHello, 400),
                ("bytes that are not HTTP", [0x00, 0x01, 0x02, 0xFF, 0x0D, 0x0A, 0x0D, 0x0A], 400),
                ("POST", Array("POST / HTTP/1.1\r\n\(host)Content-Length: 3\r\n\r\nabc".utf8), 405),
                ("a body on GET", Array("GET / HTTP/1.1\r\n\(host)Content-Length: 5\r\n\r\nhello".utf8), 413),
                ("chunked GET", Array("GET / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8), 413),
                ("HTTP/2.0", Array("GET / HTTP/2.0\r\n\(host)\r\n".utf8), 505),
                ("no Host", Array("GET / HTTP/1.1\r\n\r\n".utf8), 400),
                ("two Hosts", Array("GET / HTTP/1.1\r\n\(host)\(host)\r\n".utf8), 400),
                ("a folded header", Array("GET / HTTP/1.1\r\n\(host)X-A: b\r\n c\r\n\r\n".utf8), 400),
                ("a bad header name", Array("GET / HTTP/1.1\r\n\(host)X A: b\r\n\r\n".utf8), 400),
            ]
            for (what, bytes, status) in cases {
                let outcome = try RawHTTPProbe.exchange(port: port, [bytes])
                #expect(outcome.status == status, "\(what): \(outcome)")
                #expect(outcome.closed, "\(what): the connection stayed open")
                #expect(outcome.text.contains("Connection: close"), "\(what)")
            }
            // The server still answers afterwards.
            #expect(try RawHTTPProbe.get(port: port, "/", host: "127.0.0.1:\(port)").status == 200)
        }
    }

    @Test func wellFormedRequestsStillWorkPipelinedToo() async throws {
        try await Self.withServer { port throws in
            let ok = try RawHTTPProbe.get(port: port, "/", host: "127.0.0.1:\(port)", extra: ["X-Many: \(String(repeating: "c", count: 20_000))"])
            #expect(ok.status == 200, "\(ok)")
            // HTTP/1.0 without Host, empty lines before the request line.
            let old = try RawHTTPProbe.exchange(port: port, "\r\n\r\nGET /nothing HTTP/1.0\r\n\r\n", stopAfterAnswer: true)
            #expect(old.status == 404, "\(old)")
            // Two requests on one connection, the second after the first's answer.
            let two = try RawHTTPProbe.exchange(
                port: port,
                [Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8), Array("GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)],
                pause: 0.5)
            #expect(two.statuses == [200, 404], "\(two)")
        }
    }

    /// DNS rebinding: a name the server is not bound to is refused with 421 on every route and on
    /// the WebSocket upgrade; its own names, with or without the port, are answered.
    @Test func onlyTheServersOwnHostNamesAreAnswered() async throws {
        try await Self.withServer { port throws in
            for path in ["/", "/assets/preview.js", "/cameras/camera", "/cameras/camera/stream.mjpeg", "/cameras/camera/stats.json", "/nothing"] {
                for host in ["attacker.example:\(port)", "attacker.example", "127.0.0.1.nip.io:\(port)", "localhost.attacker.example"] {
                    let refused = try RawHTTPProbe.get(port: port, path, host: host, untilClosed: true)
                    #expect(refused.status == 421, "\(path) for \(host): \(refused)")
                    #expect(refused.closed)
                }
            }
            let upgrade = try RawHTTPProbe.upgrade(port: port, "/cameras/camera/ws", host: "attacker.example:\(port)")
            #expect(upgrade.status == 421, "\(upgrade)")
            // An absolute target names a host too.
            let absolute = try RawHTTPProbe.exchange(
                port: port, "GET http://attacker.example/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            #expect(absolute.status == 421, "\(absolute)")
            for host in ["127.0.0.1:\(port)", "127.0.0.1", "localhost:\(port)", "LOCALHOST", "localhost.", "[::1]:\(port)", "[::1]"] {
                #expect(try RawHTTPProbe.get(port: port, "/", host: host).status == 200, "\(host)")
            }
        }
        // Names added by the user are answered; `*` answers any.
        try await Self.withServer(allowedHosts: ["camera.local", "192.168.1.20"]) { port throws in
            #expect(try RawHTTPProbe.get(port: port, "/", host: "Camera.Local:\(port)").status == 200)
            #expect(try RawHTTPProbe.get(port: port, "/", host: "192.168.1.20").status == 200)
            #expect(try RawHTTPProbe.get(port: port, "/", host: "attacker.example").status == 421)
        }
        try await Self.withServer(allowedHosts: ["*"]) { port throws in
            #expect(try RawHTTPProbe.get(port: port, "/", host: "anything.example").status == 200)
        }
    }

    @Test func hostRules() {
        let loopback = HostAllowlist(listenHost: "127.0.0.1")
        #expect(loopback.listensOnLoopback)
        #expect(loopback.allows("127.0.0.1:8080") && loopback.allows("localhost") && loopback.allows("[::1]:1") && loopback.allows("127.0.0.2"))
        #expect(!loopback.allows("attacker.example:8080") && !loopback.allows("10.0.0.1") && !loopback.allows(""))
        #expect(!loopback.allows("localhost:http") && !loopback.allows("[::1") && !loopback.allows("a b"))
        // Beyond loopback without a token (metrics): addresses and this machine's names, not others.
        let lan = HostAllowlist(listenHost: "0.0.0.0")
        #expect(lan.allows("192.168.1.5:9464") && lan.allows("[fe80::1]:9464"))
        if let name = HostAllowlist.machineNames.first { #expect(lan.allows(name)) }
        #expect(!lan.allows("attacker.example"))
        // With a token: any name, unless names are given.
        #expect(HostAllowlist(listenHost: "0.0.0.0", hasToken: true).allows("attacker.example"))
        let named = HostAllowlist(listenHost: "0.0.0.0", allowedNames: ["cams.example"], hasToken: true)
        #expect(named.allows("cams.example") && named.allows("10.1.2.3") && !named.allows("attacker.example"))
        // The configured name is always answered.
        #expect(HostAllowlist(listenHost: "camera-box").allows("camera-box:8080"))
        for name in ["camera.local", "10.0.0.1", "::1", "[::1]", "*", "my_host"] { #expect(HostAllowlist.isValidName(name), "\(name)") }
        for name in ["", "a b", "host:80", "-bad", "a..b", "é.example"] { #expect(!HostAllowlist.isValidName(name), "\(name)") }
    }

    /// A connection that sends nothing is closed after the head timeout, silently; one that
    /// sends its head a byte at a time (slowloris) gets 408 and is closed; one idle after an
    /// answer is closed after the idle timeout.
    @Test func idleAndSlowConnectionsAreClosed() async throws {
        try await Self.withServer { port throws in
            let silent = try LoopbackSocket.connect(port: port, receiveTimeout: 30)
            defer { close(silent) }
            let quiet = RawHTTPProbe.waitForClose(silent, seconds: 30)
            #expect(quiet.closed && quiet.received.isEmpty, "\(quiet)")

            let trickle = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n".utf8).map { [$0] } + Array(repeating: Array("X-A: b\r\n".utf8), count: 200)
            let slow = try RawHTTPProbe.exchange(port: port, trickle, pause: 0.05)
            #expect(slow.status == 408, "\(slow)")
            #expect(slow.closed)

            let kept = try LoopbackSocket.connect(port: port, receiveTimeout: 30)
            defer { close(kept) }
            let request = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(kept, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            let afterAnswer = RawHTTPProbe.waitForClose(kept, seconds: 30)
            #expect(afterAnswer.closed, "\(afterAnswer)")
            #expect(afterAnswer.received.hasPrefix("HTTP/1.1 200"), "\(afterAnswer.received.prefix(200))")
        }
    }

    /// More connections from one address than allowed: the next one gets 503 and is closed; a
    /// place freed is taken again. The total is bounded the same way.
    @Test func connectionsPerAddressAndInAllAreBounded() async throws {
        var limits = Self.limits
        limits.headTimeout = 60
        try await Self.withServer(limits: limits) { [limits] port throws in
            let held = try RawHTTPProbe.hold(port: port, count: limits.maximumConnectionsPerAddress)
            // The server counts a connection once it accepted it: wait until the next is refused.
            var refused: RawHTTPProbe.Outcome?
            for _ in 0..<100 {
                let outcome = try RawHTTPProbe.get(port: port, "/", host: "127.0.0.1", untilClosed: true)
                if outcome.status == 503 {
                    refused = outcome
                    break
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(refused?.text.contains("your address holds \(limits.maximumConnectionsPerAddress) connections") == true, "\(String(describing: refused))")
            #expect(refused?.closed == true)
            for fd in held { close(fd) }
            var answered = false
            for _ in 0..<100 where !answered {
                answered = try RawHTTPProbe.get(port: port, "/", host: "127.0.0.1").status == 200
                if !answered { Thread.sleep(forTimeInterval: 0.1) }
            }
            #expect(answered, "a freed place was not taken again")
        }
        limits.maximumConnectionsPerAddress = 100
        try await Self.withServer(limits: limits) { [limits] port throws in
            let held = try RawHTTPProbe.hold(port: port, count: limits.maximumConnections)
            defer { for fd in held { close(fd) } }
            var refused: RawHTTPProbe.Outcome?
            for _ in 0..<100 {
                let outcome = try RawHTTPProbe.get(port: port, "/", host: "127.0.0.1")
                if outcome.status == 503 {
                    refused = outcome
                    break
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(refused?.text.contains("holds its \(limits.maximumConnections) connections") == true, "\(String(describing: refused))")
        }
    }
}
