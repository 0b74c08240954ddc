import CaptureKit
import Foundation
import Synchronization
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
import AppTestSupport

/// The daemon stand-in for a broker: publishes are kept, nothing connects (the broker itself is
/// tested in ServeBrokerTests).
final class QuietBrokerLink: ServeBrokerLink {
    let published = RecordingPublisher()
    func publish(topic: String, payload: [UInt8], retain: Bool, latestOnly: Bool) {
        published.publish(topic: topic, payload: payload, retain: retain, latestOnly: latestOnly)
    }
    func start() {}
    func subscribe(_ filter: String, handler: @escaping @Sendable (String, [UInt8]) -> Void) {}
    func onConnect(_ handler: @escaping @Sendable () -> Void) {}
    func flush(timeout: Double) -> Bool { true }
    func stop() {}
}

/// `cvcam serve`'s preview pages: every configured camera has its page, its stream follows
/// the camera's sessions (a failure, a reload), and a camera without a session answers 503.
@Suite(.serialized) struct ServePreviewTests {
    static func scene(_ fps: Int) -> String {
        "synthetic:size=320x240,fps=\(fps),background=gray,qr=SERVE-PREVIEW"
    }

    static func cameras(_ list: [(name: String, input: String)]) -> String {
        "stats: 0\npreview: {listen: 127.0.0.1:0, streamFps: 10}\ncameras:\n"
            + list.map { "  - name: \($0.name)\n    input: \"\($0.input)\"\n    codes: [qr]\n" }.joined()
    }

    /// A `cvcam serve` process with its preview, against a Mosquitto on loopback. A process of
    /// its own: the preview server must not share the test runner's concurrency pool with tests
    /// that block it.
    final class Running: Sendable {
        let daemon: ServeProcess
        let broker: MosquittoTestBroker
        let file: URL
        let dir: URL
        let mqtt: String
        let port: Int

        init?(_ cameras: String) throws {
            guard let broker = try MosquittoTestBroker.start() else { return nil }
            self.broker = broker
            dir = try ServeProcess.folder()
            file = dir.appendingPathComponent("serve.yaml")
            mqtt = try ServeProcess.mqttSection(broker, dir: dir)
            try (mqtt + "\n" + cameras).write(to: file, atomically: true, encoding: .utf8)
            daemon = try ServeProcess(config: file.path)
            let end = Date(timeIntervalSinceNow: 60)
            var found: Int?
            while found == nil, Date() < end, daemon.process.isRunning {
                found = daemon.stdout.firstMatch(of: /preview: http:\/\/127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) }
                if found == nil { Thread.sleep(forTimeInterval: 0.05) }
            }
            guard let found else {
                throw WebSocketProbe.Failure(description: "serve did not announce its preview: \(daemon.stderr)")
            }
            port = found
        }

        /// Writes the cameras and sends SIGHUP (the daemon reloads on its own time).
        func reload(_ cameras: String) throws {
            try (mqtt + "\n" + cameras).write(to: file, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
        }

        func stop() {
            daemon.signal(SIGTERM)
            #expect(daemon.waitForExit(20) == 0)
            try? FileManager.default.removeItem(at: dir)
        }
    }

    static func status(_ path: String, port: Int) throws -> Int { try PreviewServerTests.get(path, port: port).status }

    /// Waits up to `seconds` for `path` to answer `status`.
    static func waitFor(_ status: Int, _ path: String, port: Int, seconds: Double = 30) throws -> Bool {
        let end = Date(timeIntervalSinceNow: seconds)
        while Date() < end {
            if try Self.status(path, port: port) == status { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    static func frames(_ camera: String, port: Int, seconds: Double = 20, atLeast: Int = 3) -> Int {
        PreviewEndToEnd.PreviewLoadTests.watch(
            port: port, seconds: seconds, frames: atLeast, path: "/cameras/\(camera)/stream.mjpeg")
    }

    /// Every configured camera is listed and has its page; the running ones stream; the one
    /// that cannot open its input has a page whose stream, socket and stats answer 503 (the page
    /// retries), and a name that is not configured is 404.
    @Test func everyCameraHasItsPageAndOnlyRunningOnesStream() throws {
        guard let run = try Running(
            Self.cameras([("door", Self.scene(10)), ("yard", Self.scene(10)), ("gone", "/nonexistent/clip.mp4")]))
        else { return }
        defer { run.stop() }
        let list = try PreviewServerTests.get("/", port: run.port)
        #expect(list.status == 200)
        for name in ["door", "yard", "gone"] { #expect(list.body.contains("/cameras/\(name)\""), "\(name) listed") }
        for name in ["door", "yard", "gone"] { #expect(try Self.status("/cameras/\(name)", port: run.port) == 200) }
        #expect(try Self.status("/cameras/garage", port: run.port) == 404)
        #expect(try Self.status("/cameras/garage/stream.mjpeg", port: run.port) == 404)
        #expect(try Self.waitFor(200, "/cameras/door/stats.json", port: run.port))
        #expect(Self.frames("door", port: run.port) >= 3)
        #expect(Self.frames("yard", port: run.port) >= 3)
        for path in ["stream.mjpeg", "stats.json", "photos/1.jpg"] {
            #expect(try Self.status("/cameras/gone/\(path)", port: run.port) == 503, "gone/\(path)")
        }
    }

    /// A reload that changes one camera: its viewers' stream and socket end (the socket with
    /// 1001, going away) and the next request streams the new session; the unchanged camera's
    /// viewer never notices. A camera removed by a reload is 404 afterwards.
    @Test func aReloadEndsTheChangedCamerasViewersAndTheNextSessionStreams() throws {
        guard let run = try Running(Self.cameras([("door", Self.scene(10)), ("yard", Self.scene(10))])) else { return }
        defer { run.stop() }
        #expect(try Self.waitFor(200, "/cameras/door/stats.json", port: run.port))
        #expect(try Self.waitFor(200, "/cameras/yard/stats.json", port: run.port))

        // Viewers of both cameras and a socket on door, all open across the reload.
        let doorFrames = Mutex<Int?>(nil), yardFrames = Mutex<Int?>(nil), closeCode = Mutex<Int?>(nil)
        let started = Date()
        let doorEnded = Mutex<Double?>(nil)
        let threads = [
            Thread {
                doorFrames.withLock { $0 = Self.frames("door", port: run.port, seconds: 25, atLeast: .max) }
                doorEnded.withLock { $0 = Date().timeIntervalSince(started) }
            },
            Thread { yardFrames.withLock { $0 = Self.frames("yard", port: run.port, seconds: 8, atLeast: .max) } },
            Thread { closeCode.withLock { $0 = try? WebSocketProbe.closeCode(port: run.port, path: "/cameras/door/ws", seconds: 25) } },
        ]
        for t in threads { t.start() }
        Thread.sleep(forTimeInterval: 2)
        let reloadedAt = Date().timeIntervalSince(started)
        try run.reload(Self.cameras([("door", Self.scene(12)), ("yard", Self.scene(10))]))

        let end = Date(timeIntervalSinceNow: 30)
        while Date() < end, doorFrames.withLock({ $0 }) == nil || yardFrames.withLock({ $0 }) == nil || closeCode.withLock({ $0 }) == nil {
            Thread.sleep(forTimeInterval: 0.1)
        }
        // door's stream ended soon after the reload, not at its 25 s limit.
        let ended = try #require(doorEnded.withLock { $0 })
        #expect(ended > reloadedAt && ended < reloadedAt + 10, "door's stream ended at \(ended) s, the reload was at \(reloadedAt) s")
        #expect((doorFrames.withLock { $0 } ?? 0) >= 3)
        #expect(closeCode.withLock { $0 } == 1001)
        // yard kept streaming through the reload (10 fps for 8 s; a restart would have ended
        // its stream within a second of the reload).
        #expect((yardFrames.withLock { $0 } ?? 0) >= 40)
        // The new session of door streams.
        #expect(try Self.waitFor(200, "/cameras/door/stats.json", port: run.port))
        #expect(Self.frames("door", port: run.port) >= 3)

        try run.reload(Self.cameras([("door", Self.scene(12))]))
        #expect(try Self.waitFor(404, "/cameras/yard", port: run.port))
        #expect(try Self.status("/cameras/yard/stream.mjpeg", port: run.port) == 404)
        let list = try PreviewServerTests.get("/", port: run.port)
        // One camera left: the daemon's index is its dashboard still, listing only door.
        #expect(list.status == 200 && list.body.contains("data-library"))
        #expect(list.body.contains(#"data-name="door""#) && !list.body.contains(#"data-name="yard""#))
    }

    /// The page's rotation turns the preview's own video and photo connections, never the
    /// outputs whose snapshots go to MQTT; a drag's rect of interest is the camera's metadata
    /// output's.
    @Test func thePagesControlsReachTheSessionButNotThePublishedSnapshots() throws {
        let config = try ServeConfig.parse(
            "mqtt: {broker: mqtt://127.0.0.1}\n" + Self.cameras([("door", Self.scene(10))]))
        let directory = PreviewDirectory()
        let daemon = ServeDaemon(config: config, configPath: nil, link: QuietBrokerLink(), preview: directory)
        daemon.start()
        defer { daemon.shutdown() }
        #expect(directory.names == ["door"])
        let end = Date(timeIntervalSinceNow: 30)
        while directory.camera(named: "door") == nil, Date() < end { Thread.sleep(forTimeInterval: 0.05) }
        let camera = try #require(directory.camera(named: "door"))
        try camera.setConnection(rotation: 90, mirrored: true)
        #expect(camera.connection?.videoRotationAngle == 90)
        #expect(camera.photos?.connection(with: .video)?.videoRotationAngle == 90)
        let published = try #require(daemon.camera("door")?.snapshotOutput)
        #expect(published !== camera.photos)
        #expect(published.connection(with: .video)?.videoRotationAngle == 0)
        #expect(published.connection(with: .video)?.isVideoMirrored == false)
        try camera.setRectOfInterest(
            fromLayerRect: CGRect(x: 0, y: 0, width: 50, height: 50), in: .init(width: 100, height: 100, gravity: .resize))
        #expect(camera.metadata.rectOfInterest != CGRect(x: 0, y: 0, width: 1, height: 1))
        // Shutting down detaches the camera: its page stays, its stream is gone.
        daemon.shutdown()
        #expect(directory.camera(named: "door") == nil)
        #expect(directory.isListed("door"))
    }
}

/// A WebSocket client reduced to what the tests need: upgrade, read frames, report the close
/// code the server sends.
enum WebSocketProbe {
    struct Failure: Error, CustomStringConvertible { var description: String }

    /// Upgrades `path` and reads until the server's close frame (its code) or `seconds`.
    static func closeCode(port: Int, path: String, seconds: Double) throws -> Int {
        let fd = try LoopbackSocket.connect(port: port, receiveTimeout: 1)
        defer { close(fd) }
        let request = [
            "GET \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13", "", "",
        ].joined(separator: "\r\n")
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var upgraded = false
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            if n > 0 { bytes += buffer[0..<n] }
            if !upgraded {
                guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { continue }
                let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
                guard head.hasPrefix("HTTP/1.1 101") else { throw Failure(description: "not upgraded: \(head)") }
                bytes.removeFirst(end.upperBound)
                upgraded = true
            }
            // Server frames are unmasked: opcode, length (7 bits, or 16/64 bits), payload.
            while bytes.count >= 2 {
                var length = Int(bytes[1] & 0x7F), offset = 2
                if length == 126 {
                    guard bytes.count >= 4 else { break }
                    length = Int(bytes[2]) << 8 | Int(bytes[3])
                    offset = 4
                } else if length == 127 {
                    guard bytes.count >= 10 else { break }
                    length = bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
                    offset = 10
                }
                guard bytes.count >= offset + length else { break }
                if bytes[0] & 0x0F == 0x8 {
                    return length >= 2 ? Int(bytes[offset]) << 8 | Int(bytes[offset + 1]) : 1005
                }
                bytes.removeFirst(offset + length)
            }
        }
        throw Failure(description: "no close frame within \(seconds) s")
    }
}
