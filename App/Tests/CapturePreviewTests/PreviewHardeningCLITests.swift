import Foundation
import Testing

import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `cvcam preview` end to end against the issue's reproducers (issue #30, items 2 and 4), with
/// the binary's own limits: a rebinding host name is refused on the stream and the WebSocket,
/// malformed requests get a status line, an idle connection is closed, and the WebSocket still
/// works for the page's own host.
@Suite(.serialized) struct PreviewHardeningCLITests {
    static let scene = "synthetic:size=160x120,fps=10,background=gray"

    @Test func dnsRebindingMalformedRequestsAndIdleConnections() throws {
        let (server, port) = try PreviewServerTests.startPreview(["--input", Self.scene, "--listen", "127.0.0.1:0"])
        defer { server.kill() }
        // The issue's reproducer: curl -H 'Host: attacker.example:PORT' …/stream.mjpeg.
        let rebound = try RawHTTPProbe.get(port: port, "/cameras/camera/stream.mjpeg", host: "attacker.example:\(port)", untilClosed: true)
        #expect(rebound.status == 421, "\(rebound)")
        let reboundSocket = try RawHTTPProbe.upgrade(port: port, "/cameras/camera/ws", host: "attacker.example:\(port)")
        #expect(reboundSocket.status == 421, "\(reboundSocket)")
        // The page's own host: the WebSocket upgrades and messages follow.
        let socket = try RawHTTPProbe.upgrade(port: port, "/cameras/camera/ws", host: "127.0.0.1:\(port)")
        #expect(socket.status == 101, "\(socket)")
        let afterHead = socket.text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        #expect(afterHead.contains("\"type\""), "no WebSocket message after the upgrade: \(socket)")

        let longURL = try RawHTTPProbe.exchange(port: port, "GET /\(String(repeating: "a", count: 100_000)) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(longURL.status == 414, "\(longURL)")
        let tls = try RawHTTPProbe.exchange(port: port, [RawHTTPProbe.tlsClientHello])
        #expect(tls.status == 400, "\(tls)")
        let method = try RawHTTPProbe.exchange(port: port, "BREW / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(method.status == 501, "\(method)")

        // An idle connection is closed by the server (its head timeout), well within a minute.
        let idle = try LoopbackSocket.connect(port: port, receiveTimeout: 60)
        defer { close(idle) }
        #expect(RawHTTPProbe.waitForClose(idle, seconds: 60).closed, "an idle connection stayed open")
    }

    @Test func namesAddedWithAllowHostAreAnswered() throws {
        let (server, port) = try PreviewServerTests.startPreview([
            "--input", Self.scene, "--listen", "127.0.0.1:0", "--allow-host", "camera-box.example", "--allow-host", "10.1.2.3",
        ])
        defer { server.kill() }
        #expect(try RawHTTPProbe.get(port: port, "/cameras/camera/stats.json", host: "camera-box.example:\(port)").status == 200)
        #expect(try RawHTTPProbe.get(port: port, "/cameras/camera/stats.json", host: "10.1.2.3").status == 200)
        #expect(try RawHTTPProbe.get(port: port, "/cameras/camera/stats.json", host: "attacker.example").status == 421)
        let bad = try CLI.run(["preview", "--input", Self.scene, "--allow-host", "host:80"])
        #expect(bad.status == 64 && bad.stderr.contains("--allow-host"), "\(bad.stderr)")
    }
}
