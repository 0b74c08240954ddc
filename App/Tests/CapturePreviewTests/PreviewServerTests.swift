import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
import AppTestSupport

/// `cvcam preview`'s server without a browser: the token, path traversal, other origins, the
/// options, and the geometry messages the page is sent.
@Suite(.serialized) struct PreviewServerTests {
    static let scene = "synthetic:size=320x240,fps=10,background=gray"
    static let token = "t0ken-for-the-tests_123"

    /// A raw HTTP/1.1 exchange over loopback: the request goes out byte for byte (no client
    /// normalises `..` away), and the answer is read until the server closes or 3 s pass.
    static func exchange(port: Int, _ request: String, timeout: Int = 3) throws -> (status: Int, head: String, body: String) {
        let fd = try LoopbackSocket.connect(port: port, receiveTimeout: timeout)
        defer { close(fd) }
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
            // A complete answer with Content-Length (the server keeps the connection open).
            let text = String(decoding: received, as: UTF8.self)
            if let split = text.range(of: "\r\n\r\n"),
                let length = text[..<split.lowerBound].split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") })
                    .flatMap({ Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }),
                received.count - text[..<split.upperBound].utf8.count >= length
            {
                break
            }
            if text.contains("\r\n\r\n"), text.lowercased().contains("upgrade: websocket") { break }
        }
        let text = String(decoding: received, as: UTF8.self)
        let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return (status, head, String(text.dropFirst(head.count)))
    }

    static func get(_ path: String, port: Int, headers: [String] = [], timeout: Int = 3) throws -> (status: Int, head: String, body: String) {
        let lines = ["GET \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)"] + headers + ["Connection: close", "", ""]
        return try exchange(port: port, lines.joined(separator: "\r\n"), timeout: timeout)
    }

    static func start(_ extra: [String]) throws -> (RunningCLI, Int) {
        try startPreview(["--input", scene] + extra)
    }

    /// Runs `cvcam preview` with `arguments` and returns it with the port it printed.
    static func startPreview(_ arguments: [String], environment: [String: String] = [:]) throws -> (RunningCLI, Int) {
        let server = try RunningCLI(["preview"] + arguments, environment: environment)
        guard let line = server.waitForLine(containing: "preview: ", timeout: 60),
            let url = URL(string: String(line.dropFirst("preview: ".count))), let port = url.port
        else {
            server.kill()
            throw PreviewBrowserRun.Failure(description: "preview did not start: \(server.errorOutput)")
        }
        return (server, port)
    }

    /// Bound beyond loopback, every request and the WebSocket upgrade need the token; a good one
    /// in the query sets an HttpOnly, SameSite=Strict cookie that then suffices.
    @Test func beyondLoopbackEveryRequestNeedsTheToken() throws {
        let (server, port) = try Self.start(["--listen", "0.0.0.0:0", "--http-token", Self.token])
        defer { server.kill() }
        for path in ["/", "/cameras/camera", "/assets/preview.js", "/cameras/camera/stream.mjpeg", "/cameras/camera/photos/1.jpg"] {
            #expect(try Self.get(path, port: port).status == 401, "\(path) without a token")
            #expect(try Self.get(path, port: port, headers: ["Authorization: Bearer wrong-token-1234"]).status == 401)
        }
        let upgrade = [
            "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
        ]
        let refused = try Self.exchange(
            port: port, (["GET /cameras/camera/ws HTTP/1.1", "Host: 127.0.0.1:\(port)"] + upgrade + ["", ""]).joined(separator: "\r\n"))
        // Hummingbird answers a declined upgrade with 400 whatever the middleware said; what
        // matters is that no socket opens.
        #expect(refused.status == 400, "WebSocket without a token: \(refused.head)")
        let accepted = try Self.exchange(
            port: port,
            (["GET /cameras/camera/ws HTTP/1.1", "Host: 127.0.0.1:\(port)", "Authorization: Bearer \(Self.token)"] + upgrade + ["", ""])
                .joined(separator: "\r\n"))
        #expect(accepted.status == 101, "WebSocket with the token: \(accepted.head)")

        #expect(try Self.get("/cameras/camera", port: port, headers: ["Authorization: Bearer \(Self.token)"]).status == 200)
        let viaQuery = try Self.get("/cameras/camera?token=\(Self.token)", port: port)
        #expect(viaQuery.status == 200)
        // The cookie is named after the port: browsers share cookies between a host's ports.
        #expect(viaQuery.head.contains("cvcam_preview_\(port)=\(Self.token); Path=/; HttpOnly; SameSite=Strict"))
        #expect(try Self.get("/assets/preview.js", port: port, headers: ["Cookie: cvcam_preview_\(port)=\(Self.token)"]).status == 200)
        #expect(try Self.get("/assets/preview.js", port: port, headers: ["Cookie: cvcam_preview_\(port)=\(Self.token)x"]).status == 401)
        #expect(try Self.get("/assets/preview.js", port: port, headers: ["Cookie: cvcam_preview_\(port + 1)=\(Self.token)"]).status == 401)
    }

    /// Only the served paths exist: `..` in any spelling, and anything else, is 404.
    @Test func pathTraversalIsNotFound() throws {
        let (server, port) = try Self.start(["--listen", "127.0.0.1:0"])
        defer { server.kill() }
        #expect(try Self.get("/assets/preview.css", port: port).status == 200)
        for path in [
            "/assets/../../../../etc/passwd", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/assets/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            "/cameras/camera/../../../etc/passwd", "/cameras/..%2f..%2fetc%2fpasswd/", "/cameras/camera/photos/..%2f..%2fetc%2fpasswd",
            "/etc/passwd", "/Package.swift", "/cameras/other", "/assets/",
        ] {
            let answer = try Self.get(path, port: port)
            #expect(answer.status == 404, "\(path): \(answer.head)")
            #expect(!answer.body.contains("root:"))
        }
    }

    /// No CORS header is ever sent, and a request from another origin is refused; the page's
    /// answers forbid sniffing, referrers and foreign scripts.
    @Test func otherOriginsAreRefused() throws {
        let (server, port) = try Self.start(["--listen", "127.0.0.1:0"])
        defer { server.kill() }
        let page = try Self.get("/cameras/camera", port: port)
        #expect(page.status == 200)
        #expect(!page.head.lowercased().contains("access-control-allow-origin"))
        #expect(page.head.contains("X-Content-Type-Options: nosniff"))
        #expect(page.head.contains("Content-Security-Policy: default-src 'none'; script-src 'self'"))
        let external = try NSRegularExpression(pattern: #"(src|href)\s*=\s*"(https?:)?//"#)
        #expect(
            external.firstMatch(in: page.body, range: NSRange(page.body.startIndex..., in: page.body)) == nil,
            "assets come from the binary, no CDN: \(page.body)")
        #expect(page.body.contains(#"src="/assets/preview.js""#))
        let foreign = try Self.get("/cameras/camera", port: port, headers: ["Origin: http://evil.example"])
        #expect(foreign.status == 403)
        #expect(!foreign.head.lowercased().contains("access-control-allow-origin"))
        #expect(try Self.get("/cameras/camera", port: port, headers: ["Origin: http://127.0.0.1:\(port)"]).status == 200)
    }

    @Test func listeningBeyondLoopbackWithoutATokenIsAUsageError() throws {
        let result = try CLI.run(["preview", "--input", Self.scene, "--listen", "0.0.0.0:8080"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--http-token"))
        let short = try CLI.run(["preview", "--input", Self.scene, "--http-token", "short"])
        #expect(short.status == 64)
        #expect(short.stderr.contains("8 to 256 characters"))
        for bad in ["8080", "host:", "::1:80", "127.0.0.1:65536", "[::1]80"] {
            let r = try CLI.run(["preview", "--input", Self.scene, "--listen", bad])
            #expect(r.status == 64, "--listen \(bad)")
            #expect(r.stderr.contains("--listen must be HOST:PORT"))
        }
    }

    @Test func listenAddressesParse() {
        #expect(ListenAddress("127.0.0.1:8080") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(ListenAddress(":0") == ListenAddress(host: "127.0.0.1", port: 0))
        #expect(ListenAddress("[::1]:9000") == ListenAddress(host: "::1", port: 9000))
        #expect(ListenAddress("[::1]:9000")?.isLoopback == true)
        #expect(ListenAddress("0.0.0.0:80")?.isLoopback == false)
        #expect(ListenAddress("192.168.1.2:80")?.isLoopback == false)
        #expect(ListenAddress("localhost:80")?.isLoopback == true)
        #expect(ListenAddress("a b:80") == nil)
    }

    /// The token comparison, the origin check and HTML escaping, directly.
    @Test func accessHelpers() {
        typealias Access = PreviewAccess
        #expect(Access.constantTimeEqual("abcdefgh", "abcdefgh"))
        #expect(!Access.constantTimeEqual("abcdefgh", "abcdefgx"))
        #expect(!Access.constantTimeEqual("abcdefgh", "abcdefghi"))
        #expect(Access.sameOrigin("http://127.0.0.1:8080", host: "127.0.0.1:8080"))
        #expect(!Access.sameOrigin("http://127.0.0.1:8081", host: "127.0.0.1:8080"))
        #expect(!Access.sameOrigin("null", host: "127.0.0.1:8080"))
        #expect(PreviewAssets.escaped("<img src=x onerror='a(1)'>&\"") == "&lt;img src=x onerror=&#39;a(1)&#39;&gt;&amp;&quot;")
    }

    /// Through the server's JSON: a face at a known device-space place, every gravity x rotation
    /// x mirroring on the connection and two view sizes; the geometry message's layer box, frame
    /// rect and rect of interest are the library's conversions, and a tap and a drag go back
    /// through `captureDevicePointConverted` and `metadataOutputRectConverted`.
    @Test func geometryMessagesAreTheLibrarysConversions() throws {
        let frame = CaptureDevice.Dimensions(width: 320, height: 240)
        let device = try CaptureDevice(
            syntheticScene: SyntheticScene(size: frame, frameRate: 10, frameCount: 1, background: .color(red: 0, green: 0, blue: 0), sprites: []))
        let fixture = try UnstartedPreviewCamera(device: device)
        let camera = fixture.camera, input = fixture.input, metadata = fixture.metadata
        let truth = CGRect(x: 0.25, y: 0.125, width: 0.2, height: 0.3)
        let face = MetadataFaceObject(bounds: truth, faceID: 7, confidence: 0.9, time: .zero, inputID: input.id)
        let code = MetadataMachineReadableCodeObject(
            type: .qr, bounds: CGRect(x: 0.6, y: 0.5, width: 0.2, height: 0.2), stringValue: "<b>x</b>", payload: Array("<b>x</b>".utf8),
            corners: [CGPoint(x: 0.6, y: 0.5), CGPoint(x: 0.8, y: 0.5), CGPoint(x: 0.8, y: 0.7), CGPoint(x: 0.6, y: 0.7)],
            quality: 1, time: .zero, inputID: input.id)
        camera.observer.metadataOutput(metadata, didOutput: [face, code], from: fixture.connection)
        metadata.rectOfInterest = CGRect(x: 0.1, y: 0.1, width: 0.5, height: 0.6)
        var checked = 0
        for (w, h) in [(640.0, 480.0), (300.0, 500.0)] {
            for gravity in CaptureVideoPreviewLayer.VideoGravity.allCases {
                for rotation in [0.0, 90, 180, 270] {
                    for mirrored in [false, true] {
                        try camera.setConnection(rotation: rotation, mirrored: mirrored)
                        let view = PreviewCamera.View(width: w, height: h, gravity: gravity)
                        let json = PreviewMessage.json(try camera.geometry(for: view))
                        let message = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
                        let layer = try CaptureVideoPreviewLayer(
                            bounds: CGRect(x: 0, y: 0, width: w, height: h), videoGravity: gravity, videoRotationAngle: rotation,
                            isVideoMirrored: mirrored, frameDimensions: frame)
                        func rect(_ any: Any?) throws -> CGRect {
                            let d = try #require(any as? [String: Double])
                            return CGRect(x: d["x"]!, y: d["y"]!, width: d["width"]!, height: d["height"]!)
                        }
                        let faces = try #require(message["faces"] as? [[String: Any]])
                        let box = try rect(faces.first?["bounds"])
                        let expected = layer.layerRectConverted(fromMetadataOutputRect: truth)
                        #expect(PreviewEndToEnd.PreviewBrowserTests.within(box, expected, 1e-9), "\(w)x\(h) \(gravity) \(rotation) \(mirrored)")
                        #expect(PreviewEndToEnd.PreviewBrowserTests.within(try rect(message["video"]), layer.layerRectConverted(fromMetadataOutputRect: CGRect(x: 0, y: 0, width: 1, height: 1)), 1e-9))
                        #expect(PreviewEndToEnd.PreviewBrowserTests.within(try rect(message["rectOfInterest"]), layer.layerRectConverted(fromMetadataOutputRect: metadata.rectOfInterest), 1e-9))
                        let codes = try #require(message["codes"] as? [[String: Any]])
                        let corners = try #require(codes.first?["corners"] as? [[String: Double]])
                        let expectedCorners = code.corners.map(layer.layerPointConverted(fromCaptureDevicePoint:))
                        #expect(corners.count == 4)
                        for (c, e) in zip(corners, expectedCorners) {
                            #expect(abs(c["x"]! - Double(e.x)) < 1e-9 && abs(c["y"]! - Double(e.y)) < 1e-9)
                        }
                        #expect(codes.first?["text"] as? String == "<b>x</b>", "JSON carries the payload as it is; the page sets it as text")
                        #expect(message["rotation"] as? Double == rotation && message["mirrored"] as? Bool == mirrored)

                        let tapped = CGPoint(x: w * 0.3, y: h * 0.6)
                        let tap = try camera.tap(at: tapped, in: view)
                        let point = layer.captureDevicePointConverted(fromLayerPoint: tapped)
                        #expect(tap.devicePoint == PreviewMessage.Point(point))
                        #expect(!tap.pointOfInterestSet && !tap.focusPointOfInterestSet && !tap.exposurePointOfInterestSet)
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 48)

        // A drag over the view's centre quarter, at 90° mirrored: the rect of interest.
        try camera.setConnection(rotation: 90, mirrored: true)
        let view = PreviewCamera.View(width: 640, height: 480, gravity: .resizeAspect)
        let dragged = CGRect(x: 200, y: 100, width: 200, height: 150)
        try camera.setRectOfInterest(fromLayerRect: dragged, in: view)
        let layer = try CaptureVideoPreviewLayer(
            bounds: CGRect(x: 0, y: 0, width: 640, height: 480), videoGravity: .resizeAspect, videoRotationAngle: 90,
            isVideoMirrored: true, frameDimensions: frame)
        #expect(PreviewEndToEnd.PreviewBrowserTests.within(metadata.rectOfInterest, layer.metadataOutputRectConverted(fromLayerRect: dragged), 1e-9))
        #expect(throws: (any Error).self) { try camera.setRectOfInterest(fromLayerRect: CGRect(x: 0, y: 0, width: 20, height: 20), in: view) }
        camera.resetRectOfInterest()
        #expect(metadata.rectOfInterest == CGRect(x: 0, y: 0, width: 1, height: 1))
    }
}
