import Foundation
import Testing

@testable import cvcam

/// Strings from outside never reach the terminal raw (issue #17, class 6).
@Suite struct TerminalEscapingTests {
    static let hostile = "x\u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}invoice_\u{202E}fdp\u{2066}.exe"

    func isRaw(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\n") || (0x7F...0x9F).contains(scalar.value)
            || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    @Test func textEscapesC0DELC1AndBidi() {
        let shown = TerminalText.escaped(Self.hostile)
        #expect(!shown.unicodeScalars.contains(where: isRaw))
        #expect(shown == "x\\x1b]0;pwned\\x07\\x1b[2J\\x9binvoice_\\u{202E}fdp\\u{2066}.exe")
        #expect(TerminalText.escaped("plain é ✓") == "plain é ✓")
    }

    @Test func jsonEscapesDELC1AndBidiAsUnicodeEscapes() throws {
        let line = EventPrinter.encode(RecordingEvent(path: Self.hostile + "\u{7F}", width: 1, height: 1))
        #expect(!line.unicodeScalars.contains(where: isRaw))
        #expect(line.contains("\\u001b") && line.contains("\\u202e") && line.contains("\\u009b") && line.contains("\\u007f"))
        let decoded = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(decoded?["path"] as? String == Self.hostile + "\u{7F}")
    }

    /// A folder holding a file with a hostile name: neither the error line on stderr nor the
    /// text or JSON events carry a raw control or bidi character.
    @Test func hostileFileNameInAFolderIsEscapedEverywhere() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cvcam-escape-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("not a picture".utf8).write(to: dir.appendingPathComponent(Self.hostile + ".jpg"))
        for json in [false, true] {
            let result = try CLI.run(["faces", "--input", dir.path] + (json ? ["--json"] : []))
            #expect(result.status < 128)
            let all = result.stdout + result.stderr
            #expect(!all.unicodeScalars.contains(where: isRaw), "\(json): \(all.debugDescription)")
            #expect(all.contains("invoice_"), "the name should still be shown: \(all.debugDescription)")
        }
        // Beside a real photo the hostile file is skipped with a warning, escaped as well.
        try FileManager.default.copyItem(
            atPath: CLI.fixture("images/grace_hopper.jpg"), toPath: dir.appendingPathComponent("a.jpg").path)
        let result = try CLI.run(["faces", "--input", dir.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning: skipped") && result.stderr.contains("invoice_"), "\(result.stderr.debugDescription)")
        #expect(!(result.stdout + result.stderr).unicodeScalars.contains(where: isRaw), "\(result.stderr.debugDescription)")
    }

    /// Usage errors keep their usage lines (escaping is per line).
    @Test func usageErrorsStayReadable() throws {
        let result = try CLI.run(["scan", "--input", "synthetic:fps=nan\u{1B}[2J"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("\nUsage: cvcam scan"), "\(result.stderr.debugDescription)")
        #expect(!result.stderr.unicodeScalars.contains(where: isRaw))
    }
}
