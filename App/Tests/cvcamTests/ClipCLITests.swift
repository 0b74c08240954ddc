import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
import AppTestSupport

/// `cvcam watch --clips DIR` (issue #33 item 2): the built binary writes a face's visit as an
/// event clip, announces it, and a SIGKILL mid-clip leaves a file that plays to its last fragment.
@Suite struct ClipCLITests {
    static let face = CLI.fixture("images/astronaut.png")

    func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-clipcli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The frames of a clip: read back by the clip reader, and decoded by OpenCV's FFmpeg reader.
    func frames(_ url: URL) throws -> (read: Int, declared: Int, decoded: Int) {
        let reader = try MJPEGAVIReader(path: url.path)
        var read = 0
        while let jpeg = reader.nextFrame() {
            #expect(jpeg.prefix(2) == Data([0xFF, 0xD8]))
            read += 1
        }
        let device = try CaptureDevice(videoFileAtPath: url.path, pacing: .asFastAsPossible)
        let source = try #require(device.source as? VideoFileSource)
        try source.open(format: device.activeFormat, frameDuration: MediaTime(value: 1, timescale: 10))
        defer { source.close() }
        var decoded = 0
        while try source.nextFrame(isCancelled: { false }) != nil { decoded += 1 }
        return (read, reader.declaredFrameCount, decoded)
    }

    @Test func watchWritesAFacesVisitAsAClipAndAnnouncesIt() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clips = dir.appendingPathComponent("clips")
        // 4 s at 10 fps; the face enters at about 0.8 s and stays to the end.
        let result = try CLI.run([
            "watch", "--dir", dir.appendingPathComponent("snaps").path, "--clips", clips.path, "--pre-roll", "0.5", "--post-roll", "1",
            "--input", "synthetic:size=640x480,fps=10,frames=40,image=\(Self.face)", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let events = result.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        // `watch` prints no face events; `faces` on the same scene (frame times: the same on every run) says when it entered.
        let faces = try CLI.run(["faces", "--input", "synthetic:size=640x480,fps=10,frames=40,image=\(Self.face)", "--json"])
        let enter = try #require(
            faces.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
                .first { $0["type"] as? String == "face" && $0["event"] as? String == "enter" })
        let clip = try #require(events.first { $0["type"] as? String == "clip" }, "\(result.stdout)")
        let path = try #require(clip["path"] as? String)
        #expect(URL(fileURLWithPath: path).lastPathComponent.hasSuffix("-clip.avi"))
        #expect(clip["faceIDs"] as? [Int] == [enter["faceID"] as? Int ?? -1])
        // From the pre-roll before the face entered (within a frame) to the last frame (the scene ended).
        let entered = try #require(enter["time"] as? Double), start = try #require(clip["start"] as? Double)
        #expect(abs(start - (entered - 0.5)) <= 0.1 + 1e-6, "start \(start) entered \(entered)")
        #expect(abs((clip["end"] as? Double ?? 0) - 3.9) <= 1e-6 && clip["ended"] as? String == "stopped")
        let counted = try frames(URL(fileURLWithPath: path))
        #expect(counted.read == clip["frames"] as? Int && counted.decoded == counted.read && counted.declared == counted.read)
        #expect(events.last?["type"] as? String == "summary" && events.last?["clips"] as? Int == 1)
    }

    @Test func aSIGKILLMidClipLeavesAFileThatPlaysToItsLastFragment() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clips = dir.appendingPathComponent("clips")
        // An endless scene whose face crosses slowly: the clip is still being written when killed.
        let (process, _, _) = CLI.process([
            "watch", "--dir", dir.appendingPathComponent("snaps").path, "--clips", clips.path, "--pre-roll", "0",
            "--input", "synthetic:size=320x240,fps=10,speed=4,image=\(Self.face)", "--json",
        ])
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // Wait (generously) until the clip holds a few fragments: a fragment per second of clip time.
        let deadline = Date().addingTimeInterval(120)
        var clip: URL?
        while Date() < deadline {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: clips.path)) ?? []
            if let name = names.first(where: { $0.hasSuffix("-clip.avi") }) {
                let url = clips.appendingPathComponent(name)
                if let reader = try? MJPEGAVIReader(path: url.path), reader.declaredFrameCount >= 30 {
                    clip = url
                    break
                }
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let url = try #require(clip, "no clip of 30 frames appeared")
        let counted = try frames(url)
        #expect(counted.declared >= 30)
        #expect(counted.read >= counted.declared)
        #expect(counted.decoded >= counted.declared)
    }
}
