import Foundation
import Testing

@testable import CaptureJobs
@testable import CaptureServe
import AppTestSupport

/// The daemon's retention and event clips end to end in-process: `retention:` removes a
/// camera's old files and says so on its events topic; `clips:` writes a clip around a face's
/// visit and announces it with its path, times and face IDs (issue #33 items 1, 2).
@Suite(.serialized) struct ServeFilesTests {
    static let face = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/faces/images/astronaut.png").path

    func plant(_ folder: URL, _ name: String, days: Double) throws {
        let url = folder.appendingPathComponent(name)
        try Data(repeating: 3, count: 2048).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-days * 86_400)], ofItemAtPath: url.path)
    }

    @Test func retentionRemovesACamerasOldRecordingsAndAnnouncesIt() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let video = dir.appendingPathComponent("video")
        try FileManager.default.createDirectory(at: video, withIntermediateDirectories: true)
        try plant(video, "gate-20250101-101010.000.avi", days: 30)
        try plant(video, "gate-20250102-101010.000.avi", days: 29)
        try plant(video, "yard-20250101-101010.000.avi", days: 30)
        try plant(video, "notes.avi", days: 30)
        let config = try ServeConfig.parse("""
            mqtt: {broker: mqtt://127.0.0.1}
            retention: {recordings: {maxAge: 7d}, interval: 3600}
            cameras:
              - name: gate
                input: "synthetic:size=160x120,fps=5,qr=GATE"
                codes: [qr]
                record: {dir: \(video.path), segment: 60}
            """)
        let link = RecordingLink()
        let metrics = ServeMetrics()
        let daemon = ServeDaemon(config: config, configPath: nil, link: link, metrics: metrics)
        daemon.start()
        defer { daemon.shutdown() }
        let topic = CameraTopics(prefix: "cvcam", camera: "gate").events
        #expect(link.published.wait(60) { p in p.on(topic).contains { $0.json?["type"] as? String == "retention" } })
        let event = try #require(link.published.on(topic).compactMap(\.json).first { $0["type"] as? String == "retention" })
        #expect(event["kind"] as? String == "recordings" && event["reason"] as? String == "maxAge" && event["count"] as? Int == 2)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: video.path))
        #expect(!left.contains("gate-20250101-101010.000.avi") && !left.contains("gate-20250102-101010.000.avi"))
        #expect(left.isSuperset(of: ["yard-20250101-101010.000.avi", "notes.avi"]))
        #expect(ServeMetricsTests.sample(metrics.render(), #"cvcam_retention_removed_files_total{camera="gate",kind="recordings",reason="maxAge"}"#) == 2)
        // A reload without `retention:` stops it.
        #expect(daemon.retentionKeeper != nil)
    }

    @Test func aFacesVisitBecomesAClipAnnouncedWithItsPathTimesAndFaceIDs() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clips = dir.appendingPathComponent("clips")
        // 4 s at 10 fps: the face crosses from about 0.8 s; the scene ends with it in view.
        let config = try ServeConfig.parse("""
            mqtt: {broker: mqtt://127.0.0.1}
            cameras:
              - name: door
                input: "synthetic:size=640x480,fps=10,frames=40,image=\(Self.face)"
                faces: {}
                clips: {dir: \(clips.path), preRoll: 0.5, postRoll: 1, maxClip: 60}
            """)
        let link = RecordingLink()
        let daemon = ServeDaemon(config: config, configPath: nil, link: link)
        daemon.start()
        defer { daemon.shutdown() }
        let topic = CameraTopics(prefix: "cvcam", camera: "door").events
        #expect(link.published.wait(120) { p in p.on(topic).contains { $0.json?["type"] as? String == "clip" } })
        let events = link.published.on(topic).compactMap(\.json)
        let clip = try #require(events.first { $0["type"] as? String == "clip" })
        let enter = try #require(events.first { $0["type"] as? String == "face" && $0["event"] as? String == "enter" })
        let path = try #require(clip["path"] as? String)
        #expect(URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL.path == clips.standardizedFileURL.path)
        #expect(URL(fileURLWithPath: path).lastPathComponent.hasPrefix("door-") && path.hasSuffix("-clip.avi"))
        #expect(clip["faceIDs"] as? [Int] == [enter["faceID"] as? Int ?? -1])
        // It starts the pre-roll before the face entered (within a frame) and ends with the scene.
        let start = try #require(clip["start"] as? Double), entered = try #require(enter["time"] as? Double)
        #expect(abs(start - max(0, entered - 0.5)) <= 0.1 + 1e-6, "start \(start), entered \(entered)")
        #expect(clip["ended"] as? String == "stopped")
        #expect((clip["frames"] as? Int ?? 0) > 0 && FileManager.default.fileExists(atPath: path))
    }
}
