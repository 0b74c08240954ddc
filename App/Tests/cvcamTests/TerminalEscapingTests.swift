import Foundation
import Logging
import Testing

@testable import CaptureJobs
@testable import CapturePreview
@testable import CaptureServe
@testable import CVCamCommands
import AppTestSupport

/// Strings from outside never reach the terminal raw (issue #17, class 6): the escaping itself.
/// Runs of the binary on hostile names are rows of `BadInputTableTests`, which also checks every
/// row's output for raw controls.
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

    /// The CLI's log lines: what the handler writes, hostile text in message, metadata and error
    /// included, has no raw control left once escaped, as `printLine` does.
    @Test func logLinesCarryMetadataAndErrorAndEscapeThem() {
        struct Failure: Error, CustomStringConvertible { var description: String }
        var handler = EscapingLogHandler(label: "cvcam.test", logLevel: .debug, showsLabel: true)
        handler[metadataKey: "camera"] = "door"
        handler[metadataKey: "path"] = "old"
        let event = LogEvent(
            level: .warning, message: "skipped \(Self.hostile)", error: Failure(description: "bad \u{1B}[2J"),
            metadata: ["path": "\(Self.hostile)"], source: nil, file: #fileID, function: #function, line: #line)
        let line = handler.line(for: event)
        #expect(line == "warning: cvcam.test: skipped \(Self.hostile) camera=door path=\(Self.hostile) error=bad \u{1B}[2J")
        #expect(!TerminalText.escaped(line).unicodeScalars.contains(where: isRaw))

        let quiet = EscapingLogHandler(label: "cvcam.test", logLevel: .warning)
        let plain = LogEvent(
            level: .error, message: "no camera", metadata: nil, source: nil, file: #fileID, function: #function, line: #line)
        #expect(quiet.line(for: plain) == "error: no camera")
    }
}
