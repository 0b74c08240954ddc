import CaptureKit
import Foundation
import Testing

@testable import CaptureServe
import AppTestSupport

/// The daemon's event clips started by codes and by motion, end to end (issue #33 item 2): a
/// code's visit in a video whose timeline is known becomes clips cut at `maxClip` whose files
/// hold exactly the frames asked for, and a network MJPEG camera's clips hold its own JPEGs,
/// byte for byte, announced on a real broker.
@Suite(.serialized) struct ClipTriggerTests {
    @Test func aCodesVisitBecomesClipsCutAtMaxClipWhoseFramesAreTheOnesAskedFor() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scene = ClipTestScene()  // the code is in view from 2.0 s to 3.4 s of 6 s
        let video = dir.appendingPathComponent("door.avi")
        try scene.writeVideo(to: video)
        let clips = dir.appendingPathComponent("clips")
        // Faces and codes both start clips; the scene has no face. Every frame is analysed
        // (`motion: false`), so the code's first and last frames are known exactly.
        let config = try ServeConfig.parse("""
            mqtt: {broker: mqtt://127.0.0.1}
            cameras:
              - name: door
                input: \(video.path)
                faces: {}
                codes: [qr]
                motion: false
                clips: {dir: \(clips.path), preRoll: 1, postRoll: 1, maxClip: 2, triggers: [faces, codes]}
            """)
        let link = RecordingLink()
        let daemon = ServeDaemon(config: config, configPath: nil, link: link)
        daemon.start()
        defer { daemon.shutdown() }
        let topic = CameraTopics(prefix: "cvcam", camera: "door").events
        // The visit is 1.0 … 4.4 s: a clip to the 2 s cap at 3.0 s, and the next from 3.1 s on.
        #expect(link.published.wait(180) { p in p.on(topic).filter { $0.json?["type"] as? String == "clip" }.count >= 2 })
        let events = link.published.on(topic).compactMap(\.json)
        let appear = try #require(events.first { $0["type"] as? String == "code" && $0["event"] as? String == "appear" })
        #expect(abs((appear["time"] as? Double ?? -1) - scene.codeAppears) <= 1e-6, "\(appear)")
        let announced = events.filter { $0["type"] as? String == "clip" }
        let wanted: [(start: Double, end: Double, ended: String, continues: Bool)] = [
            (scene.codeAppears - 1, scene.codeAppears - 1 + 2, "maxClip", false),
            (scene.codeAppears - 1 + 2 + ClipTestScene.frame, scene.codeLastSeen + 1, "postRoll", true),
        ]
        var paths: [String] = []
        for (clip, want) in zip(announced, wanted) {
            let path = try #require(clip["path"] as? String)
            paths.append(path)
            #expect(URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL.path == clips.standardizedFileURL.path)
            #expect(URL(fileURLWithPath: path).lastPathComponent.hasPrefix("door-") && path.hasSuffix("-clip.avi"))
            #expect(clip["triggers"] as? [String] == ["code"] && clip["faceIDs"] as? [Int] == [], "\(clip)")
            #expect(clip["ended"] as? String == want.ended && clip["continues"] as? Bool == want.continues, "\(clip)")
            let start = try #require(clip["start"] as? Double), end = try #require(clip["end"] as? Double)
            #expect(abs(start - want.start) <= ClipTestScene.frame + 1e-6, "start \(start), wanted \(want.start)")
            #expect(abs(end - want.end) <= ClipTestScene.frame + 1e-6, "end \(end), wanted \(want.end)")
            // The file, read back: its first and last frames were taken then, every one of them once.
            let frames = try ClipTestScene.frames(of: URL(fileURLWithPath: path))
            #expect(frames.count == clip["frames"] as? Int)
            let times = try frames.map(ClipTestScene.markerTime)
            #expect(abs((times.first ?? -1) - want.start) <= ClipTestScene.frame + 1e-6, "first frame at \(times.first ?? -1)")
            #expect(abs((times.last ?? -1) - want.end) <= ClipTestScene.frame + 1e-6, "last frame at \(times.last ?? -1)")
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 }, "frames in order, none twice: \(times)")
            // A frame from the middle of the code's visit shows the code.
            let during = try #require(zip(frames, times).first { abs($0.1 - 2.7) < 1e-6 || (want.continues && abs($0.1 - 3.3) < 1e-6) })
            #expect(try ClipTestScene.codes(in: during.0) == [scene.payload])
        }
        #expect(Set(paths).count == 2, "two files, none replaced: \(paths)")
    }

    /// `triggers: [motion]`: clips run from `preRoll` before a motion started to `postRoll`
    /// after the last frame that moved (the `motion` events' own times), and hold those frames.
    @Test func motionClipsRunFromPreRollBeforeItStartedToPostRollAfterTheLastFrameThatMoved() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scene = ClipTestScene()  // the code (a large still square) appears at 2.0 s and goes at 3.5 s
        let video = dir.appendingPathComponent("yard.avi")
        try scene.writeVideo(to: video)
        let clips = dir.appendingPathComponent("clips")
        // minArea 0.01: the small marker moving along the top is not motion, the code coming and going is.
        let config = try ServeConfig.parse("""
            mqtt: {broker: mqtt://127.0.0.1}
            cameras:
              - name: yard
                input: \(video.path)
                codes: [qr]
                motion: {minArea: 0.01}
                clips: {dir: \(clips.path), preRoll: 0.5, postRoll: 0.5, triggers: [motion]}
            """)
        let link = RecordingLink()
        let daemon = ServeDaemon(config: config, configPath: nil, link: link)
        daemon.start()
        defer { daemon.shutdown() }
        let topics = CameraTopics(prefix: "cvcam", camera: "yard")
        // The file plays once; the camera goes offline after its clips are written and announced.
        #expect(link.published.wait(180) { p in
            p.on(topics.availability).map(\.text).contains("online") && p.on(topics.availability).last?.text == "offline"
        })
        let events = link.published.on(topics.events).compactMap(\.json)
        let motion = events.filter { $0["type"] as? String == "motion" }
        let starts = motion.filter { $0["event"] as? String == "start" }.compactMap { $0["time"] as? Double }
        let ends = motion.filter { $0["event"] as? String == "end" }.compactMap { $0["time"] as? Double }
        let announced = events.filter { $0["type"] as? String == "clip" }
        let firstStart = try #require(starts.first, "\(motion)"), lastEnd = try #require(ends.last, "\(motion)")
        #expect(abs(firstStart - scene.codeAppears) <= 1e-6, "motion starts with the code: \(motion)")
        #expect(!announced.isEmpty && announced.allSatisfy { $0["triggers"] as? [String] == ["motion"] }, "\(announced)")
        let first = try #require(announced.first), last = try #require(announced.last)
        #expect(abs((first["start"] as? Double ?? -1) - (firstStart - 0.5)) <= ClipTestScene.frame + 1e-6, "\(first) \(motion)")
        #expect(abs((last["end"] as? Double ?? -1) - (lastEnd + 0.5)) <= ClipTestScene.frame + 1e-6, "\(last) \(motion)")
        // Every frame that moved is in a clip, and every clip's file holds the frames it names.
        var covered: [Double] = []
        for clip in announced {
            let frames = try ClipTestScene.frames(of: URL(fileURLWithPath: try #require(clip["path"] as? String)))
            let times = try frames.map(ClipTestScene.markerTime)
            #expect(abs((times.first ?? -1) - (clip["start"] as? Double ?? -2)) <= 1e-6, "\(clip) \(times)")
            #expect(abs((times.last ?? -1) - (clip["end"] as? Double ?? -2)) <= 1e-6, "\(clip) \(times)")
            covered += times
        }
        for time in starts + ends {
            #expect(covered.contains { abs($0 - time) < 1e-6 }, "the frame at \(time) s is in no clip: \(covered)")
        }
    }

    /// The serve reference's clips example is a configuration the daemon takes, meaning what it says.
    @Test func theReferencesClipsExampleParses() throws {
        let doc = try String(contentsOf: CLI.packageRoot.appendingPathComponent("Docs/serve.md"), encoding: .utf8)
        let section = try #require(doc.range(of: "**Event clips.**"))
        let fence = try #require(doc.range(of: "```yaml\n", range: section.upperBound..<doc.endIndex))
        let close = try #require(doc.range(of: "```", range: fence.upperBound..<doc.endIndex))
        let config = try ServeConfig.parse("mqtt: {broker: mqtt://127.0.0.1}\n" + doc[fence.upperBound..<close.lowerBound])
        let clips = config.cameras.map { $0.clips.map { [$0.faces, $0.codes, $0.motion] } }
        #expect(clips == [[true, true, false], [false, false, true]])
        #expect(config.cameras[0].clips?.options.preRoll == 3 && config.cameras[1].clips?.options.clipMaxSize == "1280x720")
    }

    /// `triggers: [motion]` on a network MJPEG camera (a bar always moving): clips start and are
    /// cut at `maxClip`, announced on the broker, and hold the camera's JPEGs as they came.
    @Test func aNetworkMJPEGCamerasClipHoldsItsOwnJPEGsByteForByte() throws {
        guard let broker = try MosquittoTestBroker.start() else { return }
        guard let (camera, served) = try NetworkStreamTestServer.startMJPEGKeepingItsFrames(["--fps", "10"]) else { return }
        defer { camera.stop() }
        #expect(served.count == 64)
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clips = dir.appendingPathComponent("clips")
        let config = dir.appendingPathComponent("serve.yaml")
        try (ServeProcess.mqttSection(broker, dir: dir) + """

            cameras:
              - name: net
                input: \(camera.url())
                codes: [qr]
                clips: {dir: \(clips.path), preRoll: 0.5, postRoll: 0.5, maxClip: 1, triggers: [motion]}

            """).write(to: config, atomically: true, encoding: .utf8)
        let subscriber = try broker.subscriber(["cvcam/net/events"])
        defer { subscriber.stop() }
        let daemon = try ServeProcess(config: config.path)
        func clipEvents(_ lines: [String]) -> [[String: Any]] {
            lines.compactMap { line -> [String: Any]? in
                guard let space = line.firstIndex(of: " ") else { return nil }
                let json = (try? JSONSerialization.jsonObject(with: Data(line[line.index(after: space)...].utf8))) as? [String: Any]
                return json?["type"] as? String == "clip" ? json : nil
            }
        }
        #expect(subscriber.wait(timeout: 120) { !clipEvents($0).isEmpty }, "\(daemon.stderr)")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(30) == 0, "\(daemon.stderr)")
        let clip = try #require(clipEvents(subscriber.lines).first)
        #expect(clip["triggers"] as? [String] == ["motion"] && clip["ended"] as? String == "maxClip", "\(clip)")
        let path = try #require(clip["path"] as? String)
        #expect(URL(fileURLWithPath: path).lastPathComponent.hasPrefix("net-") && path.hasSuffix("-clip.avi"))
        let frames = try ClipTestScene.frames(of: URL(fileURLWithPath: path))
        #expect(frames.count == clip["frames"] as? Int && frames.count >= 5, "\(clip)")
        #expect(frames.allSatisfy { served.contains([UInt8]($0)) }, "every frame is one of the camera's own JPEGs, not re-encoded")
        #expect(Set(frames).count >= 5, "the camera's frames, not one repeated")
    }
}
