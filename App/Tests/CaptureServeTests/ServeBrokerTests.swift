import Foundation
import Synchronization
import Testing
import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `cvcam serve` against a real Mosquitto on loopback (MosquittoTestBroker): four synthetic
/// cameras whose content is known, a broker outage, commands, the last will, reloading and
/// shutting down. Everything stays on 127.0.0.1.
@Suite(.serialized) struct ServeBrokerTests {
    static let face = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images/grace_hopper.jpg").path

    /// One message as `mosquitto_sub -F '%t %r %x'` printed it.
    struct Received: Sendable {
        var topic: String
        var retained: Bool
        var payload: [UInt8]
        var text: String { String(decoding: payload, as: UTF8.self) }
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] }
    }

    /// A `mosquitto_sub` printing payloads in hex, so JPEG snapshots arrive whole; with a
    /// persistent session it rides out a broker restart and gets what was queued for it.
    final class Subscriber: @unchecked Sendable {
        // @unchecked: `received` and `buffer` are guarded by `lock`.
        private let process = Process()
        private let lock = NSLock()
        private var buffer = ""
        private var received: [Received] = []

        init(_ broker: MosquittoTestBroker, filters: [String], session: String) throws {
            process.executableURL = URL(fileURLWithPath: MosquittoTestBroker.subscribeTool)
            process.arguments = broker.credentials + filters.flatMap { ["-t", $0] } + ["-q", "1", "-c", "-i", session, "-F", "%t %r %x"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            out.fileHandleForReading.readabilityHandler = { [weak self] handle in
                guard let self else { return }
                let chunk = String(decoding: handle.availableData, as: UTF8.self)
                lock.withLock {
                    buffer += chunk
                    while let newline = buffer.firstIndex(of: "\n") {
                        let line = buffer[..<newline].split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
                        buffer.removeSubrange(...newline)
                        guard line.count >= 2 else { continue }
                        let hex = line.count > 2 ? Array(line[2].utf8) : []
                        var bytes: [UInt8] = []
                        var i = 0
                        while i + 1 < hex.count {
                            bytes.append(UInt8(String(decoding: hex[i...i + 1], as: UTF8.self), radix: 16) ?? 0)
                            i += 2
                        }
                        received.append(Received(topic: String(line[0]), retained: line[1] == "1", payload: bytes))
                    }
                }
            }
            try MosquittoTestBroker.spawn(process)
            Thread.sleep(forTimeInterval: 0.5)
        }

        deinit { stop() }

        var messages: [Received] { lock.withLock { received } }
        func on(_ topic: String) -> [Received] { messages.filter { $0.topic == topic } }

        @discardableResult
        func wait(_ seconds: Double, until condition: (Subscriber) -> Bool) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if condition(self) { return true }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return condition(self)
        }

        func stop() {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }


    /// A synthetic camera: a face crossing in about 4 s at 10 fps, and a QR code that stays.
    /// Every frame is analysed (`motion: false`): the code's repeats every 0.5 s are the
    /// heartbeat the outage test counts, and motion gating would read a still code every 2 s.
    static func synthetic(_ name: String, dir: URL, extra: String = "") -> String {
        """
          - name: \(name)
            input: "synthetic:size=320x240,fps=10,speed=100,image=\(face),qr=\(name.uppercased())"
            faces: {}
            codes: {types: [qr], repeatInterval: 0.5}
            snapshots: {dir: \(dir.appendingPathComponent(name).path), minScore: 0.5}
            motion: false
        \(extra)
        """
    }

    /// The `time`s of a camera's code events, with exact duplicates (QoS 1 may repeat the last
    /// messages before an outage) removed.
    static func codeTimes(_ subscriber: Subscriber, _ camera: String) -> [Double] {
        var times: [Double] = []
        var last: [UInt8]?
        for m in subscriber.on("cvcam/\(camera)/events") {
            if m.payload == last { continue }
            last = m.payload
            guard let json = m.json, json["type"] as? String == "code", json["event"] as? String != "leave",
                let time = json["time"] as? Double
            else { continue }
            times.append(time)
        }
        return times
    }

    /// The issue's scenario: 4 cameras (one whose input fails), the events and retained state of
    /// each on its topics, Home Assistant discovery, a 5 s broker outage without loss or
    /// reordering, commands, and the last will when the daemon is killed.
    @Test func fourCamerasThroughAnOutageCommandsAndTheLastWill() throws {
        guard let broker = try MosquittoTestBroker.start(tls: true) else { return }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("serve.yaml")
        try (ServeProcess.mqttSection(broker, dir: dir, extra: "  homeAssistant: {discoveryPrefix: homeassistant}")
            + "\nstats: 2\ncameras:\n"
            + ["cam1", "cam2", "cam3"].map { Self.synthetic($0, dir: dir) }.joined()
            + "  - name: cam4\n    input: \(dir.path)/missing.mp4\n    codes: [qr]\n").write(to: config, atomically: true, encoding: .utf8)
        let subscriber = try Subscriber(broker, filters: ["cvcam/#", "homeassistant/#"], session: "serve-test-sub")
        let daemon = try ServeProcess(config: config.path)

        // Online, and each camera's known content on its own topics.
        let ready = subscriber.wait(30) { s in
            ["cam1", "cam2", "cam3"].allSatisfy { cam in
                let events = s.on("cvcam/\(cam)/events").compactMap(\.json)
                return events.contains { $0["type"] as? String == "face" && $0["event"] as? String == "leave" }
                    && events.contains { $0["type"] as? String == "code" && $0["text"] as? String == cam.uppercased() }
            } && s.on("cvcam/cam4/events").contains { $0.json?["code"] as? String == "cameraFailed" }
        }
        #expect(ready, "daemon stderr: \(daemon.stderr)")
        #expect(subscriber.on("cvcam/availability").last?.text == "online")
        for cam in ["cam1", "cam2", "cam3"] {
            let events = subscriber.on("cvcam/\(cam)/events").compactMap(\.json)
            for event in events { #expect(event["schema"] as? Int == 1 && event["wallTime"] is String) }
            // Each face's track: it enters first, and nothing of it follows its leave (the scene
            // loops, so more faces may come while the test reads).
            let faces = events.filter { $0["type"] as? String == "face" }
            let tracks = Dictionary(grouping: faces) { $0["faceID"] as? Int ?? -1 }.mapValues { $0.map { $0["event"] as? String ?? "" } }
            #expect(!tracks.isEmpty && tracks.keys.allSatisfy { $0 >= 0 }, "\(cam): \(tracks)")
            for (id, track) in tracks {
                #expect(track.first == "enter" && !track.dropLast().contains("leave"), "\(cam) face \(id): \(track)")
            }
            #expect(tracks.values.contains { $0.last == "leave" }, "\(cam): \(tracks)")
            // Events of one camera only.
            #expect(!events.contains { ($0["text"] as? String).map { $0 != cam.uppercased() } ?? false })
            #expect(subscriber.on("cvcam/\(cam)/availability").map(\.text).contains("online"))
            let counts = subscriber.on("cvcam/\(cam)/faces").compactMap { $0.json?["count"] as? Int }
            #expect(counts.contains(1), "\(cam): \(counts)")
            #expect(subscriber.on("cvcam/\(cam)/stats").contains { $0.json?["type"] as? String == "stats" })
            #expect(subscriber.on("cvcam/\(cam)/snapshot").last.map { $0.payload.starts(with: [0xFF, 0xD8, 0xFF]) } == true)
        }
        #expect(subscriber.on("cvcam/cam4/availability").allSatisfy { $0.text == "offline" })
        // Home Assistant discovery: the entities of what each camera does, each a JSON config
        // naming its topics: three for the cameras with faces, codes and snapshots (their motion
        // sensor withdrawn: `motion: false`), the code sensor and the motion sensor for cam4 (its
        // face sensor and camera entity withdrawn: empty configs).
        let all = subscriber.messages.filter { $0.topic.hasPrefix("homeassistant/") && $0.topic.hasSuffix("/config") }
        let discovery = all.filter { !$0.payload.isEmpty }
        #expect(Set(discovery.map(\.topic)).count == 11)
        #expect(discovery.contains { $0.topic == "homeassistant/binary_sensor/cvcam_cvcam/cam4_motion/config" })
        #expect(Set(all.filter(\.payload.isEmpty).map(\.topic))
            == Set(["homeassistant/binary_sensor/cvcam_cvcam/cam4_face/config", "homeassistant/camera/cvcam_cvcam/cam4_snapshot/config"]
                + ["cam1", "cam2", "cam3"].map { "homeassistant/binary_sensor/cvcam_cvcam/\($0)_motion/config" }))
        for message in discovery {
            let json = try #require(message.json, "\(message.topic)")
            #expect(json["unique_id"] is String)
            #expect((json["state_topic"] ?? json["topic"]) is String)
        }

        // The broker goes away for 5 s and comes back: every code repeat (one each 0.5 s)
        // arrives, in order, with no gap.
        let outageStart = Self.codeTimes(subscriber, "cam1").last ?? 0
        broker.stop()
        Thread.sleep(forTimeInterval: 5)
        try broker.restart()
        let recovered = subscriber.wait(30) { s in
            ["cam1", "cam2", "cam3"].allSatisfy { (Self.codeTimes(s, $0).last ?? 0) > outageStart + 8 }
        }
        #expect(recovered, "daemon stderr: \(daemon.stderr)\nbroker: \(broker.log)")
        for cam in ["cam1", "cam2", "cam3"] {
            let times = Self.codeTimes(subscriber, cam)
            let pairs = zip(times, times.dropFirst())
            #expect(pairs.allSatisfy { $0 < $1 }, "\(cam) out of order: \(times)")
            // Losing what waited through the outage would leave a gap of seconds (it lasted 5);
            // a box busy with other tests may skip detection on a frame or two, which delays a
            // repeat by a frame or more without anything being lost.
            #expect(pairs.allSatisfy { $1 - $0 < 2.05 }, "\(cam) lost events: \(times)")
        }

        // Commands: a snapshot of the next frame; a bad command answered on `error`.
        broker.publish("cvcam/cam1/set", "snapshot")
        broker.publish("cvcam/cam2/set", "fly away")
        #expect(subscriber.wait(10) { s in
            s.on("cvcam/cam1/events").contains { $0.json?["reason"] as? String == "requested" }
                && s.on("cvcam/cam2/error").contains { $0.json?["code"] as? String == "badCommand" }
        })
        // The retained state after the last event, as a newcomer sees it.
        #expect(broker.retained("cvcam/cam1/availability") == "online")
        #expect(broker.retained("cvcam/cam4/availability") == "offline")
        #expect(broker.retained("cvcam/cam1/faces").flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }?["count"] as? Int == 0)
        #expect(broker.retained("cvcam/cam3/code")?.contains("\"text\":\"CAM3\"") == true)

        // Killed without a goodbye: the broker publishes the last will.
        daemon.signal(SIGKILL)
        #expect(daemon.waitForExit(5) != nil)
        #expect(subscriber.wait(15) { $0.on("cvcam/availability").last?.text == "offline" })
        #expect(broker.retained("cvcam/availability") == "offline")
    }

    /// SIGTERM: recordings finished, every camera and the daemon offline, exit 0. On the way,
    /// the Prometheus endpoint counts the camera's frames.
    @Test func sigtermFinishesFilesAndPublishesOffline() throws {
        guard let broker = try MosquittoTestBroker.start() else { return }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("serve.yaml")
        let metricsPort = try MosquittoTestBroker.freePort()
        try (ServeProcess.mqttSection(broker, dir: dir) + "\nmetrics: {listen: \"127.0.0.1:\(metricsPort)\"}\ncameras:\n"
            + Self.synthetic("rec", dir: dir, extra: "    record: {dir: \(dir.path)/video, segment: 60}\n"))
            .write(to: config, atomically: true, encoding: .utf8)
        let subscriber = try Subscriber(broker, filters: ["cvcam/#"], session: "serve-test-term")
        let daemon = try ServeProcess(config: config.path)
        #expect(subscriber.wait(20) { $0.on("cvcam/rec/events").contains { $0.json?["type"] as? String == "recording" } })
        Thread.sleep(forTimeInterval: 1.5)
        let scrape = try RawHTTP.blockingGet("/metrics", port: metricsPort)
        #expect(scrape.status == 200)
        let frames = scrape.body.split(separator: "\n").first { $0.hasPrefix("cvcam_frames_captured_total{camera=\"rec\"}") }
        #expect((frames?.split(separator: " ").last.flatMap { Double($0) } ?? 0) > 0, "\(scrape.body)")
        #expect(scrape.body.contains("cvcam_mqtt_connected 1"))
        #expect(scrape.body.contains("cvcam_camera_online{camera=\"rec\"} 1"))
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(20) == 0, "\(daemon.stderr)")
        #expect(broker.retained("cvcam/rec/availability") == "offline")
        #expect(broker.retained("cvcam/availability") == "offline")
        let videos = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/video").filter { $0.hasSuffix(".avi") }
        #expect(videos.count == 1)
        let probe = try CLI.run(
            ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", dir.path + "/video/" + videos[0]],
            executable: URL(fileURLWithPath: "/usr/bin/ffprobe"))
        #expect((Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 10, "\(probe.stdout) \(probe.stderr)")
    }

    /// SIGHUP: a changed camera restarts, a removed one stops and leaves Home Assistant, a new
    /// one starts, an unchanged one keeps running (no second `start`); a broken file changes nothing.
    @Test func sighupRestartsOnlyWhatChanged() throws {
        guard let broker = try MosquittoTestBroker.start() else { return }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("serve.yaml")
        let mqtt = try ServeProcess.mqttSection(broker, dir: dir, extra: "  homeAssistant: {discoveryPrefix: ha}")
        func write(_ cameras: [String]) throws {
            try (mqtt + "\ncameras:\n" + cameras.joined()).write(to: config, atomically: true, encoding: .utf8)
        }
        let code = { (name: String, interval: Double) in
            "  - name: \(name)\n    input: \"synthetic:size=160x120,fps=5,qr=\(name)\"\n    codes: {types: [qr], repeatInterval: \(interval)}\n"
        }
        try write([code("keep", 1), code("change", 1), code("drop", 1)])
        let subscriber = try Subscriber(broker, filters: ["cvcam/#", "ha/#"], session: "serve-test-hup")
        let daemon = try ServeProcess(config: config.path)
        func starts(_ cam: String) -> Int {
            subscriber.on("cvcam/\(cam)/events").filter { $0.json?["type"] as? String == "start" }.count
        }
        #expect(subscriber.wait(20) { _ in ["keep", "change", "drop"].allSatisfy { starts($0) == 1 } })
        // A broken file is refused; everything keeps running.
        try "mqtt: [".write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        Thread.sleep(forTimeInterval: 1)
        #expect(daemon.stderr.contains("reload refused"))
        try write([code("keep", 1), code("change", 2), code("new", 1)])
        daemon.signal(SIGHUP)
        // The removed camera went offline, then its retained availability was emptied.
        #expect(subscriber.wait(20) { s in
            starts("new") == 1 && starts("change") == 2 && s.on("cvcam/drop/availability").last?.payload.isEmpty == true
        })
        #expect(subscriber.on("cvcam/drop/availability").map(\.text).suffix(2) == ["offline", ""])
        #expect(starts("keep") == 1)
        let removed = subscriber.messages.filter { $0.topic.hasPrefix("ha/") && $0.topic.contains("drop") }
        #expect(removed.last?.payload.isEmpty == true, "\(removed.map(\.topic))")
        #expect(daemon.process.isRunning)
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(20) == 0)
    }

    /// A network camera whose stream goes down mid-run: `interrupted` and offline while the
    /// synthetic camera beside it keeps publishing, and online again when the stream is back.
    @Test func aStreamThatGoesDownIsOfflineWhileTheOtherCameraGoesOn() throws {
        guard let broker = try MosquittoTestBroker.start() else { return }
        guard let stream = try NetworkStreamTestServer.start(.mjpeg, arguments: ["--fps", "10"]) else { return }
        let port = stream.port
        var restarted: NetworkStreamTestServer?
        defer { restarted?.stop() }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("serve.yaml")
        try (ServeProcess.mqttSection(broker, dir: dir) + """

            cameras:
              - name: net
                input: \(stream.url())
                codes: [qr]
              - name: syn
                input: "synthetic:size=160x120,fps=10,qr=SYN"
                codes: {types: [qr], repeatInterval: 0.5}
                motion: false

            """).write(to: config, atomically: true, encoding: .utf8)
        let subscriber = try Subscriber(broker, filters: ["cvcam/#"], session: "serve-test-net")
        let daemon = try ServeProcess(config: config.path)
        #expect(subscriber.wait(20) { $0.on("cvcam/net/availability").last?.text == "online" && !Self.codeTimes($0, "syn").isEmpty },
            "\(daemon.stderr)")
        stream.stop()
        #expect(subscriber.wait(20) { $0.on("cvcam/net/availability").last?.text == "offline" }, "\(daemon.stderr)")
        #expect(subscriber.on("cvcam/net/events").contains { $0.json?["type"] as? String == "interrupted" })
        let whileDown = Self.codeTimes(subscriber, "syn").count
        Thread.sleep(forTimeInterval: 2)
        #expect(Self.codeTimes(subscriber, "syn").count >= whileDown + 2, "the other camera stopped publishing")
        restarted = try NetworkStreamTestServer.start(.mjpeg, port: port, arguments: ["--fps", "10"])
        #expect(subscriber.wait(30) { $0.on("cvcam/net/availability").last?.text == "online" }, "\(daemon.stderr)")
        #expect(subscriber.on("cvcam/net/events").contains { $0.json?["type"] as? String == "interruptionEnded" })
        #expect(daemon.process.isRunning)
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(20) == 0)
    }

    /// A bad file: exit 64 before anything starts, naming the line, the camera and the key.
    @Test func aBadConfigExits64NamingTheCameraAndTheKey() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("serve.yaml")
        try """
            mqtt: {broker: mqtt://127.0.0.1:1}
            cameras:
              - name: door
                input: synthetic:size=64x48
                faces: {}
                snapshots: {dir: \(dir.path), minScore: 1.5}
            """.write(to: config, atomically: true, encoding: .utf8)
        for arguments in [["serve", "--config", config.path], ["serve", "--config", config.path, "--check"]] {
            let result = try CLI.run(arguments)
            #expect(result.status == 64)
            #expect(result.stderr.contains("cameras[0] (door)") && result.stderr.contains("snapshots.minScore"), "\(result.stderr)")
            #expect(result.stderr.contains("line "))
        }
        try "mqtt: {broker: mqtt://127.0.0.1:1}\ncameras: [{name: a, input: synthetic:size=64x48, codes: [qr]}]\n"
            .write(to: config, atomically: true, encoding: .utf8)
        let good = try CLI.run(["serve", "--config", config.path, "--check"])
        #expect(good.status == 0, "\(good.stderr)")
    }
}
