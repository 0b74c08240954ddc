import CaptureKit
import Foundation
import Testing

@testable import CaptureServe
import AppTestSupport

/// The daemon's event clips started by codes and by motion, end to end (issue #33 item 2): a
/// code's visit and a motion in a video whose timeline is known become clips (cut at `maxClip`)
/// whose files hold exactly the frames asked for, and a network MJPEG camera's clips hold its
/// own JPEGs, byte for byte, announced on a real broker.
@Suite(.serialized) struct ClipTriggerTests {
    @Test func aCodesVisitBecomesClipsCutAtMaxClipWhoseFramesAreTheOnesAskedFor() throws {
        let dir = try ServeProcess.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scene = ClipTestScene()  // the code is in view from 2.0 s to 3.4 s of 6 s
        let video = dir.appendingPathComponent("door.avi")
        try scene.writeVideo(to: video)
        let clips = dir.appendingPathComponent("clips")
        // Faces and codes both start clips; the scene has no face. `motion: false`: no gating.
        let config = try ServeConfig.parse("""
            mqtt: {broker: mqtt://127.0.0.1}
            cameras:
              - name: door
                input: \(video.path)
                faces: {}
                codes: [qr]
                motion: false
                clips: {dir: \(clips.path), preRoll: 1, postRoll: 1, maxClip: 1, triggers: [faces, codes]}
            """)
        let events = Self.eventsOfAPlayThrough(config, camera: "door")
        // When the code was seen first and last: on a busy machine a frame or two may go
        // unanalysed (the daemon skips late frames), so the clips are checked against these.
        let codes = events.filter { $0["type"] as? String == "code" }
        let appeared = try #require(codes.first { $0["event"] as? String == "appear" }?["time"] as? Double, "\(codes)")
        let left = try #require(codes.first { $0["event"] as? String == "leave" }?["time"] as? Double, "\(codes)")
        #expect(appeared >= scene.codeAppears - 1e-6 && appeared <= left && left <= scene.codeLastSeen + 1e-6, "\(codes)")
        // The visit, 1 s before the code was first seen to 1 s after it was last seen, in clips of
        // at most 1 s that follow on frame by frame.
        let announced = events.filter { $0["type"] as? String == "clip" }
        #expect(announced.count >= 3, "\(announced)")
        let first = try #require(announced.first), last = try #require(announced.last)
        #expect(abs((first["start"] as? Double ?? -9) - (appeared - 1)) <= ClipTestScene.frame + 1e-6, "\(first), appeared \(appeared)")
        #expect(abs((last["end"] as? Double ?? -9) - (left + 1)) <= ClipTestScene.frame + 1e-6, "\(last), left \(left)")
        #expect(announced.dropLast().allSatisfy { $0["ended"] as? String == "maxClip" } && last["ended"] as? String == "postRoll")
        #expect(first["continues"] as? Bool == false && announced.dropFirst().allSatisfy { $0["continues"] as? Bool == true })
        var previousEnd: Double?
        var seen: [(time: Double, jpeg: Data)] = []
        for clip in announced {
            let path = try #require(clip["path"] as? String)
            #expect(URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL.path == clips.standardizedFileURL.path)
            #expect(URL(fileURLWithPath: path).lastPathComponent.hasPrefix("door-") && path.hasSuffix("-clip.avi"))
            #expect(clip["triggers"] as? [String] == ["code"] && clip["faceIDs"] as? [Int] == [], "\(clip)")
            let start = try #require(clip["start"] as? Double), end = try #require(clip["end"] as? Double)
            #expect(end - start <= 1 + 1e-6, "longer than maxClip: \(clip)")
            if let previousEnd { #expect(abs(start - previousEnd - ClipTestScene.frame) <= 1e-6, "a gap or a repeat: \(previousEnd) → \(start)") }
            previousEnd = end
            // The file, read back: its first and last frames were taken then, in order, once each.
            let frames = try ClipTestScene.frames(of: URL(fileURLWithPath: path))
            #expect(frames.count == clip["frames"] as? Int)
            let times = try frames.map(ClipTestScene.markerTime)
            #expect(abs((times.first ?? -9) - start) <= 1e-6 && abs((times.last ?? -9) - end) <= 1e-6, "\(clip) \(times)")
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 }, "frames out of order or twice: \(times)")
            seen += zip(times, frames).map { (time: $0.0, jpeg: $0.1) }
        }
        #expect(Set(announced.compactMap { $0["path"] as? String }).count == announced.count, "a file replaced")
        // The clips show the code while it was there, and not in the pre-roll before it came.
        let during = try #require(seen.first { abs($0.time - (appeared + left) / 2) <= ClipTestScene.frame / 2 + 1e-6 })
        #expect(try ClipTestScene.codes(in: during.jpeg) == [scene.payload])
        let before = try #require(seen.first)
        if before.time < scene.codeAppears - 1e-6 { #expect(try ClipTestScene.codes(in: before.jpeg).isEmpty) }
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
        let events = Self.eventsOfAPlayThrough(config, camera: "yard")
        let motion = events.filter { $0["type"] as? String == "motion" }
        let starts = motion.filter { $0["event"] as? String == "start" }.compactMap { $0["time"] as? Double }
        let ends = motion.filter { $0["event"] as? String == "end" }.compactMap { $0["time"] as? Double }
        let announced = events.filter { $0["type"] as? String == "clip" }
        let firstStart = try #require(starts.first, "\(motion)"), lastEnd = try #require(ends.last, "\(motion)")
        // Motion starts with the code (later only by frames a busy machine left unanalysed).
        #expect(firstStart >= scene.codeAppears - 1e-6 && firstStart <= scene.codeLastSeen + 1e-6, "motion starts with the code: \(motion)")
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

    /// Runs the daemon on `config` until `camera` has played its file through and returns what it
    /// published on its events topic. The daemon plays a file at its own rate, as a camera: it
    /// goes offline once the file ended and its clips are written and announced.
    static func eventsOfAPlayThrough(_ config: ServeConfig, camera: String) -> [[String: Any]] {
        let link = RecordingLink()
        let daemon = ServeDaemon(config: config, configPath: nil, link: link)
        daemon.start()
        defer { daemon.shutdown() }
        let topics = CameraTopics(prefix: "cvcam", camera: camera)
        #expect(link.published.wait(180) { p in
            p.on(topics.availability).map(\.text).contains("online") && p.on(topics.availability).last?.text == "offline"
        })
        return link.published.on(topics.events).compactMap(\.json)
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
