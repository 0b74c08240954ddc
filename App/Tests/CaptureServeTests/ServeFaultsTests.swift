import CaptureKit
import Foundation
import Synchronization
import Testing

@testable import CaptureJobs
@testable import CaptureServe
import AppTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Faults of a week in the field (issue #30, items 5, 6, 7 and 9): a full disk under the
/// recorder, two daemons on one broker, a burst of snapshot commands, and `--check` refusing
/// what the start-up refuses.
@Suite(.serialized) struct ServeFaultsTests {
    static let face = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images/grace_hopper.jpg").path

    /// `mosquitto_sub -v` lines ("topic payload") of every message on `filters`.
    static func subscribe(_ broker: MosquittoTestBroker, _ filters: [String]) throws -> MosquittoTestBroker.Subscriber {
        try broker.subscriber(filters)
    }

    static func json(_ line: String) -> [String: Any]? {
        guard let space = line.firstIndex(of: " ") else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(line[line.index(after: space)...].utf8))) as? [String: Any]
    }

    // MARK: Item 5: a full disk stops the recording only until there is room again

    @Test func recordingResumesOnceTheDiskHasRoomAndSaysSo() throws {
        guard let disk = TemporaryFileSystem.make(megabytes: 48) else { return }
        guard let broker = try MosquittoTestBroker.start() else { return }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let video = disk.path + "/video"
        let config = dir.appendingPathComponent("serve.yaml")
        try (ServeProcess.mqttSection(broker, dir: dir) + """

            stats: 0
            cameras:
              - name: rec
                input: "synthetic:size=320x240,fps=10,qr=REC"
                codes: [qr]
                record: {dir: \(video), segment: 3600}

            """).write(to: config, atomically: true, encoding: .utf8)
        let subscriber = try Self.subscribe(broker, ["cvcam/rec/events"])
        let daemon = try ServeProcess(config: config.path)
        // (`wait` hands its condition the lines: reading `subscriber.lines` inside it would deadlock.)
        func events(_ type: String, _ lines: [String]) -> [[String: Any]] {
            lines.compactMap(Self.json).filter { $0["type"] as? String == type }
        }
        #expect(subscriber.wait(timeout: 60) { !events("recording", $0).isEmpty }, "stderr: \(daemon.stderr)")

        // The disk fills: the recording fails, is said on stderr and on MQTT, and is retried.
        let filler = disk.fill()
        let failed = subscriber.wait(timeout: 90) { lines in
            events("error", lines).filter { $0["code"] as? String == "recordingFailed" }.count >= 2
        }
        #expect(failed, "stderr: \(daemon.stderr)")
        #expect(daemon.stderr.contains("recording failed") && daemon.stderr.contains("trying again in"), "stderr: \(daemon.stderr)")

        // Room again: a new file starts within the retry delay, long before the segment's hour.
        unlink(filler)
        let resumed = subscriber.wait(timeout: 90) { lines in
            events("recording", lines).contains { ($0["resumedAfterFailures"] as? Int ?? 0) >= 2 }
        }
        #expect(resumed, "stderr: \(daemon.stderr)")
        #expect(daemon.waitForStderr(containing: "recording resumed after"), "stderr: \(daemon.stderr)")
        let path = try #require(events("recording", subscriber.lines).last?["path"] as? String)
        Thread.sleep(forTimeInterval: 1)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_size > 224, "the new file takes frames")
        // Failed attempts left no empty files behind.
        let files = try FileManager.default.contentsOfDirectory(atPath: video).filter { $0.hasSuffix(".avi") }
        #expect(files.count <= 2, "\(files)")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(30) == 0)
    }

    // MARK: Item 6: two daemons on one broker

    /// A `mqtt:` section without a client ID: the daemon's default.
    static func mqttSection(_ broker: MosquittoTestBroker, dir: URL, prefix: String) throws -> String {
        let passwordFile = dir.appendingPathComponent("password")
        try broker.password.write(to: passwordFile, atomically: true, encoding: .utf8)
        return """
            mqtt:
              broker: \(broker.url)
              username: \(broker.username)
              passwordFile: \(passwordFile.path)
              topicPrefix: \(prefix)
              keepAlive: 5
            stats: 0
            cameras:
              - name: cam
                input: "synthetic:size=160x120,fps=5,qr=\(prefix)"
                codes: [qr]

            """
    }

    @Test func twoDaemonsWithDefaultClientIDsDoNotTakeEachOthersConnection() throws {
        guard let broker = try MosquittoTestBroker.start() else { return }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        var daemons: [ServeProcess] = []
        for prefix in ["site-a", "site-b"] {
            let config = dir.appendingPathComponent("\(prefix).yaml")
            try Self.mqttSection(broker, dir: dir, prefix: prefix).write(to: config, atomically: true, encoding: .utf8)
            daemons.append(try ServeProcess(config: config.path))
        }
        let subscriber = try Self.subscribe(broker, ["site-a/availability", "site-b/availability"])
        #expect(subscriber.wait(timeout: 60) { lines in
            lines.contains("site-a/availability online") && lines.contains("site-b/availability online")
        })
        let before = broker.log.components(separatedBy: "already connected").count
        Thread.sleep(forTimeInterval: 8)
        #expect(broker.log.components(separatedBy: "already connected").count == before, "\(broker.log)")
        #expect(!subscriber.lines.contains { $0.hasSuffix(" offline") }, "\(subscriber.lines)")
        let ids = Set(broker.log.matches(of: /as (cvcam-[A-Za-z0-9-]+-[0-9a-f]{8})/).map { String($0.1) })
        #expect(ids.count == 2, "\(ids)")
        for daemon in daemons {
            daemon.signal(SIGTERM)
            #expect(daemon.waitForExit(30) == 0)
        }
    }

    @Test func twoDaemonsWithOneClientIDAreToldWhyOnce() throws {
        guard let broker = try MosquittoTestBroker.start() else { return }
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let id = "same-\(UUID().uuidString.prefix(8))"
        var daemons: [ServeProcess] = []
        for prefix in ["left", "right"] {
            let config = dir.appendingPathComponent("\(prefix).yaml")
            let text = try Self.mqttSection(broker, dir: dir, prefix: prefix)
                .replacingOccurrences(of: "  keepAlive: 5\n", with: "  keepAlive: 5\n  clientID: \(id)\n")
            try text.write(to: config, atomically: true, encoding: .utf8)
            daemons.append(try ServeProcess(config: config.path))
        }
        func told(_ daemon: ServeProcess) -> Int {
            daemon.stderr.components(separatedBy: "another client probably uses the client ID \(id)").count - 1
        }
        let start = Date()
        while Date().timeIntervalSince(start) < 90 && !daemons.allSatisfy({ told($0) >= 1 }) { Thread.sleep(forTimeInterval: 0.2) }
        for daemon in daemons { #expect(told(daemon) >= 1, "stderr: \(daemon.stderr)") }
        Thread.sleep(forTimeInterval: 10)
        for daemon in daemons { #expect(told(daemon) == 1, "once per episode; stderr: \(daemon.stderr)") }
        for daemon in daemons {
            daemon.signal(SIGTERM)
            #expect(daemon.waitForExit(30) == 0)
        }
    }

    // MARK: Item 7: a burst of snapshot commands

    final class RefusalCounter: CameraMetricsSink, Sendable {
        let refused = Atomic<Int>(0)
        func update(frames: Int, analysed: Int, skipped: Int) {}
        func observeDetection(stage: LatencyRecorder.Stage, milliseconds: Double) {}
        func sessionRestarted() {}
        func inputReconnected() {}
        func inputReconnectAttempted() {}
        func setOnline(_ online: Bool) {}
        func commandRefused() { refused.add(1, ordering: .relaxed) }
    }

    static func snapshotCamera(_ dir: URL, commands: String) throws -> ServeConfig.Camera {
        try ServeConfig.parse("""
            mqtt: {broker: mqtt://127.0.0.1}
            cameras:
              - name: burst
                input: "synthetic:size=320x240,fps=15,image=\(face)"
                faces: {}
                snapshots: {dir: \(dir.path)}
                commands: \(commands)
            """).cameras[0]
    }

    /// 300 `snapshot` commands at once (the limit raised out of the way): 300 photos, each its
    /// own file, none lost to a name taken in the same millisecond.
    @Test func aBurstOfSnapshotsGivesEveryPhotoItsOwnFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("burst-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = try Self.snapshotCamera(dir, commands: "{perSecond: 1000, burst: 1000}")
        let publisher = RecordingPublisher()
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil)
        let topics = CameraTopics(prefix: "cvcam", camera: "burst")
        defer { camera.stop() }
        camera.start()
        #expect(publisher.wait(30) { $0.on(topics.availability).last?.text == "online" })
        // From several threads, so that many arrive within one millisecond (one MQTT thread
        // delivers them in bursts as the broker's packets come).
        DispatchQueue.concurrentPerform(iterations: 300) { _ in camera.handle(command: Array("snapshot".utf8)) }
        func requested(_ p: RecordingPublisher) -> [[String: Any]] {
            p.on(topics.events).compactMap(\.json).filter { $0["type"] as? String == "snapshot" && $0["reason"] as? String == "requested" }
        }
        let done = publisher.wait(120) { requested($0).count + $0.on(topics.error).count >= 300 }
        #expect(done)
        let errors = publisher.on(topics.error).compactMap { $0.json?["message"] as? String }
        #expect(errors.isEmpty, "\(errors.count) lost, e.g. \(errors.first ?? "")")
        let paths = requested(publisher).compactMap { $0["path"] as? String }
        #expect(paths.count == 300 && Set(paths).count == 300)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("-requested") }
        #expect(files.count == 300)
        for file in files.prefix(300) {
            let size = (try? FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(file).path)[.size] as? Int) ?? 0
            #expect(size > 1000, "\(file) is \(size) bytes")
        }
    }

    /// The rate limit: `burst` commands at once, then each refused one is answered on `error`
    /// and counted.
    @Test func commandsOverTheRateLimitAreRefusedAnsweredAndCounted() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("limit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = try Self.snapshotCamera(dir, commands: "{perSecond: 0.01, burst: 10}")
        #expect(config.commandLimit == ServeConfig.CommandLimit(perSecond: 0.01, burst: 10))
        let publisher = RecordingPublisher()
        let metrics = RefusalCounter()
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil, metrics: metrics)
        let topics = CameraTopics(prefix: "cvcam", camera: "burst")
        defer { camera.stop() }
        camera.start()
        #expect(publisher.wait(30) { $0.on(topics.availability).last?.text == "online" })
        for _ in 0..<300 { camera.handle(command: Array("snapshot".utf8)) }
        let limited = publisher.on(topics.error).compactMap(\.json).filter { $0["code"] as? String == "rateLimited" }
        // 10 at once; the refill (one per 100 s) adds none within the test.
        #expect(limited.count == 290)
        #expect(metrics.refused.load(ordering: .relaxed) == 290)
        #expect((limited.first?["message"] as? String)?.contains("commands.burst") == true)
        #expect(publisher.wait(60) { p in
            p.on(topics.events).compactMap(\.json).filter { $0["type"] as? String == "snapshot" }.count == 10
        })
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("-requested") }
        #expect(files.count == 10)
    }

    @Test func theTokenBucketRefillsAtItsRate() {
        var bucket = CommandRateLimiter(.init(perSecond: 2, burst: 3), now: 100)
        #expect((0..<5).map { _ in bucket.allow(now: 100) } == [true, true, true, false, false])
        #expect(bucket.allow(now: 100.4) == false)
        #expect(bucket.allow(now: 100.5) == true)
        #expect(bucket.allow(now: 100.5) == false)
        // Never more than the burst, however long it was idle.
        #expect((0..<4).map { _ in bucket.allow(now: 1000) } == [true, true, true, false])
    }

    // MARK: Item 9: --check refuses what the start-up refuses

    /// Each bad value, the key its problem names, and a fragment of the problem.
    static func badFiles(_ dir: URL) throws -> [(yaml: String, key: String, says: String)] {
        let file = dir.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        let camera = "  - {name: cam, input: \"synthetic:size=64x48\", faces: {}"
        return [
            ("mqtt: {broker: \"mqtt://127.0.0.1:99999999999999999999\"}\ncameras:\n\(camera)}\n", "mqtt.broker", "port"),
            ("mqtt: {broker: mqtt://127.0.0.1:1, caFile: \(file.path)}\ncameras:\n\(camera)}\n", "mqtt", "mqtts://"),
            ("mqtt: {broker: mqtt://127.0.0.1:1, queue: {spool: \(file.path)}}\ncameras:\n\(camera)}\n", "mqtt.queue.spool", "is a file"),
            ("mqtt: {broker: mqtt://127.0.0.1:1}\ncameras:\n\(camera), snapshots: {dir: \(file.path)}}\n", "snapshots.dir", "is a file"),
            ("mqtt: {broker: mqtt://127.0.0.1:1}\ncameras:\n\(camera), record: {dir: \(file.path)}}\n", "record.dir", "is a file"),
            ("mqtt: {broker: mqtt://127.0.0.1:1}\ncameras:\n\(camera), record: {dir: \(file.path)/sub/video}}\n", "record.dir", "cannot make"),
        ]
    }

    @Test func checkRefusesWhatTheStartUpRefusesWithTheSameMessage() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("serve.yaml")
        for bad in try Self.badFiles(dir) {
            try bad.yaml.write(to: config, atomically: true, encoding: .utf8)
            let checked = try CLI.run(["serve", "--config", config.path, "--check"])
            let started = try CLI.run(["serve", "--config", config.path])
            #expect(checked.status == 64, "\(bad.key): \(checked.stderr)")
            #expect(started.status == 64, "\(bad.key): \(started.stderr)")
            #expect(checked.stderr == started.stderr)
            #expect(checked.stderr.contains("line ") && checked.stderr.contains(bad.key + ":") && checked.stderr.contains(bad.says),
                "\(bad.key): \(checked.stderr)")
        }
    }

    /// A folder on a read-only file system (the real one: a tmpfs remounted read-only).
    @Test func aReadOnlyFolderIsAProblemOfTheFile() throws {
        guard let disk = TemporaryFileSystem.make(megabytes: 1) else { return }
        try FileManager.default.createDirectory(atPath: disk.path + "/snaps", withIntermediateDirectories: true)
        #expect(disk.remount(readOnly: true) == nil)
        for (yaml, key) in [
            ("mqtt: {broker: mqtt://127.0.0.1:1, queue: {spool: \(disk.path)/spool}}\ncameras: [{name: a, input: \"synthetic:size=64x48\", codes: [qr]}]", "mqtt.queue.spool"),
            ("mqtt: {broker: mqtt://127.0.0.1:1}\ncameras: [{name: a, input: \"synthetic:size=64x48\", faces: {}, snapshots: {dir: \(disk.path)/snaps}}]", "snapshots.dir"),
            ("mqtt: {broker: mqtt://127.0.0.1:1}\ncameras: [{name: a, input: \"synthetic:size=64x48\", codes: [qr], record: {dir: \(disk.path)/new/video}}]", "record.dir"),
        ] {
            let error = #expect(throws: ServeConfigError.self) { try ServeConfig.parse(yaml) }
            let problem = error?.problems.first
            #expect(problem?.path.hasSuffix(key) == true && problem?.line != nil, "\(error?.description ?? "")")
            #expect(problem?.message.contains("read-only") == true, "\(problem?.message ?? "")")
        }
    }

    // MARK: Item 6: the default client ID

    @Test func theDefaultClientIDIsUniquePerPrefixAndFileAndStable() throws {
        let yaml = { (prefix: String) in "mqtt: {broker: mqtt://127.0.0.1, topicPrefix: \(prefix)}\ncameras: [{name: a, input: \"synthetic:size=64x48\", codes: [qr]}]" }
        let a = try ServeConfig.parse(yaml("cvcam"), file: "/etc/cvcam/a.yaml").mqtt.clientID
        let b = try ServeConfig.parse(yaml("site/b"), file: "/etc/cvcam/a.yaml").mqtt.clientID
        let c = try ServeConfig.parse(yaml("cvcam"), file: "/etc/cvcam/c.yaml").mqtt.clientID
        let again = try ServeConfig.parse(yaml("cvcam"), file: "/etc/cvcam/a.yaml").mqtt.clientID
        #expect(Set([a, b, c]).count == 3)
        #expect(a == again)
        #expect(a.wholeMatch(of: /cvcam-[A-Za-z0-9-]+-[0-9a-f]{8}/) != nil, "\(a)")
        #expect(a.hasPrefix("cvcam-" + ServeConfig.shortHostName.filter { $0.isLetter || $0.isNumber || $0 == "-" }))
        let named = try ServeConfig.parse("mqtt: {broker: mqtt://127.0.0.1, clientID: mine}\ncameras: [{name: a, input: \"synthetic:size=64x48\", codes: [qr]}]")
        #expect(named.mqtt.clientID == "mine")
    }
}
