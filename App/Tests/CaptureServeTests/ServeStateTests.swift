import CaptureKit
import Foundation
import Synchronization
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
import AppTestSupport

/// A broker stand-in for the daemon: every publish kept in order; `start()` connects at once
/// (the daemon's `onConnect` handlers run, as on a real first connection) and `reconnect()`
/// runs them again.
final class RecordingLink: ServeBrokerLink {
    let published = RecordingPublisher()
    private let handlers = Mutex<[@Sendable () -> Void]>([])

    func publish(topic: String, payload: [UInt8], retain: Bool, latestOnly: Bool) {
        published.publish(topic: topic, payload: payload, retain: retain, latestOnly: latestOnly)
    }
    func start() { reconnect() }
    func reconnect() { for handler in handlers.withLock({ $0 }) { handler() } }
    func subscribe(_ filter: String, handler: @escaping @Sendable (String, [UInt8]) -> Void) {}
    func onConnect(_ handler: @escaping @Sendable () -> Void) { handlers.withLock { $0.append(handler) } }
    func flush(timeout: Double) -> Bool { true }
    func stop() {}
}

/// What `cvcam serve` tells Home Assistant, the broker and Prometheus must stay true: faces
/// after `detect off|on`, codes longer than a Home Assistant state, entities the camera can
/// fill, retained topics of removed cameras, and metrics that mean what their help says
/// (issue #30, items 11–14).
@Suite(.serialized) struct ServeStateTests {
    static let faces = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images").path

    static func camera(_ yaml: String) throws -> ServeConfig.Camera {
        try ServeConfig.parse("mqtt: {broker: mqtt://127.0.0.1}\ncameras:\n" + yaml).cameras[0]
    }

    static func faceEvents(_ publisher: RecordingPublisher, _ topics: CameraTopics) -> [(event: String, id: Int)] {
        publisher.on(topics.events).compactMap(\.json).filter { $0["type"] as? String == "face" }.compactMap { e in
            guard let event = e["event"] as? String, let id = e["faceID"] as? Int else { return nil }
            return (event, id)
        }
    }

    // MARK: Item 11: detect off, detect on

    /// A face that stays in view: `detect off` ends its track (a `leave` event, the retained
    /// faces count 0: Home Assistant's occupancy sensor goes off) and `detect on` finds it afresh
    /// (an `enter` with a new ID, the count 1 again), never as updates of a face that left.
    @Test func detectOffEndsTheFacesInViewAndDetectOnFindsThemAfresh() throws {
        let config = try Self.camera("""
              - name: hall
                input: "synthetic:size=320x240,fps=10,background=\(Self.faces)/astronaut.png"
                faces: {updateInterval: 0.2}
            """)
        let publisher = RecordingPublisher()
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil)
        let topics = CameraTopics(prefix: "cvcam", camera: "hall")
        camera.start()
        defer { camera.stop() }
        let count = { publisher.retained(topics.faces)?.json?["count"] as? Int }
        #expect(publisher.wait(60) { _ in count() == 1 }, "\(Self.faceEvents(publisher, topics))")
        let first = try #require(Self.faceEvents(publisher, topics).first)
        #expect(first.event == "enter")

        camera.handle(command: Array("detect off".utf8))
        #expect(publisher.wait(30) { _ in Self.faceEvents(publisher, topics).contains { $0.event == "leave" && $0.id == first.id } },
            "no leave after detect off: \(Self.faceEvents(publisher, topics))")
        #expect(count() == 0)
        let beforeOn = Self.faceEvents(publisher, topics).count

        camera.handle(command: Array("detect on".utf8))
        #expect(publisher.wait(60) { _ in count() == 1 }, "the face sensor stayed off: \(Self.faceEvents(publisher, topics))")
        let after = Self.faceEvents(publisher, topics).dropFirst(beforeOn)
        #expect(after.first?.event == "enter", "\(Array(after))")
        #expect(after.first.map { $0.id != first.id } == true)
        #expect(!after.contains { $0.id == first.id }, "the face that left was updated again: \(Array(after))")
    }

    // MARK: Item 12: a code longer than a Home Assistant state

    /// A 320-character code: the retained `code` message keeps the whole text in `text` and
    /// gives Home Assistant a `state` of at most 255 characters, cut before the accented letter
    /// that would not fit whole, ending in `…`; the sensor reads `state` and shows `text` as
    /// an attribute.
    @Test func aCodeLongerThanAHomeAssistantStateIsCutInItsStateAndWholeInItsText() throws {
        let payload = String(repeating: "A", count: 253) + "e\u{301}" + String(repeating: "B", count: 65)
        let config = try Self.camera("""
              - name: desk
                input: "synthetic:size=640x480,fps=10,frames=30,qr=\(payload)"
                codes: [qr]
            """)
        let publisher = RecordingPublisher()
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil)
        let topics = CameraTopics(prefix: "cvcam", camera: "desk")
        camera.start()
        defer { camera.stop() }
        #expect(publisher.wait(60) { $0.retained(topics.code) != nil })
        let retained = try #require(publisher.retained(topics.code)?.json)
        #expect(retained["text"] as? String == payload)
        let state = try #require(retained["state"] as? String)
        #expect(state == String(repeating: "A", count: 253) + "…")
        #expect(state.unicodeScalars.count <= HomeAssistantDiscovery.maximumStateLength)
        #expect(retained["type"] as? String == "code" && retained["event"] as? String == "appear")
        // The event on `events` is the schema's own, without `state`.
        let event = try #require(publisher.on(topics.events).compactMap(\.json).first { $0["type"] as? String == "code" })
        #expect(event["state"] == nil)
        #expect(event["wallTime"] as? String == retained["wallTime"] as? String)
    }

    // MARK: Item 13: entities that can work, announced once, cleared with the camera

    static func daemonConfig(_ dir: URL, cameras: String) -> String {
        """
        mqtt: {broker: "mqtt://127.0.0.1:1", homeAssistant: {discoveryPrefix: ha}}
        stats: 0
        cameras:
        \(cameras)
        """
    }

    static let codesOnly = """
          - name: codes
            input: "synthetic:size=160x120,fps=5,qr=CODES"
            codes: [qr]
        """

    static func everything(_ dir: URL) -> String {
        """
          - name: all
            input: "synthetic:size=160x120,fps=5,qr=ALL"
            faces: {}
            codes: [qr]
            snapshots: {dir: \(dir.path)/snaps}
        """
    }

    /// Home Assistant is told about what each camera does, once: a camera with only codes gets
    /// the code sensor (the face sensor and the camera entity, which it could never fill, are
    /// withdrawn); a camera with faces, codes and snapshots gets all three. A reconnect
    /// announces them again (the broker may have lost them), and a reload that removes a camera
    /// empties its configs and every retained topic it kept.
    @Test func homeAssistantGetsOnlyWhatACameraDoesOnceAndNothingOfARemovedCamera() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("serve.yaml")
        try Self.daemonConfig(dir, cameras: Self.codesOnly + "\n" + Self.everything(dir)).write(to: file, atomically: true, encoding: .utf8)
        let config = try ServeConfig.load(path: file.path)
        let link = RecordingLink()
        let daemon = ServeDaemon(config: config, configPath: file.path, link: link)
        daemon.start()
        defer { daemon.shutdown() }
        let published = link.published
        #expect(published.wait(60) { p in
            ["codes", "all"].allSatisfy { p.retained("cvcam/\($0)/availability")?.text == "online" }
                && p.retained("cvcam/codes/code") != nil && p.retained("cvcam/all/code") != nil
        })
        let configTopic = { (component: String, camera: String, key: String) in "ha/\(component)/cvcam_cvcam/\(camera)_\(key)/config" }
        func configs(_ topic: String) -> [RecordingPublisher.Message] { published.on(topic).filter { !$0.payload.isEmpty } }
        // codes: the sensor only, announced once; the others withdrawn (empty), never announced.
        #expect(configs(configTopic("sensor", "codes", "code")).count == 1)
        #expect(configs(configTopic("binary_sensor", "codes", "face")).isEmpty)
        #expect(configs(configTopic("camera", "codes", "snapshot")).isEmpty)
        #expect(published.retained(configTopic("binary_sensor", "codes", "face"))?.payload.isEmpty == true)
        // all: three entities, each announced once.
        for (component, key) in [("binary_sensor", "face"), ("sensor", "code"), ("camera", "snapshot")] {
            #expect(configs(configTopic(component, "all", key)).count == 1, "\(component) of all")
        }
        // No faces state for a camera that does not look for faces.
        #expect(published.on("cvcam/codes/faces").isEmpty)

        // A reconnect announces again, once more each.
        link.reconnect()
        #expect(configs(configTopic("sensor", "codes", "code")).count == 2)

        // A reload removes `codes`: its configs and its retained state are emptied, last.
        try Self.daemonConfig(dir, cameras: Self.everything(dir)).write(to: file, atomically: true, encoding: .utf8)
        #expect(daemon.reload())
        for topic in [configTopic("sensor", "codes", "code"), "cvcam/codes/availability", "cvcam/codes/code"] {
            #expect(published.retained(topic)?.payload.isEmpty == true, "\(topic) still holds \(published.retained(topic)?.text ?? "nothing")")
        }
        // The camera that stays keeps its state.
        #expect(published.retained("cvcam/all/availability")?.text == "online")
        #expect(published.retained(configTopic("sensor", "all", "code"))?.payload.isEmpty == false)
    }

    // MARK: Item 14: metrics that mean what their help says

    /// Faces and codes on one camera: the latency histogram gets one observation per analysed
    /// frame for each stage, in its own `stage` series, so each series counts the frames.
    @Test func theLatencyHistogramHasOneObservationPerFrameAndStage() throws {
        let config = try Self.camera("""
              - name: both
                input: "synthetic:size=320x240,fps=10,frames=20,background=\(Self.faces)/astronaut.png,qr=BOTH"
                faces: {}
                codes: [qr]
            """)
        let metrics = ServeMetrics()
        let publisher = RecordingPublisher()
        let camera = ServeCamera(
            config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil, metrics: metrics.camera("both"))
        camera.start()
        let topics = CameraTopics(prefix: "cvcam", camera: "both")
        #expect(publisher.wait(60) { $0.on(topics.availability).last?.text == "offline" && $0.on(topics.availability).count >= 2 })
        camera.stop()
        let text = metrics.render()
        let analysed = try #require(ServeMetricsTests.sample(text, #"cvcam_frames_analysed_total{camera="both"}"#))
        #expect(analysed > 0)
        for stage in ["faces", "codes"] {
            let count = ServeMetricsTests.sample(text, #"cvcam_detection_latency_seconds_count{camera="both",stage=""# + stage + #""}"#)
            #expect(count == analysed, "\(stage): \(String(describing: count)) observations for \(analysed) frames\n\(text)")
        }
    }

    /// A camera that never opens: every attempt counted as an attempt, none as a reconnection.
    @Test func attemptsToReopenAreNotReconnections() throws {
        let config = try Self.camera("""
              - name: gone
                input: /nonexistent/clip.mp4
                codes: [qr]
            """)
        let metrics = ServeMetrics()
        let publisher = RecordingPublisher()
        let camera = ServeCamera(
            config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil, metrics: metrics.camera("gone"))
        camera.start()
        #expect(publisher.wait(20) { $0.on("cvcam/gone/events").count >= 3 })
        camera.stop()
        let text = metrics.render()
        #expect((ServeMetricsTests.sample(text, #"cvcam_input_reconnect_attempts_total{camera="gone"}"#) ?? 0) >= 2, "\(text)")
        #expect(ServeMetricsTests.sample(text, #"cvcam_input_reconnects_total{camera="gone"}"#) == 0, "\(text)")
        #expect(camera.reconnects == 0 && camera.reconnectAttempts >= 2)
    }

    /// A camera removed by a reload takes its series with it; the one that stays keeps its own.
    @Test func aCameraRemovedByAReloadLeavesTheMetrics() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("serve.yaml")
        try Self.daemonConfig(dir, cameras: Self.codesOnly + "\n" + Self.everything(dir)).write(to: file, atomically: true, encoding: .utf8)
        let metrics = ServeMetrics()
        let link = RecordingLink()
        let daemon = ServeDaemon(config: try ServeConfig.load(path: file.path), configPath: file.path, link: link, metrics: metrics)
        daemon.start()
        defer { daemon.shutdown() }
        #expect(link.published.wait(60) { p in ["codes", "all"].allSatisfy { p.retained("cvcam/\($0)/availability")?.text == "online" } })
        #expect(metrics.render().contains(#"cvcam_camera_online{camera="codes"} 1"#))
        try Self.daemonConfig(dir, cameras: Self.everything(dir)).write(to: file, atomically: true, encoding: .utf8)
        #expect(daemon.reload())
        let text = metrics.render()
        #expect(!text.contains(#"camera="codes""#), "\(text)")
        #expect(text.contains(#"cvcam_camera_online{camera="all"} 1"#), "\(text)")
    }
}
