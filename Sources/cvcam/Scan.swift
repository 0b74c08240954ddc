import ArgumentParser
import CaptureKit
import Foundation

/// `cvcam scan`: QR (and barcode) reading.
struct Scan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read QR codes (and, with --types, Micro QR, Data Matrix, Aztec, PDF417 and barcodes).",
        discussion: """
            Each payload is printed once when it appears (`appear`), again every --repeat-interval \
            seconds while it stays in view (`repeat`), and once when it is gone (`leave`: unseen \
            for half a second, or the input ended; each image of a folder is its own view). Text payloads print as text (control characters \
            escaped); binary payloads print escaped in text mode and as base64 in JSON.

            Exit codes: 0 a code was read (or a camera ran until stopped); 1 runtime error; \
            4 a file, folder or synthetic input ended without any code; 64 usage error.
            """)

    @OptionGroup var input: InputOptions
    @OptionGroup var output: OutputOptions

    @Option(
        help: """
            Comma-separated code types, or `all` for every type available here. The 2-D types \
            (qr … pdf417) come from zxing-cpp and ZBar; the barcodes from ZBar, where built with them.
            """)
    var types: CodeTypeSelection = .only([.qr])

    @Option(help: "Seconds before a code still in view is printed again.")
    var repeatInterval: Double = 2

    @Flag(help: "Exit after the first code (exit 0).")
    var once = false

    func validate() throws {
        try OptionRange.check(repeatInterval, OptionRange.seconds, "--repeat-interval", unit: " seconds")
    }

    func run() throws {
        let job = try CaptureJob(input: input, output: output)
        let metadata = CaptureMetadataOutput()
        let available = metadata.availableMetadataObjectTypes.filter { $0 != .face }
        let wanted: [MetadataObjectType]
        switch types {
        case .all: wanted = available
        case .only(let named):
            wanted = named
            let unknown = wanted.filter { !available.contains($0) }
            guard unknown.isEmpty else {
                throw ValidationError(
                    "Code type(s) \(unknown.map(\.rawValue).joined(separator: ", ")) not available in this build. Available: \(available.map(\.rawValue).joined(separator: ", ")), all.")
            }
        }
        try metadata.setMetadataObjectTypes(wanted)
        metadata.rectOfInterest = input.regionOfInterest
        metadata.codeRepeatInterval = repeatInterval
        let log = CodeLog(printer: job.printer, once: once) { [job] in
            DispatchQueue.global().async { try? job.session.stopRunning() }
        }
        metadata.setMetadataObjectsDelegate(log, queue: DispatchQueue(label: "cvcam.scan.log"))
        try job.add(metadata)
        try job.runAnalysing(metadata, output: output, noun: "codes", summaryField: \.codes, phrase: "codes read") { log.codesSeen }
        if log.codesSeen == 0 && input.isFinite && !job.interrupted { throw ExitCode(ExitStatus.nothingFound) }
    }
}

/// Prints code events as they arrive (on its own serial queue).
final class CodeLog: CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    // @unchecked: `count` and `stopped` are touched only on the delegate's serial queue, and read
    // after it is idle.
    let printer: EventPrinter
    let once: Bool
    let stop: @Sendable () -> Void
    private var count = 0
    private var stopped = false

    init(printer: EventPrinter, once: Bool, stop: @escaping @Sendable () -> Void) {
        self.printer = printer
        self.once = once
        self.stop = stop
    }

    /// Appearances printed so far.
    var codesSeen: Int { count }

    func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {}

    func metadataOutput(_ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection) {
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
        let shown = code.stringValue.map { Self.escape($0) } ?? "(binary, \(code.payload.count) bytes) " + Self.escape(bytes: code.payload)
        printer.emit(
            CodeEvent(event: event, code: code, viewBox: view.box),
            at: code.time,
            text: "\(printer.timeText(code.time))  \(event.padding(toLength: 6, withPad: " ", startingAt: 0)) \(code.type.rawValue.uppercased())  \(shown)\(view.text)"
        )
    }

    /// Text with control characters escaped, so a payload cannot move the terminal's cursor.
    static func escape(_ text: String) -> String { TerminalText.escaped(text, backslash: true) }

    /// Bytes as printable ASCII with everything else as \xNN.
    static func escape(bytes: [UInt8]) -> String {
        bytes.map { b in
            (0x20..<0x7F).contains(b) && b != 0x5C ? String(UnicodeScalar(b)) : String(format: "\\x%02x", b)
        }.joined()
    }
}
