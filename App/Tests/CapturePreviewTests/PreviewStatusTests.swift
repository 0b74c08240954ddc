import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
import AppTestSupport

/// The preview speaks to the people watching (issue #30, item 15): why a camera is not
/// streaming (its last error, never a password), display names, status and thumbnails on the
/// list, plain words for the controls, clock times for live cameras.
@Suite(.serialized) struct PreviewStatusTests {
    static let password = "S3cretPW"
    static let failing = "http://admin:\(password)@127.0.0.1:1/video.mjpeg"

    static func json(_ body: String) -> Any? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) }

    /// The width and height in a JPEG's start-of-frame marker.
    static func jpegSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        var i = 2
        while i + 9 < bytes.count {
            guard bytes[i] == 0xFF else { return nil }
            let marker = bytes[i + 1]
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            if (0xC0...0xC3).contains(marker) {
                return (Int(bytes[i + 7]) << 8 | Int(bytes[i + 8]), Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]))
            }
            i += 2 + length
        }
        return nil
    }

    /// A serve camera that cannot open its input: its status, its page's stream and the list
    /// say why (the last error, the URL without its password); the running camera streams, is
    /// listed by its display name with a thumbnail.
    @Test func aCameraThatIsNotStreamingSaysWhyAndTheListShowsEachCamerasStatus() throws {
        guard let run = try ServePreviewTests.Running("""
            stats: 0
            preview: {listen: 127.0.0.1:0, streamFps: 10}
            cameras:
              - name: door
                displayName: Front door
                input: "\(ServePreviewTests.scene(10))"
                codes: [qr]
              - name: gate
                displayName: Back gate
                input: "\(Self.failing)"
                codes: [qr]
            """)
        else { return }
        defer { run.stop() }
        // The failing camera's status: offline, with its error.
        var status: [String: Any] = [:]
        let end = Date(timeIntervalSinceNow: 60)
        while Date() < end {
            let answer = try PreviewServerTests.get("/cameras/gate/status.json", port: run.port)
            status = Self.json(answer.body) as? [String: Any] ?? [:]
            if status["state"] as? String == "offline" { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(status["state"] as? String == "offline", "\(status)")
        #expect(status["displayName"] as? String == "Back gate")
        let reason = try #require(status["reason"] as? String)
        #expect(reason.contains("127.0.0.1:1") && reason.contains("trying again"), "\(reason)")
        #expect(!reason.contains(Self.password), "\(reason)")
        // Its stream answers 503 saying why, without the password.
        let stream = try PreviewServerTests.get("/cameras/gate/stream.mjpeg", port: run.port)
        #expect(stream.status == 503)
        #expect(stream.body.contains("not streaming") && !stream.body.contains(Self.password), "\(stream.body)")

        // The list: display names, states and the reason; a thumbnail for the running camera.
        #expect(try ServePreviewTests.waitFor(200, "/cameras/door/stats.json", port: run.port))
        let list = try PreviewServerTests.get("/", port: run.port)
        #expect(list.status == 200)
        for text in ["Front door", "Back gate", "Streaming", "Not streaming", "/cameras/door/thumbnail.jpg"] {
            #expect(list.body.contains(text), "\(text) not on the list")
        }
        #expect(!list.body.contains(Self.password))
        let statuses = try #require(Self.json(try PreviewServerTests.get("/cameras.json", port: run.port).body) as? [[String: Any]])
        #expect(statuses.map { $0["name"] as? String } == ["door", "gate"])
        #expect(statuses.map { $0["state"] as? String } == ["live", "offline"])
        // The page of the failing camera has its place for the reason.
        let page = try PreviewServerTests.get("/cameras/gate", port: run.port)
        #expect(page.body.contains("id=\"offline\"") && page.body.contains("Back gate"))
    }

    /// Thumbnails: a JPEG of at most 320x240 made on demand from the next frame, the same bytes
    /// for requests within 2 s; nothing is encoded while nobody watches or asks.
    @Test func thumbnailsAreSmallMadeOnDemandAndKept() throws {
        let (server, port) = try PreviewServerTests.startPreview(["--input", "synthetic:size=640x480,fps=10,background=bars"])
        defer { server.kill() }
        #expect(try ServePreviewTests.waitFor(200, "/cameras/camera/stats.json", port: port))
        // Nobody watches: nothing encoded.
        let stats = Self.json(try PreviewServerTests.get("/cameras/camera/stats.json", port: port).body) as? [String: Any]
        #expect(stats?["encodedFrames"] as? Int == 0)
        #expect(stats?["thumbnails"] as? Int == 0)
        let first = try Self.thumbnail(port: port)
        let madeAt = Date()
        #expect(first.starts(with: [0xFF, 0xD8, 0xFF]))
        let size = try #require(Self.jpegSize(first))
        #expect(size.width <= 320 && size.height <= 240 && size.width * 3 == size.height * 4, "\(size)")
        let second = try Self.thumbnail(port: port)
        let third = try Self.thumbnail(port: port)
        if Date().timeIntervalSince(madeAt) < MJPEGFanOut.thumbnailMaxAge {
            #expect(second == first && third == first, "a thumbnail younger than 2 s was made again")
            let after = Self.json(try PreviewServerTests.get("/cameras/camera/stats.json", port: port).body) as? [String: Any]
            #expect(after?["thumbnails"] as? Int == 1)
            #expect(after?["encodedFrames"] as? Int == 0)
        }
    }

    static func thumbnail(port: Int) throws -> [UInt8] {
        let fd = try LoopbackSocket.connect(port: port, receiveTimeout: 10)
        defer { close(fd) }
        let request = Array("GET /cameras/camera/thumbnail.jpg HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        guard let split = received.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw PreviewBrowserRun.Failure(description: "no answer for the thumbnail")
        }
        let head = String(decoding: received[..<split.lowerBound], as: UTF8.self)
        guard head.hasPrefix("HTTP/1.1 200"), head.lowercased().contains("content-type: image/jpeg") else {
            throw PreviewBrowserRun.Failure(description: "thumbnail: \(head)")
        }
        return Array(received[split.upperBound...])
    }

    /// Home Assistant's MJPEG camera cannot send a bearer token: `?token=` on the stream's URL
    /// opens it (the documented form for third-party clients).
    @Test func theStreamOpensWithTheTokenInItsURL() throws {
        let token = PreviewServerTests.token
        let (server, port) = try PreviewServerTests.start(["--listen", "0.0.0.0:0", "--http-token", token])
        defer { server.kill() }
        #expect(try ServePreviewTests.waitFor(401, "/cameras/camera/stream.mjpeg", port: port))
        // The stream never ends: read its head and first bytes only.
        let fd = try LoopbackSocket.connect(port: port, receiveTimeout: 10)
        defer { close(fd) }
        let request = Array("GET /cameras/camera/stream.mjpeg?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while received.firstRange(of: Array("Content-Type: image/jpeg".utf8)) == nil {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        let head = String(decoding: received.prefix(2000), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        #expect(head.lowercased().contains("content-type: multipart/x-mixed-replace"), "\(head)")
        #expect(head.contains("Content-Type: image/jpeg"), "no frame followed: \(head)")
    }

    /// The controls in plain words, each AVFoundation name kept as a tooltip.
    @Test func theControlsSpeakPlainlyWithTheLibrarysNamesAsTooltips() {
        let page = PreviewAssets.page(name: "door", displayName: "Front door", base: "/cameras/door", cameraCount: 2)
        for plain in ["Fit: whole picture", "Fill: cropped", "Stretch", "Look in the whole picture", "Mirror", "Turn", "Size"] {
            #expect(page.contains(plain), "\(plain)")
        }
        for tooltip in ["videoGravity = resizeAspect", "rectOfInterest", "videoRotationAngle", "isVideoMirrored"] {
            #expect(page.contains("title=\"") && page.contains(tooltip), "\(tooltip)")
        }
        for jargon in [">Gravity ", ">View ", "Whole frame</button>", "(resizeAspect)</option>"] {
            #expect(!page.contains(jargon), "\(jargon)")
        }
        #expect(page.contains("Front door") && page.contains("href=\"/\""))
    }

    /// Events of a live camera carry their wall-clock time (the page shows the time of day);
    /// a file's events their position.
    @Test func liveCamerasEventsCarryTheirClockTime() throws {
        let now = WallClock.monotonicNow()
        let live = PreviewMessage.Event(time: now, clock: .monotonic, live: true, text: "face 1 came into view")
        let wall = try #require(live.wallTime)
        #expect(wall.hasPrefix(LocalTimestamp(Date()).rfc3339.prefix(13)), "\(wall)")
        // A network stream's times are its own: the moment it is reported.
        let stream = PreviewMessage.Event(time: MediaTime(seconds: 3), clock: .media, live: true, text: "x")
        #expect(stream.wallTime?.hasPrefix(LocalTimestamp(Date()).rfc3339.prefix(13)) == true)
        #expect(PreviewMessage.Event(time: MediaTime(seconds: 3), clock: .media, live: false, text: "x").wallTime == nil)
        // The observer of a live source stamps its events.
        let observer = PreviewMetadataObserver(clock: .media, live: true)
        observer.post(.init(time: MediaTime(seconds: 1), clock: observer.clock, live: observer.isLive, text: "photo"))
        #expect(observer.recentEvents.first?.wallTime != nil)
        #expect(PreviewMessage.json(live).contains("\"wallTime\""))
        #expect(PreviewAssets.script.contains("toLocaleTimeString"))
    }

    /// Credentials never reach a page, whatever the URL's scheme.
    @Test func urlsLoseTheirCredentialsBeforeTheyReachAPage() {
        let text = "cannot open rtsp://admin:p@ss@cam.local:554/s and http://u:pw@10.0.0.2/x; mqtt://host/ ok"
        let shown = PreviewDirectory.withoutURLCredentials(text)
        #expect(shown == "cannot open rtsp://***@cam.local:554/s and http://***@10.0.0.2/x; mqtt://host/ ok")
    }
}
