import CaptureKit
import Foundation
import Testing

import AppTestSupport

/// `cvcam watch --clips DIR --clip-triggers codes` (issue #33 item 2): the built binary writes a
/// code's visit as an event clip whose file holds the pre-roll before the code appeared to the
/// post-roll after it left, with the code in its frames, and refuses triggers it has not.
@Suite struct ClipTriggerCLITests {
    func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-cliptrigger-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// `cvcam watch --clips … --pre-roll 1 --post-roll 1 --json` with `options` on the scene's
    /// video (the code is in view from 2.0 s to 3.4 s of 6 s): its JSON events and the clips folder.
    func watchTheScene(_ scene: ClipTestScene, in dir: URL, _ options: [String]) throws -> (events: [[String: Any]], clips: URL) {
        let video = dir.appendingPathComponent("door.avi")
        try scene.writeVideo(to: video)
        let clips = dir.appendingPathComponent("clips")
        let result = try CLI.run(
            ["watch", "--dir", dir.appendingPathComponent("snaps").path, "--clips", clips.path] + options
                + ["--pre-roll", "1", "--post-roll", "1", "--input", video.path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = result.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        return (events, clips)
    }

    @Test func aCodesVisitBecomesAClipFromPreRollBeforeItAppearedToPostRollAfterItLeft() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scene = ClipTestScene()
        let (events, clips) = try watchTheScene(scene, in: dir, ["--clip-triggers", "codes"])
        let announced = events.filter { $0["type"] as? String == "clip" }
        #expect(announced.count == 1, "\(events)")
        let clip = try #require(announced.first)
        let path = try #require(clip["path"] as? String)
        #expect(URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL.path == clips.standardizedFileURL.path)
        #expect(path.hasSuffix("-clip.avi"))
        #expect(clip["triggers"] as? [String] == ["code"] && clip["faceIDs"] as? [Int] == [])
        #expect(clip["ended"] as? String == "postRoll")
        let wantStart = scene.codeAppears - 1, wantEnd = scene.codeLastSeen + 1
        let start = try #require(clip["start"] as? Double), end = try #require(clip["end"] as? Double)
        #expect(abs(start - wantStart) <= ClipTestScene.frame + 1e-6, "start \(start)")
        #expect(abs(end - wantEnd) <= ClipTestScene.frame + 1e-6, "end \(end)")
        // The file itself: its first and last frames were taken then, and its frames show the code.
        let frames = try ClipTestScene.frames(of: URL(fileURLWithPath: path))
        #expect(frames.count == clip["frames"] as? Int)
        let first = try ClipTestScene.markerTime(try #require(frames.first))
        let last = try ClipTestScene.markerTime(try #require(frames.last))
        #expect(abs(first - wantStart) <= ClipTestScene.frame + 1e-6, "first frame at \(first)")
        #expect(abs(last - wantEnd) <= ClipTestScene.frame + 1e-6, "last frame at \(last)")
        let middle = frames[frames.count / 2]
        let middleTime = try ClipTestScene.markerTime(middle)
        #expect(middleTime >= scene.codeAppears && middleTime <= scene.codeLastSeen, "middle frame at \(middleTime)")
        #expect(try ClipTestScene.codes(in: middle) == [scene.payload])
        #expect(try ClipTestScene.codes(in: frames[0]).isEmpty, "the pre-roll is from before the code appeared")
        #expect(events.last?["type"] as? String == "summary" && events.last?["clips"] as? Int == 1)
    }

    /// `watch --motion --clip-triggers motion`: the code coming into view is motion, found on the
    /// frame it appears in; the clip starts --pre-roll before it, the `motion` events say when it
    /// started, and while nothing moved the face search ran at the idle rate only.
    @Test func withMotionAMotionStartsAClipAndStillFramesAreSpared() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scene = ClipTestScene()
        // The mask: the time marker moving along the top edge.
        let (events, _) = try watchTheScene(scene, in: dir, ["--clip-triggers", "motion", "--motion", "--motion-mask", "0,0,1,0.1"])
        let motions = events.filter { $0["type"] as? String == "motion" }
        let firstStart = try #require(motions.first { $0["event"] as? String == "start" }, "\(events)")
        let started = try #require(firstStart["time"] as? Double)
        #expect(abs(started - scene.codeAppears) <= ClipTestScene.frame + 1e-6, "motion started at \(started)")
        let announced = events.filter { $0["type"] as? String == "clip" }
        let clip = try #require(announced.first, "\(events)")
        #expect((clip["triggers"] as? [String])?.contains("motion") == true, "\(clip)")
        let start = try #require(clip["start"] as? Double)
        #expect(abs(start - (scene.codeAppears - 1)) <= ClipTestScene.frame + 1e-6, "start \(start)")
        let frames = try ClipTestScene.frames(of: URL(fileURLWithPath: try #require(clip["path"] as? String)))
        #expect(abs(try ClipTestScene.markerTime(try #require(frames.first)) - (scene.codeAppears - 1)) <= ClipTestScene.frame + 1e-6)
        // 60 frames; the 20 before the code came were still: one idle look every 2 s among them.
        let summary = try #require(events.last)
        #expect(summary["type"] as? String == "summary" && summary["clips"] as? Int == announced.count)
        let analysed = try #require(summary["analysed"] as? Int), total = try #require(summary["frames"] as? Int)
        #expect(total == 60 && analysed < total - 15, "analysed \(analysed) of \(total)")
    }

    @Test func clipTriggersRefusesWhatWatchCannotStartClipsOnSayingWhatItTakes() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = ["watch", "--dir", dir.path, "--input", "synthetic:size=64x48,frames=1"]
        let motion = try CLI.run(base + ["--clips", dir.path, "--clip-triggers", "faces,motion"])
        #expect(motion.status == 64)
        #expect(motion.stderr.contains("--clip-triggers motion needs --motion"), "\(motion.stderr)")
        let unknown = try CLI.run(base + ["--clips", dir.path, "--clip-triggers", "people"])
        #expect(unknown.status == 64 && unknown.stderr.contains("'people' is not one of them"), "\(unknown.stderr)")
        let alone = try CLI.run(base + ["--clip-triggers", "codes"])
        #expect(alone.status == 64 && alone.stderr.contains("--clip-triggers needs --clips"), "\(alone.stderr)")
    }
}
