import Foundation
import Testing
import AppTestSupport

/// The built binary end to end on fixture photos and synthetic inputs, compared as readable
/// NDJSON with golden files in Tests/cvcamTests/Golden. Times come from the synthetic clock or
/// the image index, so they are deterministic; the wall-clock fields (`wallTime`, the summary's
/// `seconds` and `fps`) and the run ID are masked, and the checkout's path is written `<root>`. Set CVCAM_UPDATE_GOLDEN=1 to rewrite the files after a deliberate change.
@Suite struct GoldenTests {
    static let golden = CLI.appRoot.appendingPathComponent("Tests/cvcamTests/Golden")

    /// Output lines with wall-clock fields replaced, after checking every line is schema-1 JSON.
    func normalised(_ stdout: String) throws -> String {
        var lines: [String] = []
        // Paths into the checkout differ from machine to machine.
        let text = stdout.replacingOccurrences(of: CLI.packageRoot.path, with: "<root>")
        for line in text.split(separator: "\n") {
            guard var object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                Issue.record("not a JSON object: \(line)")
                continue
            }
            #expect(object["schema"] as? Int == 1, "\(line)")
            #expect(["start", "face", "code", "snapshot", "drop", "error", "summary", "stats"].contains(object["type"] as? String ?? ""))
            // Every line has a wall time; its format is checked in WallTimeCLITests.
            #expect(object["wallTime"] is String, "\(line)")
            object["wallTime"] = "<wall>"
            if object["type"] as? String == "start" || object["type"] as? String == "summary" {
                object["run"] = "<run>"
            }
            if object["type"] as? String == "summary" {
                object["seconds"] = "<wall>"
                object["fps"] = "<wall>"
            }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            lines.append(String(decoding: data, as: UTF8.self))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    func check(_ name: String, _ arguments: [String], status: Int32) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == status, "\(name): \(result.stderr)")
        let text = try normalised(result.stdout)
        let file = Self.golden.appendingPathComponent(name + ".ndjson")
        if ProcessInfo.processInfo.environment["CVCAM_UPDATE_GOLDEN"] == "1" {
            try text.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let expected = try String(contentsOf: file, encoding: .utf8)
        #expect(text == expected, "\(name) differs from \(file.path); rerun with CVCAM_UPDATE_GOLDEN=1 if the change is intended")
    }

    /// Both streams of a text-mode run: the checkout's path as `<root>`, the summary's rate as
    /// `<wall>`, the start line's run ID as `<run>`, and libpng's own warnings (printed by libpng, not cvcam) left out.
    func checkText(_ name: String, _ arguments: [String], status: Int32) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == status, "\(name): \(result.stderr)")
        func clean(_ text: String) -> String {
            text.replacingOccurrences(of: CLI.packageRoot.path, with: "<root>")
                .replacingOccurrences(of: #"analysed at [0-9.]+ fps"#, with: "analysed at <wall> fps", options: .regularExpression)
                .replacingOccurrences(of: #"cvcam: run [0-9a-f]{8}:"#, with: "cvcam: run <run>:", options: .regularExpression)
                .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("libpng warning:") }
                .joined(separator: "\n")
        }
        let text = "== stdout\n" + clean(result.stdout) + "== stderr\n" + clean(result.stderr)
        let file = Self.golden.appendingPathComponent(name + ".txt")
        if ProcessInfo.processInfo.environment["CVCAM_UPDATE_GOLDEN"] == "1" {
            try text.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let expected = try String(contentsOf: file, encoding: .utf8)
        #expect(text == expected, "\(name) differs from \(file.path); rerun with CVCAM_UPDATE_GOLDEN=1 if the change is intended")
    }

    static let codes = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/codes").path

    @Test func scanTextSplitsCodesFromDiagnostics() throws {
        try checkText(
            "scan-several", ["scan", "--types", "all", Self.codes + "/aztec.png", "--input", CLI.fixture("negatives"), Self.codes + "/pdf417.png"],
            status: 0)
    }

    @Test func scanRawAndQuiet() throws {
        try checkText("scan-raw", ["scan", "--raw", "--types", "all", Self.codes], status: 0)
        try checkText("scan-quiet-none", ["scan", "-q", CLI.fixture("negatives")], status: 4)
    }

    @Test func scanSeveralInputsAsJSON() throws {
        try check(
            "scan-several", ["scan", "--json", "--types", "all", Self.codes + "/aztec.png", "--input", CLI.fixture("negatives"), Self.codes + "/pdf417.png"],
            status: 0)
    }

    @Test func facesOnASyntheticSceneWithAMovingFace() throws {
        try check(
            "faces-synthetic",
            [
                "faces", "--json", "--input",
                "synthetic:size=640x480,fps=10,frames=40,image=\(CLI.fixture("images/astronaut.png")),speed=200,background=gray",
            ], status: 0)
    }

    @Test func facesOnTheFixturePhotosWithAView() throws {
        try check(
            "faces-photos",
            ["faces", "--json", "--input", CLI.fixture("images"), "--fps", "1", "--view", "1080x1920", "--gravity", "fit"],
            status: 0)
    }

    @Test func scanOnASyntheticSceneWithTwoCodes() throws {
        try check(
            "scan-synthetic",
            ["scan", "--json", "--repeat-interval", "1.5", "--input", "synthetic:size=640x480,fps=10,frames=30,qr=HELLO,qr=WORLD"],
            status: 0)
    }

    @Test func scanOnPhotosWithoutCodesExits4() throws {
        try check("scan-no-codes", ["scan", "--json", "--input", CLI.fixture("negatives")], status: 4)
    }

    @Test func scanOnceExitsAfterTheFirstCode() throws {
        let result = try CLI.run(["scan", "--once", "--input", "synthetic:size=320x240,fps=10,frames=50,qr=ONCE"])
        #expect(result.status == 0)
        #expect(result.lines.first?.hasSuffix("appear QR  ONCE") == true, "\(result.lines)")
        #expect(result.lines.filter { $0.contains("QR") }.count == 1)
    }

    @Test func textModeFaceLog() throws {
        let result = try CLI.run(["faces", "-q", "--input", CLI.fixture("images/grace_hopper.jpg")])
        #expect(result.status == 0)
        #expect(result.lines.count == 2, "\(result.lines)")  // enter and leave, no summary with -q
        #expect(result.lines.first?.hasPrefix("00:00:00.000  enter  face ") == true)
        #expect(result.lines.last?.contains("leave  face ") == true)
    }
}

/// `cvcam scan --types` end to end on the generated 2-D fixtures (Tests/Fixtures/codes).
@Suite struct ScanTypesTests {
    @Test(arguments: [
        ("microqr.png", "microqr", "cvcam-mqr-1"), ("datamatrix.png", "datamatrix", "cvcam Data Matrix 1"),
        ("aztec.png", "aztec", "cvcam Aztec 1"), ("pdf417.png", "pdf417", "cvcam PDF417 1"),
    ])
    func scanReadsEachTypeItIsAsked(_ file: String, _ symbology: String, _ text: String) throws {
        let path = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/codes/\(file)").path
        let result = try CLI.run(["scan", "--json", "--types", "microqr,datamatrix,aztec,pdf417", "--input", path])
        #expect(result.status == 0, "\(result.stderr)")
        let codes = result.lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["type"] as? String == "code" }
        // One image is one view: the code appears, then leaves as the input ends.
        #expect(codes.map { $0["event"] as? String } == ["appear", "leave"], "\(result.stdout)")
        #expect(codes.first?["symbology"] as? String == symbology)
        #expect(codes.first?["text"] as? String == text)
    }

    /// Without `--types`, `scan` reads every 2-D type: a user shows it a code, not its name.
    @Test(arguments: [
        ("microqr.png", "microqr", "cvcam-mqr-1"), ("datamatrix.png", "datamatrix", "cvcam Data Matrix 1"),
        ("aztec.png", "aztec", "cvcam Aztec 1"), ("pdf417.png", "pdf417", "cvcam PDF417 1"),
    ])
    func scanReadsEvery2DTypeByDefault(_ file: String, _ symbology: String, _ text: String) throws {
        let path = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/codes/\(file)").path
        let result = try CLI.run(["scan", "--json", path])
        #expect(result.status == 0, "\(result.stderr)")
        let codes = result.lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["type"] as? String == "code" && $0["event"] as? String == "appear" }
        #expect(codes.map { $0["symbology"] as? String } == [symbology], "\(result.stdout)")
        #expect(codes.first?["text"] as? String == text)
    }

    @Test func scanWithoutTheTypeFindsNothing() throws {
        let path = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/codes/microqr.png").path
        let result = try CLI.run(["scan", "--json", "--types", "qr,datamatrix", "--input", path])
        #expect(result.status == 4, "\(result.stdout)")
    }
}
