import CaptureKit
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// Several inputs in one run (arguments, repeated --input, `-`), each event naming its source,
/// and the exit status over all of them.
@Suite struct SeveralInputsTests {
    static func code(_ name: String) -> String { CLI.packageRoot.appendingPathComponent("Tests/Fixtures/codes/\(name)").path }
    static let negatives = CLI.fixture("negatives")

    func objects(_ r: CLI.Result) -> [[String: Any]] {
        r.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func argumentsAndRepeatedInputAreReadInTurnAndNamed() throws {
        let r = try CLI.run(["scan", "--json", "--types", "all", Self.code("aztec.png"), "--input", Self.code("pdf417.png"), "--input", Self.negatives])
        #expect(r.status == 0, "\(r.stderr)")
        let events = objects(r)
        let codes = events.filter { $0["type"] as? String == "code" && $0["event"] as? String == "appear" }
        #expect(codes.map { $0["source"] as? String } == [Self.code("aztec.png"), Self.code("pdf417.png")])
        let summary = try #require(events.last)
        #expect(summary["type"] as? String == "summary")
        #expect(summary["inputs"] as? Int == 3 && summary["failedInputs"] as? Int == 0 && summary["codes"] as? Int == 2)
        #expect(summary["frames"] as? Int == 6)  // two images, and four in the folder
    }

    @Test func faceIDsNameOneFaceInTheWholeRun() throws {
        // Each input has its own tracker numbering from 1; the run's IDs must still not repeat.
        let photos = ["grace_hopper.jpg", "astronaut.png"].map { CLI.fixture("images/\($0)") }
        let r = try CLI.run(["faces", "--json"] + photos)
        #expect(r.status == 0, "\(r.stderr)")
        let entered = objects(r).filter { $0["type"] as? String == "face" && $0["event"] as? String == "enter" }
        let ids = entered.compactMap { $0["faceID"] as? Int }
        #expect(Set(entered.compactMap { $0["source"] as? String }) == Set(photos))
        #expect(ids.count >= 2 && Set(ids).count == ids.count, "\(ids)")
    }

    @Test func textLinesStartWithTheSourceWhenItVaries() throws {
        let r = try CLI.run(["scan", "--types", "all", Self.code("aztec.png"), Self.code("microqr.png")])
        #expect(r.lines == [
            "\(Self.code("aztec.png")): 00:00:00.000  appear AZTEC  cvcam Aztec 1",
            "\(Self.code("aztec.png")): 00:00:00.000  leave  AZTEC  cvcam Aztec 1",
            "\(Self.code("microqr.png")): 00:00:00.000  appear MICROQR  cvcam-mqr-1",
            "\(Self.code("microqr.png")): 00:00:00.000  leave  MICROQR  cvcam-mqr-1",
        ])
        #expect(r.stderr.contains("summary: 2 inputs, 2 frames, 2 analysed at "), "\(r.stderr)")
        // One input, one file: no prefix (nothing to tell apart).
        let one = try CLI.run(["scan", "--types", "all", Self.code("aztec.png")])
        #expect(one.lines == ["00:00:00.000  appear AZTEC  cvcam Aztec 1", "00:00:00.000  leave  AZTEC  cvcam Aztec 1"])
    }

    /// The image within a folder is each face's source, in text and JSON.
    @Test func facesInAFolderNameTheirImage() throws {
        let folder = CLI.fixture("images")
        let json = try CLI.run(["faces", "--json", "--input", folder])
        let faces = objects(json).filter { $0["type"] as? String == "face" }
        #expect(!faces.isEmpty)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).map { folder + "/" + $0 }
        for face in faces {
            let source = face["source"] as? String ?? ""
            #expect(files.contains(source), "\(face)")
            // The folder is shown at 10 images a second: the face's time says which image it is.
            let index = Int(((face["time"] as? Double ?? -1) * 10).rounded())
            let sorted = files.sorted { $0.localizedStandardCompare($1) == .orderedAscending }
            #expect(sorted.indices.contains(index) && sorted[index] == source, "\(face)")
        }
        let text = try CLI.run(["faces", "--input", folder])
        #expect(text.lines.first?.hasPrefix("\(folder)/astronaut.png: 00:00:00.000  enter  face 1") == true, "\(text.lines)")
    }

    /// A folder holding one image still names the image, not the folder.
    @Test func aFolderOfOneImageNamesTheImage() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-one-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(atPath: Self.code("aztec.png"), toPath: dir.appendingPathComponent("only.png").path)
        let r = try CLI.run(["scan", "--json", "--types", "all", dir.path])
        let code = objects(r).first { $0["type"] as? String == "code" }
        #expect(code?["source"] as? String == dir.appendingPathComponent("only.png").path, "\(r.stdout)")
    }

    /// Exit status over several inputs: 0 when any held a code, 4 when none did, 1 when any
    /// failed (after the others were read).
    @Test func exitStatusOverSeveralInputs() throws {
        let anyFound = try CLI.run(["scan", "--types", "all", Self.negatives, Self.code("aztec.png")])
        #expect(anyFound.status == 0, "\(anyFound.stderr)")
        let noneFound = try CLI.run(["scan", "--types", "qr", Self.negatives, Self.code("aztec.png")])  // QR only: the Aztec code is not read
        #expect(noneFound.status == 4, "\(noneFound.stderr)")
        let oneFailed = try CLI.run(["scan", "--types", "all", "/nonexistent/a.png", Self.code("aztec.png")])
        #expect(oneFailed.status == 1)
        #expect(oneFailed.lines == [
            "\(Self.code("aztec.png")): 00:00:00.000  appear AZTEC  cvcam Aztec 1",
            "\(Self.code("aztec.png")): 00:00:00.000  leave  AZTEC  cvcam Aztec 1",
        ])
        #expect(oneFailed.stderr.contains("error: no file at /nonexistent/a.png"), "\(oneFailed.stderr)")
        #expect(oneFailed.stderr.contains("summary: 2 inputs (1 failed), "), "\(oneFailed.stderr)")
    }

    @Test func onceEndsTheWholeRun() throws {
        let r = try CLI.run(["scan", "--once", "--types", "all", Self.code("aztec.png"), Self.code("pdf417.png")])
        #expect(r.status == 0)
        #expect(r.lines.count == 1, "\(r.lines)")
    }

    @Test func standardInputCarriesAnImage() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.code("datamatrix.png")))
        let r = try CLI.run(["scan", "--json", "--types", "all", "--input", "-"], stdin: bytes)
        #expect(r.status == 0, "\(r.stderr)")
        let code = try #require(objects(r).first { $0["type"] as? String == "code" })
        #expect(code["text"] as? String == "cvcam Data Matrix 1")
        #expect(code["source"] as? String == "-")
    }

    @Test func standardInputCarriesAListOfPaths() throws {
        let list = "\(Self.code("aztec.png"))\n\n\(Self.code("microqr.png"))\r\n"
        let r = try CLI.run(["scan", "--raw", "--types", "all", "-"], stdin: Data(list.utf8))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.lines == ["cvcam Aztec 1", "cvcam-mqr-1"])
        let empty = try CLI.run(["scan", "-"], stdin: Data())
        #expect(empty.status == 1 && empty.stderr.contains("Standard input (-) was empty"), "\(empty.stderr)")
    }

    @Test func imagesAreToldFromPathListsByTheirFirstBytes() throws {
        let png = try Data(contentsOf: URL(fileURLWithPath: Self.code("aztec.png")))
        #expect(InputList.imageExtension(of: png) == "png")
        #expect(InputList.imageExtension(of: Data([0xFF, 0xD8, 0xFF, 0xE0])) == "jpg")
        #expect(InputList.imageExtension(of: Data("P6\n640 480\n255\n".utf8)) == "ppm")
        #expect(InputList.imageExtension(of: Data("BMW/door.jpg\nBMW/gate.jpg\n".utf8)) == nil)
        #expect(InputList.imageExtension(of: Data("photos/a.png\n".utf8)) == nil)
    }

    /// snap, watch and record read one input: several, or standard input, are usage errors.
    @Test func commandsOfOneInputRefuseSeveral() throws {
        let a = Self.code("aztec.png")
        let snap = try CLI.run(["snap", "-o", "/tmp/x.jpg", "--input", a, "--input", a])
        #expect(snap.status == 64)
        #expect(snap.stderr.contains("snap reads one input (got 2 --input options)"), "\(snap.stderr)")
        let record = try CLI.run(["record", "-o", "/tmp/x.avi", "--input", "-"])
        #expect(record.status == 64 && record.stderr.contains("record cannot read standard input"), "\(record.stderr)")
        let watch = try CLI.run(["watch", "--dir", "/tmp/x", "--input", a, "--input", a])
        #expect(watch.status == 64)
        let device = try CLI.run(["scan", "--device", "0", a])
        #expect(device.status == 64 && device.stderr.contains("Use either --device or input files"), "\(device.stderr)")
    }
}

/// `--stats-interval`: `stats` events and lines, by count and format (not timing).
@Suite struct StatsTests {
    /// Two seconds of a synthetic scene in real time, reported every half second.
    static let input = "synthetic:size=320x240,fps=10,frames=20,qr=HELLO"

    @Test func statsEventsCarryEveryField() throws {
        let r = try CLI.run(["scan", "--json", "--realtime", "--stats-interval", "0.5", "--input", Self.input])
        #expect(r.status == 0, "\(r.stderr)")
        let stats = r.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["type"] as? String == "stats" }
        #expect(stats.count >= 2, "\(r.stdout)")
        for event in stats {
            for key in ["frames", "analysed", "skipped", "rssBytes"] { #expect(event[key] is Int, "\(key) in \(event)") }
            for key in ["fps", "cpu", "seconds"] { #expect(event[key] is Double || event[key] is Int, "\(key) in \(event)") }
            #expect((event["rssBytes"] as? Int ?? 0) > 1_000_000)
        }
        let detection = stats.compactMap { $0["detectionMs"] as? [String: Double] }
        #expect(!detection.isEmpty, "no detection times in \(stats)")
        for d in detection { #expect((d["p50"] ?? -1) >= 0 && (d["p50"] ?? 0) <= (d["p99"] ?? -1), "\(d)") }
        let frames = stats.compactMap { $0["frames"] as? Int }
        #expect(frames == frames.sorted(), "frames should not go back: \(frames)")
    }

    @Test func statsLinesGoToStderrInTextMode() throws {
        let r = try CLI.run(["faces", "--realtime", "--stats-interval", "0.5", "--input", "synthetic:size=160x120,fps=10,frames=20"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("stats:"))
        let lines = r.stderr.split(separator: "\n").filter { $0.hasPrefix("stats: ") }
        #expect(lines.count >= 2, "\(r.stderr)")
        let pattern = try NSRegularExpression(
            pattern: #"^stats: \d+ frames, \d+ analysed, \d+\.\d fps, \d+ skipped(, detection p50 \d+\.\d ms p99 \d+\.\d ms)?, CPU \d+\.\d%, RSS \d+\.\d MB$"#)
        for line in lines.map(String.init) {
            #expect(pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil, "\(line)")
        }
    }

    /// watch reports what its face detection analysed, with detection times.
    @Test func watchStatsCountAnalysedFrames() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-wstats-\(UUID())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run([
            "watch", "--json", "--realtime", "--stats-interval", "0.5", "--dir", dir.path, "--input",
            "synthetic:size=320x240,fps=10,frames=20,image=\(CLI.fixture("images/astronaut.png"))",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let stats = r.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["type"] as? String == "stats" }
        #expect(!stats.isEmpty, "\(r.stdout)")
        #expect(stats.contains { $0["detectionMs"] != nil }, "\(stats)")
        for event in stats { #expect((event["analysed"] as? Int ?? -1) <= (event["frames"] as? Int ?? 0), "\(event)") }
    }

    @Test func theIntervalIsChecked() throws {
        let r = try CLI.run(["faces", "--stats-interval", "0", "--input", Self.input])
        #expect(r.status == 64)
        #expect(r.stderr.contains("--stats-interval must be 0.1 to 86400 seconds (got 0)"), "\(r.stderr)")
    }

    @Test func percentilesAreNearestRank() {
        let recorder = LatencyRecorder()
        #expect(recorder.drain() == nil)
        for ms in 1...100 { recorder.record(milliseconds: Double(ms)) }
        #expect(recorder.drain() == .init(p50: 50, p99: 99))
        recorder.record(milliseconds: 7)
        #expect(recorder.drain() == .init(p50: 7, p99: 7))
    }
}
