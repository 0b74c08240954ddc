import ArgumentParser
import CaptureKit
import CaptureKitTesting
import Foundation
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// Text output a script can use (issue #19 §4): what was found on stdout, diagnostics on
/// stderr, `--raw`, `-q`, errors once, no status line without a terminal.
@Suite struct OutputStreamTests {
    static let codes = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/codes").path

    @Test func textModeKeepsOnlyCodesOnStdout() throws {
        let r = try CLI.run(["scan", "--input", "synthetic:size=320x240,fps=10,frames=20,qr=HELLO"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.lines == ["00:00:00.000  appear QR  HELLO", "00:00:01.900  leave  QR  HELLO"])
        let diagnostics = r.stderr.split(separator: "\n").map(String.init)
        #expect(diagnostics.count == 2, "\(r.stderr)")
        #expect(diagnostics.first?.hasPrefix("cvcam: run ") == true, "\(r.stderr)")
        #expect(diagnostics.last?.hasPrefix("summary: 20 frames, 20 analysed at ") == true, "\(r.stderr)")
        #expect(r.stderr.hasSuffix(" fps, 0 skipped, 1 codes read\n"), "\(r.stderr)")
    }

    @Test func jsonKeepsEveryEventOnStdout() throws {
        let r = try CLI.run(["scan", "--json", "--input", "synthetic:size=320x240,fps=10,frames=20,qr=HELLO"])
        #expect(r.status == 0)
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        // start, appear, leave, summary
        #expect(r.lines.count == 4 && r.lines.first?.contains("\"type\":\"start\"") == true, "\(r.lines)")
        #expect(r.lines.last?.contains("\"type\":\"summary\"") == true, "\(r.lines)")
    }

    @Test func quietLeavesOnlyTheData() throws {
        let scan = try CLI.run(["scan", "-q", "--input", "synthetic:size=320x240,fps=10,frames=20,qr=HELLO"])
        #expect(scan.status == 0)
        #expect(scan.lines == ["00:00:00.000  appear QR  HELLO", "00:00:01.900  leave  QR  HELLO"])
        #expect(scan.stderr.isEmpty, "\(scan.stderr)")
        // The start line of a recording goes too.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-quiet-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let record = try CLI.run(["record", "-q", "-o", dir.appendingPathComponent("a.avi").path, "--input", "synthetic:size=64x48,fps=10,frames=5"])
        #expect(record.status == 0, "\(record.stderr)")
        #expect(record.stdout.isEmpty && record.stderr.isEmpty, "\(record.stdout)\(record.stderr)")
        let loud = try CLI.run(["record", "--overwrite", "-o", dir.appendingPathComponent("a.avi").path, "--input", "synthetic:size=64x48,fps=10,frames=5"])
        #expect(loud.lines.first?.hasPrefix("recording ") == true, "\(loud.stdout)")
        #expect(loud.stderr.hasPrefix("cvcam: run "), "\(loud.stderr)")
        #expect(loud.stderr.split(separator: "\n").last?.hasPrefix("summary: ") == true, "\(loud.stderr)")
    }

    @Test func rawPrintsPayloadsOnly() throws {
        let r = try CLI.run(["scan", "--raw", "--types", "all", Self.codes])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.lines == ["cvcam Aztec 1", "cvcam Data Matrix 1", "cvcam-mqr-1", "cvcam PDF417 1"])
        #expect(ParsingHelp.message(Scan.self, ["--raw", "--json"]) == "Use either --raw or --json, not both.")
    }

    /// Codes that are not text come out as base64: with their bytes; every line matches what
    /// --json says of the same code.
    @Test func rawWritesBinaryPayloadsAsBase64() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-raw-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (i, sample) in try QRTestCorpus.samples(.nonUTF8, count: 6).enumerated() {
            try ImageFile.write(sample.image, to: dir.appendingPathComponent(String(format: "s%02d.png", i)).path)
        }
        let json = try CLI.run(["scan", "--json", dir.path])
        let raw = try CLI.run(["scan", "--raw", dir.path])
        #expect(raw.status == 0, "\(raw.stderr)")
        let codes = json.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["type"] as? String == "code" && $0["event"] as? String != "leave" }
        let expected = codes.map { code -> String in
            if let text = code["text"] as? String, !text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }),
                !text.hasPrefix("base64:")
            {
                return text
            }
            return "base64:" + (code["base64"] as? String ?? "")
        }
        #expect(!codes.isEmpty)
        #expect(raw.lines == expected)
        #expect(raw.lines.contains { $0.hasPrefix("base64:") }, "no binary payload in \(raw.lines)")
    }

    @Test func rawLineRules() {
        func code(_ text: String?, _ bytes: [UInt8]) -> MetadataMachineReadableCodeObject {
            MetadataMachineReadableCodeObject(
                type: .qr, bounds: .zero, stringValue: text, payload: bytes, corners: [], quality: 1, time: .zero,
                inputID: CaptureInput.ID(rawValue: 1))
        }
        #expect(CodeLog.rawLine(code("HELLO", Array("HELLO".utf8))) == "HELLO")
        #expect(CodeLog.rawLine(code(nil, [0xFF, 0x00])) == "base64:/wA=")
        #expect(CodeLog.rawLine(code("two\nlines", Array("two\nlines".utf8))) == "base64:dHdvCmxpbmVz")
        #expect(CodeLog.rawLine(code("base64:x", Array("base64:x".utf8))) == "base64:YmFzZTY0Ong=")
        #expect(CodeLog.rawLine(code("a\u{202E}b", Array("a\u{202E}b".utf8))).hasPrefix("base64:"))
    }

    /// A runtime error is one `error:` line on stderr (not also the session's log line), and
    /// FFmpeg's own messages stay silent unless -v.
    @Test func aRuntimeErrorIsPrintedOnce() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-once-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let full = dir.appendingPathComponent("full.mkv").path
        let ffmpeg = try CLI.run(
            ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10", "-t", "5", "-c:v", "mjpeg", full],
            executable: URL(fileURLWithPath: "/usr/bin/ffmpeg"))
        #expect(ffmpeg.status == 0, "\(ffmpeg.stderr)")
        let cut = dir.appendingPathComponent("cut.mkv").path
        try Data(try Data(contentsOf: URL(fileURLWithPath: full)).prefix(60_000)).write(to: URL(fileURLWithPath: cut))
        let r = try CLI.run(["scan", cut])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty, "\(r.stdout)")
        // The start line, then the error once, then the summary.
        let lines = r.stderr.split(separator: "\n").filter { !$0.hasPrefix("cvcam: run ") }
        #expect(lines.filter { $0.contains("truncated") }.count == 1, "\(r.stderr)")
        #expect(lines.first?.hasPrefix("error: \(cut) ended after ") == true, "\(r.stderr)")
        #expect(lines.count == 2 && lines.last?.hasPrefix("summary: ") == true, "\(r.stderr)")
    }

    @Test func ffmpegIsSilentUnlessVerbose() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-ffmpeg-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // An MP4 without its index (moov): FFmpeg complains when it opens it.
        let bad = dir.appendingPathComponent("no-index.mp4")
        try Data(repeating: 0x41, count: 4096).write(to: bad)
        let quiet = try CLI.run(["scan", bad.path])
        #expect(quiet.status == 1)
        #expect(quiet.stderr.split(separator: "\n").count == 1, "\(quiet.stderr)")
        #expect(!quiet.stderr.contains(" @ 0x"), "\(quiet.stderr)")
        let verbose = try CLI.run(["scan", "-v", bad.path])
        #expect(verbose.status == 1)
        #expect(verbose.stderr.split(separator: "\n").count > 1, "\(verbose.stderr)")
    }

    @Test func verboseShowsTheSessionsDebugLines() throws {
        let input = "synthetic:size=64x48,fps=10,frames=3"
        let verbose = try CLI.run(["faces", "-v", "--input", input])
        #expect(verbose.status == 0)
        #expect(verbose.stderr.contains("debug: cvcam.session: session started"), "\(verbose.stderr)")
        let plain = try CLI.run(["faces", "--input", input])
        #expect(!plain.stderr.contains("debug:"), "\(plain.stderr)")
    }

    /// Warnings show by default (an image skipped in a folder), with -q too: data only on stdout
    /// does not mean an image may go missing unsaid.
    @Test func warningsShowByDefault() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-warn-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(atPath: CLI.fixture("images/grace_hopper.jpg"), toPath: dir.appendingPathComponent("a.jpg").path)
        try Data("not an image".utf8).write(to: dir.appendingPathComponent("b.png"))
        let plain = try CLI.run(["faces", dir.path])
        #expect(plain.status == 0)
        #expect(plain.stderr.contains("warning: skipped "), "\(plain.stderr)")
        let quiet = try CLI.run(["faces", "-q", dir.path])
        #expect(quiet.stderr.hasPrefix("warning: skipped "), "\(quiet.stderr)")
        #expect(!quiet.stderr.contains("summary:"), "\(quiet.stderr)")
    }

    /// Under a pipe there is no status line (no carriage returns or erase sequences on stderr).
    @Test func noStatusLineWithoutATerminal() throws {
        let r = try CLI.run(["faces", "--realtime", "--input", "synthetic:size=64x48,fps=10,frames=12"])
        #expect(r.status == 0)
        #expect(!r.stderr.contains("\r") && !r.stderr.contains("\u{1B}"), "\(r.stderr.debugDescription)")
    }
}

/// Help and error texts in the CLI's own words, and every fixed set of values offered.
@Suite struct HelpTextTests {
    static let commands = ["", "devices", "faces", "scan", "snap", "watch", "record"]

    /// Swift syntax that must not reach a user: `.member`, `Optional(`, `nil`, `Type.member`.
    static func swiftisms(in text: String) -> [String] {
        let extensions: Set<String> = ["jpg", "jpeg", "png", "avi", "json", "mp4", "mkv"]
        var found: [String] = []
        let patterns = [#"(?:^|[\s(\[`'"])\.([a-z][A-Za-z0-9]*)"#, #"\bOptional\("#, #"\bnil\b"#, #"\b[A-Z][a-z]+[A-Z][A-Za-z]*\.[a-z][A-Za-z]+\b"#]
        for pattern in patterns {
            let regex = try! NSRegularExpression(pattern: pattern)
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let whole = String(text[Range(match.range, in: text)!])
                if match.numberOfRanges > 1, let r = Range(match.range(at: 1), in: text), extensions.contains(String(text[r])) {
                    continue
                }
                found.append(whole)
            }
        }
        return found
    }

    @Test func theCheckFindsSwiftSyntax() {
        #expect(!Self.swiftisms(in: "use .inputPriority to keep it").isEmpty)
        #expect(!Self.swiftisms(in: "got Optional(3)").isEmpty)
        #expect(!Self.swiftisms(in: "SessionPreset.high").isEmpty)
        #expect(Self.swiftisms(in: "FILE.jpg or .png (the photo's file: .jpeg), e.g. 1280x720.").isEmpty)
    }

    @Test(arguments: commands) func helpIsInTheCLIsWords(_ command: String) throws {
        let r = try CLI.run((command.isEmpty ? [] : [command]) + ["--help"])
        #expect(r.status == 0)
        #expect(Self.swiftisms(in: r.stdout).isEmpty, "\(command) --help: \(Self.swiftisms(in: r.stdout))")
        #expect(!r.stdout.contains("(the default). (default:"), "\(command): a default said twice")
    }

    @Test func typedOptionsListTheirValuesInHelpAndCompletion() throws {
        let help = try CLI.run(["scan", "--help"]).stdout.replacingOccurrences(of: "\n", with: " ")
            .replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
        #expect(help.contains("values: high, medium, low, photo, 640x480, 1280x720, 1920x1080, 3840x2160, inputPriority"))
        #expect(help.contains("values: fit, fill, stretch"))
        #expect(help.contains("values: 0, 90, 180, 270"))
        #expect(help.contains("values: qr, microqr, datamatrix, aztec,"))
        let faces = try CLI.run(["faces", "--help"]).stdout.replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
        #expect(faces.contains("values: realtime, standard, tiled"))
        let bash = try CLI.run(["--generate-completion-script", "bash"]).stdout
        for (option, values) in [
            ("--types", "'qr'$'\\n''microqr'"), ("--preset", "'high'$'\\n''medium'"), ("--gravity", "'fit'$'\\n''fill'"),
            ("--rotate", "'0'$'\\n''90'"), ("--face-detection", "'realtime'$'\\n''standard'"), ("--photo-size", "'max'"),
        ] {
            #expect(bash.contains("'\(option)')\n        __cvcam_add_completions -W \(values)"), "\(option) has no value list")
        }
    }

    @Test func errorTextsSayWhatIsAllowed() throws {
        #expect(try Scan.parse(["--types", "qr, ean13"]).types == .only([.qr, .ean13]))
        #expect(try Scan.parse(["--types", " all "]).types == .all)
        let roi = ParsingHelp.message(Faces.self, ["--rect-of-interest", "0.5,0.5,0.6,0.2"])
        #expect(roi.contains("x+w ≤ 1 and y+h ≤ 1"), "\(roi)")
        let preset = try CLI.run(["faces", "--preset", "3840x2160", "--input", CLI.fixture("images/grace_hopper.jpg")])
        #expect(preset.status == 1)
        #expect(preset.stderr.contains("cannot deliver --preset 3840x2160"), "\(preset.stderr)")
        #expect(Self.swiftisms(in: preset.stderr).isEmpty, "\(preset.stderr)")
    }
}

/// The message a command's parser gives for `arguments`.
enum ParsingHelp {
    static func message<C: ParsableCommand>(_: C.Type, _ arguments: [String]) -> String {
        do {
            _ = try C.parseAsRoot(arguments)
            return ""
        } catch {
            return C.message(for: error)
        }
    }
}
