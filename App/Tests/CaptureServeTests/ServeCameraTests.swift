import CaptureKit
import CaptureKitTesting
import Foundation
import Synchronization
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
import AppTestSupport


@Suite(.serialized) struct ServeCameraTests {
    static let face = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images/grace_hopper.jpg").path

    static func camera(_ yaml: String) throws -> ServeConfig.Camera {
        try ServeConfig.parse("mqtt: {broker: mqtt://127.0.0.1}\ncameras:\n" + yaml).cameras[0]
    }

    static func folder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("serve-camera-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A face crossing a synthetic scene with a QR code: its events on `events` in order, the
    /// retained faces count following them, the code retained, a snapshot's bytes retained,
    /// and the camera offline once its finite input ended.
    @Test func aCameraPublishesItsEventsAndKeepsItsRetainedState() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = try Self.camera("""
              - name: hall
                input: "synthetic:size=640x480,fps=30,frames=75,speed=400,image=\(Self.face),qr=HALL-1"
                faces: {}
                codes: [qr]
                snapshots: {dir: \(dir.path), minScore: 0.5}
            """)
        let topics = CameraTopics(prefix: "cvcam", camera: "hall")
        // The camera's thread, noted when it says it is online (it lingers in its exit).
        let threads = ThreadNotes(lingers: true)
        let publisher = RecordingPublisher { topic in if topic == topics.availability { threads.noteCurrent() } }
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil)
        camera.start()
        #expect(publisher.wait { $0.on(topics.availability).last?.text == "offline" && $0.on(topics.availability).count >= 2 })
        camera.stop()
        // stop() joined the camera's thread: it has exited.
        #expect(!threads.all.isEmpty)
        #expect(threads.alive.filter { $0 != ThreadNotes.currentKernelThreadID() }.isEmpty, "the camera's thread is still listed")
        let events = publisher.on(topics.events).compactMap(\.json)
        #expect(events.first?["type"] as? String == "start")
        let faceEvents = events.filter { $0["type"] as? String == "face" }.map { $0["event"] as? String ?? "" }
        #expect(faceEvents.first == "enter")
        #expect(faceEvents.last == "leave")
        #expect(events.contains { $0["type"] as? String == "code" && $0["event"] as? String == "appear" && $0["text"] as? String == "HALL-1" })
        for event in events { #expect(event["schema"] as? Int == 1 && event["wallTime"] is String) }
        // Retained: faces went up and ended at 0; the code is the appear event; availability offline.
        let counts = publisher.on(topics.faces).compactMap { $0.json?["count"] as? Int }
        #expect(counts.contains { $0 > 0 })
        #expect(publisher.retained(topics.faces)?.json?["count"] as? Int == 0)
        #expect(publisher.retained(topics.code)?.json?["text"] as? String == "HALL-1")
        #expect(publisher.on(topics.availability).map(\.text) == ["online", "offline"])
        // The snapshot: the file on disk and its bytes on the retained topic.
        let snapshot = try #require(events.first { $0["type"] as? String == "snapshot" })
        let path = try #require(snapshot["path"] as? String)
        let bytes = try #require(publisher.retained(topics.snapshot)?.payload)
        #expect(bytes.starts(with: [0xFF, 0xD8, 0xFF]))
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == bytes)
        #expect(URL(fileURLWithPath: path).lastPathComponent.hasPrefix("hall-"))
    }

    /// An input that cannot be opened: an error event, offline, and tries again with backoff
    /// until stopped (which is prompt even while waiting).
    @Test func aCameraThatCannotOpenItsInputRetriesWithBackoff() throws {
        let config = try Self.camera("""
              - name: gone
                input: /nonexistent/clip.mp4
                codes: [qr]
            """)
        let publisher = RecordingPublisher()
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil)
        camera.start()
        let topics = CameraTopics(prefix: "cvcam", camera: "gone")
        #expect(publisher.wait(10) { $0.on(topics.events).count >= 3 })
        let started = Date()
        camera.stop()
        // Stopping does not wait out the retry's back-off (a busy box gets slack).
        #expect(Date().timeIntervalSince(started) < 8)
        let errors = publisher.on(topics.events).compactMap(\.json)
        #expect(errors.allSatisfy { $0["type"] as? String == "error" && $0["code"] as? String == "cameraFailed" })
        #expect((errors.first?["message"] as? String)?.contains("trying again in 0.5 s") == true)
        #expect((errors.dropFirst().first?["message"] as? String)?.contains("trying again in 1.0 s") == true)
        #expect(camera.reconnectAttempts >= 2)
        #expect(camera.reconnects == 0)
        #expect(publisher.on(topics.availability).allSatisfy { $0.text == "offline" })
    }

    /// Commands on `set`: good ones act, bad ones are answered on `error` and change nothing.
    @Test func commandsActAndBadOnesAreAnswered() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = try Self.camera("""
              - name: desk
                input: "synthetic:size=640x480,fps=15,qr=LEFT"
                faces: {}
                codes: {types: [qr], repeatInterval: 0.5}
                snapshots: {dir: \(dir.path)}
                commands: {perSecond: 100, burst: 100}   # more than the default burst of 10 follow
            """)
        let publisher = RecordingPublisher()
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil)
        let topics = CameraTopics(prefix: "cvcam", camera: "desk")
        defer { camera.stop() }
        camera.start()
        #expect(publisher.wait { $0.retained(topics.code) != nil })
        for bad in ["", "explode", "detect maybe", "roi 0.5,0.5,0.9,0.9", "roi a,b,c,d", "snapshot now", "<script>alert(1)</script>"] {
            let before = publisher.on(topics.error).count
            camera.handle(command: Array(bad.utf8))
            let answer = try #require(publisher.on(topics.error).dropFirst(before).first?.json, "\(bad)")
            #expect(answer["type"] as? String == "error" && answer["code"] as? String == "badCommand")
        }
        // A binary payload is refused as text, not a crash.
        camera.handle(command: [0xFF, 0x00, 0xFE])
        // roi: the code (in the middle of the frame) is outside the top-left corner: no more repeats.
        camera.handle(command: Array("roi 0,0,0.1,0.1".utf8))
        Thread.sleep(forTimeInterval: 0.5)
        let codesBefore = publisher.on(topics.events).filter { $0.json?["type"] as? String == "code" && $0.json?["event"] as? String != "leave" }.count
        Thread.sleep(forTimeInterval: 1.5)
        let codesAfter = publisher.on(topics.events).filter { $0.json?["type"] as? String == "code" && $0.json?["event"] as? String != "leave" }.count
        #expect(codesAfter == codesBefore)
        camera.handle(command: Array("roi off".utf8))
        #expect(publisher.wait(60) { $0.on(topics.events).filter { $0.json?["type"] as? String == "code" && $0.json?["event"] as? String != "leave" }.count > codesAfter })
        // detect off and on again are taken (ServeStateTests follows a face through them).
        let refusedBefore = publisher.on(topics.error).count
        camera.handle(command: Array("detect off".utf8))
        camera.handle(command: Array("detect on".utf8))
        #expect(publisher.on(topics.error).count == refusedBefore)
        // snapshot: a photo of the next frame, on disk and retained.
        let errorsBefore = publisher.on(topics.error).count
        camera.handle(command: Array("snapshot".utf8))
        #expect(publisher.wait(60) { $0.on(topics.events).contains { $0.json?["reason"] as? String == "requested" } })
        let event = try #require(publisher.on(topics.events).compactMap(\.json).first { $0["reason"] as? String == "requested" })
        let path = try #require(event["path"] as? String)
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(publisher.retained(topics.snapshot)?.payload.starts(with: [0xFF, 0xD8]) == true)
        #expect(publisher.on(topics.error).count == errorsBefore)
    }
}

/// Motion in `serve`: on by default, a `motion` event on `events` and the retained `motion` topic.
@Suite(.serialized) struct ServeMotionTests {
    static let face = ServeCameraTests.face

    /// A still textured scene a face crosses from 3 s on: motion starts as it enters (retained
    /// `ON`), ends after it left (`OFF`), and its `start` comes no later than the face's `enter`.
    @Test func aCameraPublishesMotionAndItsRetainedState() throws {
        let config = try ServeCameraTests.camera("""
              - name: porch
                input: "synthetic:size=320x240,fps=10,frames=80,background=noise,speed=300,appear=3,image=\(Self.face)"
                faces: {}
                motion: {idleInterval: 2, masks: [[0, 0, 0.1, 0.1]]}
            """)
        let publisher = RecordingPublisher()
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil)
        camera.start()
        let topics = CameraTopics(prefix: "cvcam", camera: "porch")
        #expect(publisher.wait { $0.on(topics.availability).last?.text == "offline" && $0.on(topics.availability).count >= 2 })
        camera.stop()
        let events = publisher.on(topics.events).compactMap(\.json)
        let motion = events.filter { $0["type"] as? String == "motion" }
        #expect(motion.map { $0["event"] as? String } == ["start", "end"], "\(motion)")
        let start = try #require(motion.first)
        let startTime = try #require(start["time"] as? Double)
        // The face enters at 3 s: nothing moved before.
        #expect(startTime >= 3 && startTime <= 3.3, "\(start)")
        #expect((start["regions"] as? [Any])?.isEmpty == false && start["box"] is [String: Any])
        let enter = try #require(events.first { $0["type"] as? String == "face" && $0["event"] as? String == "enter" })
        #expect(try #require(enter["time"] as? Double) >= startTime)
        // Retained: ON while it moved, OFF after (and OFF again as the camera stopped).
        let states = publisher.on(topics.motion).map(\.text)
        #expect(states.first == "ON" && states.contains("OFF"), "\(states)")
        #expect(publisher.retained(topics.motion)?.text == "OFF")
    }

    @Test func motionFalseTurnsItOff() throws {
        let config = try ServeCameraTests.camera("""
              - name: shed
                input: "synthetic:size=320x240,fps=10,frames=30,background=noise,speed=300,image=\(Self.face)"
                faces: {}
                motion: false
            """)
        #expect(config.motionDetection == .disabled)
        let publisher = RecordingPublisher()
        let camera = ServeCamera(config: config, prefix: "cvcam", publisher: publisher, statsInterval: nil)
        camera.start()
        let topics = CameraTopics(prefix: "cvcam", camera: "shed")
        #expect(publisher.wait { $0.on(topics.availability).last?.text == "offline" && $0.on(topics.availability).count >= 2 })
        camera.stop()
        #expect(!publisher.on(topics.events).compactMap(\.json).contains { $0["type"] as? String == "motion" })
        #expect(publisher.on(topics.motion).isEmpty)
    }

    @Test func motionSettingsAreReadAndCheckedInTheFilesWords() throws {
        let plain = try ServeCameraTests.camera("""
              - name: a
                input: "synthetic:size=320x240"
                codes: [qr]
            """)
        // On by default in serve, with the library's defaults.
        #expect(plain.motionDetection == CaptureMetadataOutput.MotionDetection())
        let tuned = try ServeCameraTests.camera("""
              - name: b
                input: "synthetic:size=320x240"
                codes: [qr]
                motion: {threshold: 40, minArea: 0.01, idleInterval: 5, endDelay: 2, masks: [[0, 0, 0.5, 0.25], "0.5,0.5,0.5,0.5"]}
            """)
        let m = tuned.motionDetection
        #expect(m.isEnabled && m.threshold == 40 && m.minimumArea == 0.01 && m.idleAnalysisInterval == 5 && m.endDelay == 2)
        #expect(m.masks == [CGRect(x: 0, y: 0, width: 0.5, height: 0.25), CGRect(x: 0.5, y: 0.5, width: 0.5, height: 0.5)])
        for (bad, says) in [
            ("{threshold: 0}", "motion.threshold"), ("{masks: [[0, 0, 2, 1]]}", "motion.masks"), ("{idle: 3}", "motion.idle"),
            ("{masks: 3}", "motion.masks"),
        ] {
            do {
                _ = try ServeConfig.parse(
                    "mqtt: {broker: mqtt://127.0.0.1}\ncameras:\n  - name: c\n    input: synthetic:size=320x240\n    codes: [qr]\n    motion: \(bad)\n")
                Issue.record("\(bad) was accepted")
            } catch {
                #expect("\(error)".contains(says), "\(bad): \(error)")
            }
        }
    }
}
