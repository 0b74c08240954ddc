import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// Wall-clock time in cvcam's output: every JSON line's `wallTime` (RFC 3339, milliseconds,
/// the local offset), the run ID in the start line and the summary, text times (media time for
/// files, local wall time for cameras), and `snap --wait-for-face` storing the boxes of the
/// frame it photographed.
@Suite struct WallTimeCLITests {
    static let face = CLI.fixture("images/astronaut.png")
    /// A face moving right at 200 px/s: boxes from another frame than the photo's would miss it.
    static let movingFace = "synthetic:size=640x480,fps=10,frames=40,image=\(face),speed=200,background=gray"

    func objects(_ result: CLI.Result) throws -> [[String: Any]] {
        try result.lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
    }

    func date(_ text: String?) throws -> Date {
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try #require(text.flatMap(parser.date(from:)), "not RFC 3339: \(text ?? "nil")")
    }

    func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-wall-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func everyLineHasAWallTimeInTheLocalZoneAndTheRunHasAnID() throws {
        // A POSIX TZ (no tz database needed): 5 h 30 min east of UTC.
        let before = Date()
        let result = try CLI.run(["faces", "--json", "--input", Self.movingFace], environment: ["TZ": "XST-5:30"])
        let after = Date()
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try objects(result)
        #expect(lines.count > 3)
        for line in lines {
            let text = try #require(line["wallTime"] as? String, "\(line)")
            #expect(text.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}/) != nil && text.hasSuffix("+05:30"), "\(text)")
            let when = try date(text)
            // Media time (a synthetic scene): stamped as processed, inside the run.
            #expect(when >= before.addingTimeInterval(-0.001) && when <= after, "\(text)")
        }
        let start = try #require(lines.first)
        #expect(start["type"] as? String == "start")
        #expect(start["clock"] as? String == "media")
        let run = try #require(start["run"] as? String)
        #expect(run.wholeMatch(of: /[0-9a-f]{8}/) != nil, "\(run)")
        #expect(lines.last?["type"] as? String == "summary" && lines.last?["run"] as? String == run)
        // Another run, another ID.
        let again = try objects(try CLI.run(["faces", "--json", "--input", "synthetic:size=64x48,fps=10,frames=1"]))
        #expect(again.first?["run"] as? String != run)
    }

    @Test func textModeSaysWhichClockTimesAreOnAndPrintsMediaTimeForAFile() throws {
        let result = try CLI.run(["scan", "--input", "synthetic:size=320x240,fps=10,frames=10,qr=HELLO"])
        #expect(result.status == 0, "\(result.stderr)")
        let start = try #require(result.stderr.split(separator: "\n").first.map(String.init))
        #expect(start.wholeMatch(of: /cvcam: run [0-9a-f]{8}: synthetic "Synthetic camera 320x240" at 320x240; times are positions in the input \(media time\)/) != nil, "\(start)")
        let events = result.lines.filter { $0.contains("QR") }
        #expect(events.first?.hasPrefix("00:00:00.000  appear QR  HELLO") == true, "\(events)")
        // The code stays until the input ends, where it leaves (as last seen, at 0.9 s).
        #expect(events.last?.hasPrefix("00:00:00.900  leave  QR  HELLO") == true, "\(events)")
        // -q: no start line.
        let quiet = try CLI.run(["scan", "-q", "--input", "synthetic:size=320x240,fps=10,frames=2,qr=HELLO"])
        #expect(!quiet.stderr.contains("cvcam: run"), "\(quiet.stderr)")
    }

    @Test func snapWaitingForAMovingFaceStoresTheBoxesOfThePhotographedFrame() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let detector = try FaceDetector(configuration: .standard)
        var times: [Double] = []
        for name in ["a.jpg", "b.jpg"] {
            let out = dir.appendingPathComponent(name)
            let result = try CLI.run(["snap", "-o", out.path, "--wait-for-face", "--input", Self.movingFace, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let snapshot = try #require(try objects(result).first { $0["type"] as? String == "snapshot" })
            times.append(try #require(snapshot["time"] as? Double))
            // The stored boxes against the faces found again in the stored photo.
            let record = try SnapWatchRecordTests().userComment(out)
            let stored = try #require(record["faces"] as? [[String: Any]])
            #expect(!stored.isEmpty)
            #expect(abs((record["time"] as? Double ?? -1) - times.last!) < 1e-3, "\(record)")
            let found = try detector.detect(in: try ImageFolderSource.decode(out.path))
            for face in stored {
                let box = try #require(face["box"] as? [String: Double])
                let rect = CGRect(x: box["x"]!, y: box["y"]!, width: box["w"]!, height: box["h"]!)
                let best = found.map { Self.iou($0.bounds, rect) }.max() ?? 0
                #expect(best > 0.7, "stored \(rect) vs found \(found.map(\.bounds)) in \(name)")
            }
        }
        // The same file gives the same photo.
        #expect(times.count == 2 && times[0] == times[1], "\(times)")
    }

    @Test func watchNamesSnapshotsByInputAndWallTime() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try CLI.run(["watch", "--dir", dir.path, "--json", "--input", Self.movingFace])
        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!names.isEmpty)
        #expect(names.allSatisfy { $0.wholeMatch(of: /synthetic-camera-640x480-\d{8}-\d{6}\.\d{3}-face\d+(-\d+)?\.jpg/) != nil }, "\(names)")
    }

    /// `snap` on the emulated camera (preloaded into the child only): a camera's times are its
    /// frames' CLOCK_MONOTONIC timestamps mapped to the wall clock, in JSON and in text.
    @Test func aCamerasEventsCarryTheWallTimeOfTheirFrames() throws {
        let emulator = CLI.emulatorLibrary
        try #require(FileManager.default.fileExists(atPath: emulator.path), "the package builds \(emulator.path)")
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let environment = [
            "LD_PRELOAD": emulator.path, "V4L2_EMULATOR_IMAGES": CLI.fixture("images"),
            "V4L2_EMULATOR_CONTROL": dir.appendingPathComponent("control").path,
            "CVCAM_V4L2_DEVICES": "/dev/video-emulated0:/dev/video-emulated1",
        ]
        let before = Date()
        let result = try CLI.run(
            ["snap", "-o", dir.appendingPathComponent("door.jpg").path, "--device", "/dev/video-emulated0", "--size", "640x480",
             "--count", "2", "--interval", "0.5", "--json"], environment: environment)
        let after = Date()
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try objects(result)
        #expect(lines.first?["clock"] as? String == "camera")
        let snapshots = lines.filter { $0["type"] as? String == "snapshot" }
        #expect(snapshots.count == 2)
        let walls = try snapshots.map { try date($0["wallTime"] as? String) }
        let times = snapshots.compactMap { $0["time"] as? Double }
        #expect(walls.allSatisfy { $0 > before && $0 < after }, "\(walls) not in \(before)…\(after)")
        // Mapped once: wall times are as far apart as the frames' own timestamps.
        if walls.count == 2, times.count == 2 {
            #expect(abs(walls[1].timeIntervalSince(walls[0]) - (times[1] - times[0])) < 0.002)
        }
        let text = try CLI.run(
            ["snap", "-o", dir.appendingPathComponent("text.jpg").path, "--device", "/dev/video-emulated0", "--size", "640x480"],
            environment: environment)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stderr.contains("times are local wall-clock time"), "\(text.stderr)")
        let line = try #require(text.lines.first { $0.contains("snapshot") })
        let shown = try #require(line.prefixMatch(of: /(\d{2}):(\d{2}):(\d{2})\.\d{3}  snapshot/), "\(line)")
        let now = LocalTimestamp(Date())
        let secondsOfDay = { (h: Int, m: Int, s: Int) in h * 3600 + m * 60 + s }
        let delta = secondsOfDay(now.hour, now.minute, now.second) - secondsOfDay(Int(shown.1)!, Int(shown.2)!, Int(shown.3)!)
        #expect((0...30).contains((delta + 86_400) % 86_400), "\(line) at \(now.timeOfDay)")
    }

    static func iou(_ a: CGRect, _ b: CGRect) -> Double {
        let i = a.intersection(b)
        guard !i.isNull else { return 0 }
        let inter = Double(i.width * i.height)
        return inter / (Double(a.width * a.height) + Double(b.width * b.height) - inter)
    }
}

/// `record --dir`: the movie named by input and start time, never over an existing file.
@Suite struct RecordNamingTests {
    @Test func recordIntoAFolderNamesTheMovieByInputAndWallTime() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-recdir-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try CLI.run(["record", "--dir", dir.path, "--json", "--input", "synthetic:size=160x120,fps=10,frames=5"])
        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { !$0.hasPrefix(".") }
        #expect(names.count == 1 && names[0].wholeMatch(of: /synthetic-camera-160x120-\d{8}-\d{6}\.\d{3}\.avi/) != nil, "\(names)")
        let recording = result.lines.first { $0.contains(#""type":"recording""#) }
        #expect(recording?.contains(names.first ?? "?") == true, "\(result.stdout)")

        // Both or neither of -o and --dir: a usage error.
        #expect(try CLI.run(["record", "--input", "synthetic:size=160x120,fps=10,frames=5"]).status == 64)
        #expect(try CLI.run(["record", "-o", dir.appendingPathComponent("a.avi").path, "--dir", dir.path]).status == 64)
    }

    @Test func aTakenNameGetsTheNextSuffix() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-recdir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let taken = dir.appendingPathComponent("door-20261124-170312.345.avi")
        try Data("someone else's".utf8).write(to: taken)
        let guarded = try RecordingFiles.freshGuard(in: dir, base: "door-20261124-170312.345", input: nil)
        #expect(guarded.target.lastPathComponent == "door-20261124-170312.345-2.avi")
        guarded.discard()
        #expect(try Data(contentsOf: taken) == Data("someone else's".utf8))
    }
}
