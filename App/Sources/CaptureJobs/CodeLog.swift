import ArgumentParser
import CaptureKit
import Foundation
import Logging

/// Prints code events as they arrive (on its own serial queue).
package final class CodeLog: CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    // @unchecked: `count` and `stopped` are touched only on the delegate's serial queue, and read
    // after it is idle.
    package let printer: EventPrinter
    package let once: Bool
    package let raw: Bool
    package let sources: SourceNames
    package let stop: @Sendable () -> Void
    private var count = 0
    private var stopped = false

    package init(printer: EventPrinter, once: Bool, raw: Bool = false, sources: SourceNames = .none, stop: @escaping @Sendable () -> Void) {
        self.printer = printer
        self.once = once
        self.raw = raw
        self.sources = sources
        self.stop = stop
    }

    /// Appearances printed so far.
    package var codesSeen: Int { count }

    package func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {}

    package func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
        for event in events {
            guard !stopped else { return }
            switch event {
            case .codeAppeared(let code):
                count += 1
                print(code, event: event.name)
            case .codeRepeated(let code), .codeLeft(let code): print(code, event: event.name)
            default: continue
            }
            if once {
                stopped = true
                stop()
            }
        }
    }

    private func print(_ code: MetadataMachineReadableCodeObject, event: String) {
        let view = printer.view(code.bounds)
        let source = sources.name(code.time)
        guard !raw else {
            // Payloads only: a code going out of view prints nothing (zbarimg --raw's lines are decodes).
            guard event != "leave" else { return }
            printer.emit(CodeEvent(event: event, code: code, viewBox: view.box, source: source), text: Self.rawLine(code))
            return
        }
        let shown = code.stringValue.map { Self.escape($0) } ?? "(binary, \(code.payload.count) bytes) " + Self.escape(bytes: code.payload)
        printer.emit(
            CodeEvent(event: event, code: code, viewBox: view.box, source: source),
            at: code.time,
            text: "\(sources.prefix(code.time))\(printer.timeText(code.time))  \(event.padding(toLength: 6, withPad: " ", startingAt: 0)) \(code.type.rawValue.uppercased())  \(shown)\(view.text)"
        )
    }

    /// The prefix --raw marks a base64 payload with.
    package static let base64Prefix = "base64:"

    /// A payload for --raw: its text when that is one safe line, else `base64:` and the bytes.
    /// Text starting with the prefix itself goes as base64 too, so every line reads back one way.
    package static func rawLine(_ code: MetadataMachineReadableCodeObject) -> String {
        if let text = code.stringValue, !text.hasPrefix(base64Prefix),
            !text.unicodeScalars.contains(where: {
                TerminalText.isControl($0) || TerminalText.isBidiControl($0) || FilePathBytes.carriedByte($0) != nil
            })
        {
            return text
        }
        return base64Prefix + Data(code.payload).base64EncodedString()
    }

    /// Text with control characters escaped, so a payload cannot move the terminal's cursor.
    package static func escape(_ text: String) -> String { TerminalText.escaped(text, backslash: true) }

    /// Bytes as printable ASCII with everything else as \xNN.
    package static func escape(bytes: [UInt8]) -> String {
        bytes.map { b in
            (0x20..<0x7F).contains(b) && b != 0x5C ? String(UnicodeScalar(b)) : String(format: "\\x%02x", b)
        }.joined()
    }
}
