import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `/metrics` against hostile clients (issue #30, items 2 and 4): the same guard as the
/// preview's, in front of the metrics server, checked here with raw loopback sockets.
@Suite(.serialized) struct MetricsServerGuardTests {
    /// Runs the server on a loopback port with short timeouts; `body` runs on a thread of its
    /// own (blocking sockets) while the server runs on its own executor.
    static func withServer(allowedHosts: [String] = [], _ body: @escaping @Sendable (Int) throws -> Void) async throws {
        var limits = HTTPServerLimits.standard
        limits.headTimeout = 1
        limits.idleTimeout = 1
        limits.lingerAfterRefusal = 1
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let metrics = ServeMetrics()
        metrics.camera("door").update(frames: 1, analysed: 1, skipped: 0)
        let server = try MetricsServer(address: "127.0.0.1:0", metrics: metrics, allowedHosts: allowedHosts, limits: limits) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let running = Task(executorPreference: OwnQueueExecutor()) { try await server.run() }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            Thread { done.resume(with: Result { try body(port) }) }.start()
        }
        running.cancel()
        do { try await running.value } catch is CancellationError {}
    }

    @Test(.timeLimit(.minutes(10))) func malformedRequestsGetTheirStatusAndAreClosed() async throws {
        try await Self.withServer { port throws in
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let cases: [(String, [UInt8], Int)] = [
                ("a 100 kB URL", Array("GET /\(String(repeating: "a", count: 100_000)) HTTP/1.1\r\n\(host)\r\n".utf8), 414),
                ("a 1 MB header", Array("GET /metrics HTTP/1.1\r\n\(host)X-Big: \(String(repeating: "b", count: 1 << 20))\r\n\r\n".utf8), 431),
                ("20,000 headers", Array(("GET /metrics HTTP/1.1\r\n\(host)" + String(repeating: "X-A: b\r\n", count: 20_000) + "\r\n").utf8), 431),
                ("an unknown method", Array("BREW /metrics HTTP/1.1\r\n\(host)\r\n".utf8), 501),
                ("TLS on the plain port", RawHTTPProbe.tlsClientHello, 400),
                ("DELETE", Array("DELETE /metrics HTTP/1.1\r\n\(host)\r\n".utf8), 405),
            ]
            for (what, bytes, status) in cases {
                let outcome = try RawHTTPProbe.exchange(port: port, [bytes])
                #expect(outcome.status == status, "\(what): \(outcome)")
                #expect(outcome.closed, "\(what): the connection stayed open")
            }
            let ok = try RawHTTPProbe.get(port: port, "/metrics", host: "127.0.0.1:\(port)")
            #expect(ok.status == 200 && ok.text.contains("cvcam_frames_captured_total"), "\(ok)")
            // Two requests in one packet: two answers, in order.
            let two = try RawHTTPProbe.exchange(
                port: port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\nGET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            #expect(two.statuses == [200, 404], "\(two)")
        }
    }

    @Test(.timeLimit(.minutes(10))) func onlyItsOwnHostNamesAreAnswered() async throws {
        try await Self.withServer { port throws in
            let refused = try RawHTTPProbe.get(port: port, "/metrics", host: "attacker.example:\(port)")
            #expect(refused.status == 421, "\(refused)")
            #expect(refused.text.contains("metrics.allowedHosts"))
            for host in ["127.0.0.1:\(port)", "localhost", "[::1]:\(port)"] {
                #expect(try RawHTTPProbe.get(port: port, "/metrics", host: host).status == 200, "\(host)")
            }
        }
        try await Self.withServer(allowedHosts: ["prometheus.lan"]) { port throws in
            let named = try RawHTTPProbe.get(port: port, "/metrics", host: "prometheus.lan:\(port)")
            #expect(named.status == 200)
        }
    }

    @Test(.timeLimit(.minutes(10))) func idleAndSlowConnectionsAreClosed() async throws {
        try await Self.withServer { port throws in
            let silent = try LoopbackSocket.connect(port: port, receiveTimeout: 30)
            defer { close(silent) }
            let quiet = RawHTTPProbe.waitForClose(silent, seconds: 30)
            #expect(quiet.closed && quiet.received.isEmpty, "\(quiet)")
            let trickle = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8).map { [$0] }
            let slow = try RawHTTPProbe.exchange(port: port, trickle + [Array("X-A: b\r\n".utf8)], pause: 0.1)
            #expect(slow.status == 408, "\(slow)")
            #expect(slow.closed)
        }
    }
}
