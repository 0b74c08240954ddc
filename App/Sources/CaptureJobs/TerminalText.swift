import CaptureKit
import Foundation

/// Makes strings from outside (file names, payloads, device names, library messages) safe to
/// show: the one place text output is escaped, so no input can move the cursor, retitle the
/// window, clear the screen or reorder what is displayed (`invoice_\u{202E}fdp.exe`).
package enum TerminalText {
    /// Bidirectional formatting controls: embeddings/overrides U+202A…U+202E, isolates U+2066…U+2069.
    package static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    /// C0, DEL and C1 control characters (U+0000…U+001F, U+007F…U+009F).
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `text` with controls as `\n`, `\r`, `\t` or `\xNN`, bidi controls as `\u{NNNN}` and a
    /// file name's non-UTF-8 bytes (`FilePathBytes`) as `\xNN`; with `backslash`, `\` doubles too
    /// so the escaped form reads back unambiguously.
    package static func escaped(_ text: String, backslash: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: {
            isControl($0) || isBidiControl($0) || FilePathBytes.carriedByte($0) != nil || (backslash && $0 == "\\")
        })
        else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\" where backslash: out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isControl(scalar): out += String(format: "\\x%02x", scalar.value)
            case _ where isBidiControl(scalar): out += String(format: "\\u{%04X}", scalar.value)
            case _ where FilePathBytes.carriedByte(scalar) != nil:
                out += String(format: "\\x%02x", FilePathBytes.carriedByte(scalar)!)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Encoded JSON with DEL, C1 and bidi controls as `\uXXXX` (JSONSerialization escapes only
    /// C0). They can only occur inside JSON strings, where the escape means the same character.
    package static func jsonEscaped(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { $0.value >= 0x7F && (isControl($0) || isBidiControl($0)) })
        else { return json }
        var out = ""
        for scalar in json.unicodeScalars {
            if scalar.value >= 0x7F && (isControl(scalar) || isBidiControl(scalar)) {
                out += String(format: "\\u%04x", scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Writes `text`, redacted (`Redaction.redact`) and escaped whole (a newline inside it cannot
    /// start a line of its own), and a newline to stderr: for log lines and warnings that carry
    /// names from outside.
    package static func printLine(_ text: String) {
        try? FileHandle.standardError.write(contentsOf: Data((escaped(Redaction.redact(text)) + "\n").utf8))
    }

    /// Writes `text` (redacted, and escaped line by line: ArgumentParser's messages end with
    /// usage lines) and a newline to stderr.
    package static func printError(_ text: String) {
        let lines = Redaction.redact(text).split(separator: "\n", omittingEmptySubsequences: false).map { escaped(String($0)) }
        try? FileHandle.standardError.write(contentsOf: Data((lines.joined(separator: "\n") + "\n").utf8))
    }
}
