import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
import AppTestSupport

/// The dashboard's library (issue #33 item 5): each camera's latest snapshots and clips from its
/// own folders, served by name only (never a path, never another file), clips downloadable and
/// playable as Motion-JPEG, the faces in view and the last code.
@Suite(.serialized) struct PreviewLibraryTests {
    func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-library-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A GET with a bound a busy machine meets (the server answers at once when it can).
    static func get(_ path: String, port: Int) throws -> (status: Int, head: String, body: String) {
        try PreviewServerTests.get(path, port: port, timeout: 30)
    }

    /// A real Motion-JPEG AVI of `frames` frames, made by `cvcam record`.
    func movie(_ url: URL, frames: Int) throws {
        let result = try CLI.run(["record", "-o", url.path, "--input", "synthetic:size=160x120,fps=10,frames=\(frames)", "-q"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// The server runs on Swift's cooperative pool (as wide as the cores); the test blocks while
    /// it waits for it, so it blocks a thread of its own, never one of the pool's.
    @Test func theDashboardListsAndServesOnlyTheCamerasOwnFiles() async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            Thread { done.resume(with: Result { try self.dashboardListsAndServesOnlyTheCamerasOwnFiles() }) }.start()
        }
    }

    func dashboardListsAndServesOnlyTheCamerasOwnFiles() throws {
        let base = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: base) }
        let snaps = base.appendingPathComponent("snaps"), clips = base.appendingPathComponent("clips")
        try FileManager.default.createDirectory(at: snaps, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: clips, withIntermediateDirectories: true)
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0]) + Data(repeating: 1, count: 100) + Data([0xFF, 0xD9])
        let now = Date()
        for (i, name) in ["door-20261120-101010.000-face1.jpg", "door-20261121-101010.000-face2.jpg"].enumerated() {
            try jpeg.write(to: snaps.appendingPathComponent(name))
            try FileManager.default.setAttributes(
                [.modificationDate: now.addingTimeInterval(Double(i - 10) * 60)], ofItemAtPath: snaps.appendingPathComponent(name).path)
        }
        try jpeg.write(to: snaps.appendingPathComponent("door-20261121-101010.000-face2-pre-01.jpg"))
        try Data("secret".utf8).write(to: snaps.appendingPathComponent("passwords.txt"))
        try Data("other".utf8).write(to: snaps.appendingPathComponent("yard-20261121-101010.000-face2.jpg"))
        try FileManager.default.createSymbolicLink(
            atPath: snaps.appendingPathComponent("door-20261122-101010.000-face3.jpg").path, withDestinationPath: "/etc/hostname")
        let clip = clips.appendingPathComponent("door-20261121-101011.000-clip.avi")
        try movie(clip, frames: 4)

        let directory = PreviewDirectory()
        directory.list(["door", "yard"], displayNames: ["door": "Front door"])
        let library = PreviewLibrary()
        library.set([
            "door": [.snapshots: .init(folder: snaps.path, prefix: "door"), .clips: .init(folder: clips.path, prefix: "door")],
            "yard": [:],
        ])
        library.record([], camera: "door")
        var server = PreviewServer(cameras: directory, token: nil)
        server.library = library
        let running = try server.start(on: ListenAddress(host: "127.0.0.1", port: 0))
        defer { running.stop() }
        let port = running.port

        // The index is the dashboard even for one page of cameras.
        let index = try Self.get("/", port: port)
        #expect(index.status == 200 && index.body.contains("data-library"))

        let dashboard = try Self.get("/dashboard.json", port: port)
        #expect(dashboard.status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(dashboard.body.utf8)) as? [String: Any])
        let cameras = try #require(json["cameras"] as? [[String: Any]])
        let door = try #require(cameras.first { $0["name"] as? String == "door" })
        let snapshots = try #require(door["snapshots"] as? [[String: Any]])
        // Newest first; the pre-frame belongs to its snapshot; nothing foreign, no link.
        #expect(snapshots.map { $0["name"] as? String } == ["door-20261121-101010.000-face2.jpg", "door-20261120-101010.000-face1.jpg"])
        #expect(snapshots.first?["preFrames"] as? Int == 1)
        let clipEntries = try #require(door["clips"] as? [[String: Any]])
        #expect(clipEntries.map { $0["name"] as? String } == [clip.lastPathComponent])
        let clipEntry = try #require(clipEntries.first)

        let photo = try Self.get("/cameras/door/snapshots/door-20261121-101010.000-face2.jpg", port: port)
        #expect(photo.status == 200 && photo.head.lowercased().contains("content-type: image/jpeg"))
        let saved = try Self.get("/cameras/door/snapshots/door-20261121-101010.000-face2.jpg?download=1", port: port)
        #expect(saved.head.lowercased().contains("content-disposition: attachment"))
        for path in [
            "/cameras/door/snapshots/passwords.txt", "/cameras/door/snapshots/yard-20261121-101010.000-face2.jpg",
            "/cameras/door/snapshots/door-20261122-101010.000-face3.jpg", "/cameras/door/snapshots/..%2Fsnaps%2Fpasswords.txt",
            "/cameras/door/snapshots/door-20261121-101010.000-face2-pre-01.jpg", "/cameras/yard/snapshots/door-20261121-101010.000-face2.jpg",
            "/cameras/door/clips/door-20261121-101010.000-face2.jpg", "/cameras/nobody/clips/\(clip.lastPathComponent)",
        ] {
            #expect(try Self.get(path, port: port).status == 404, "\(path)")
        }
        let download = try Self.get(try #require(clipEntry["download"] as? String), port: port)
        #expect(download.status == 200 && download.head.lowercased().contains("content-type: video/x-msvideo"))
        #expect(download.head.lowercased().contains("content-length: \(try FileManager.default.attributesOfItem(atPath: clip.path)[.size] as? Int ?? -1)"))
        let poster = try Self.get(try #require(clipEntry["image"] as? String), port: port)
        #expect(poster.status == 200 && poster.head.lowercased().contains("content-type: image/jpeg"))
        // Played as a Motion-JPEG stream: every frame of the clip, as stored, then the end.
        let play = try Self.get(try #require(clipEntry["play"] as? String), port: port)
        #expect(play.status == 200 && play.head.lowercased().contains("multipart/x-mixed-replace"))
        #expect(play.body.components(separatedBy: "Content-Type: image/jpeg").count - 1 == 4)
    }

    @Test func factsFollowTheCamerasEvents() throws {
        let library = PreviewLibrary()
        library.set(["door": [:]])
        let box = CGRect(x: 0.1, y: 0.1, width: 0.2, height: 0.2)
        let face = MetadataFaceObject(bounds: box, faceID: 7, confidence: 0.9, time: .zero, inputID: CaptureInput.ID(rawValue: 1))
        library.record([.faceEntered(face)], camera: "door")
        #expect(library.facts(of: "door").faceIDs == [7])
        library.record([.faceLeft(face)], camera: "door")
        #expect(library.facts(of: "door").faceIDs.isEmpty)
        library.record([.faceEntered(face)], camera: "door")
        library.sessionEnded(camera: "door")
        #expect(library.facts(of: "door").faceIDs.isEmpty)
    }
}
