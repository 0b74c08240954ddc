import ArgumentParser
import CaptureJobs
import CaptureKit
import Foundation

/// `cvcam scan`: QR (and barcode) reading.
struct Scan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read QR, Micro QR, Aztec, Data Matrix and PDF417 codes (and, with --types, barcodes).",
        discussion: """
            Each payload is printed once when it appears (`appear`), again every --repeat-interval \
            seconds while it stays in view (`repeat`), and once when it is gone (`leave`: unseen \
            for half a second, or the input ended; each image of a folder is its own view). Text payloads print as text (control characters \
            escaped); binary payloads print escaped in text mode and as base64 in JSON.

            Text output: codes on stdout, one line each; errors, drop reports and the summary \
            on stderr, so `cvcam scan … > codes.txt` keeps only codes. --raw prints only the \
            payloads; -q leaves out everything but codes and errors.

            Several inputs (arguments, repeated --input, or - for standard input: an image, or \
            a list of paths one per line) are read one after another; each event names its \
            `source` file (the image within a folder, too), and one summary ends the run.

            Exit codes: 0 a code was read (with several inputs: in any of them), or a camera ran \
            until stopped; 1 runtime error (with several inputs: any input failed; the others \
            are still read); 4 every input was a file, folder or synthetic scene and none held \
            a code; 64 usage error.
            """)

    @Argument(
        help: ArgumentHelp("Files or folders to read (like --input; several are read in turn; - is standard input).", valueName: "input"),
        completion: .file(), transform: InputOptions.argumentBytes)
    var files: [String] = []

    @OptionGroup var input: InputOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Motion") var motion: MotionOptions

    @Option(
        help: """
            Comma-separated code types, or `all` for every type available here. The default reads \
            every 2-D type (qr, microqr, aztec, datamatrix, pdf417): the ones without QR finders \
            are looked for on every frame and read where a sign of them shows, so a frame without \
            a code costs up to a third more than with `--types qr,microqr`, the cheapest choice. \
            The barcodes (ean13 … databar, or `all`) add whole-frame scans to \
            each frame. The 2-D types come from zxing-cpp and cvcam's own locators; the barcodes \
            from ZBar and zxing-cpp.
            """)
    var types: CodeTypeSelection = .only(Self.defaultTypes)

    /// What `scan` reads without `--types`: every 2-D type, as a user who shows it a code expects.
    static let defaultTypes: [MetadataObjectType] = [.qr, .microQR, .aztec, .dataMatrix, .pdf417]

    @Option(help: "Seconds before a code still in view is printed again.")
    var repeatInterval: Double = 2

    @Flag(help: "Exit after the first code (exit 0).")
    var once = false

    @Flag(
        help: """
            Print only payloads, one per line: text as it is; a payload that is not text, or holds \
            control characters or starts with base64:, as base64: and its bytes in base64.
            """)
    var raw = false

    func validate() throws {
        try OptionRange.check(repeatInterval, OptionRange.seconds, "--repeat-interval", unit: " seconds")
        if raw && output.json { throw ValidationError("Use either --raw or --json, not both.") }
    }

    func run() throws {
        let list = try InputList(arguments: files, options: input)
        defer { list.removeTemporaryFiles() }
        let totals = try CaptureJob.analyseEach(
            list, options: input, output: output, noun: "codes", phrase: "codes read", summaryField: \.codes, untilFound: once
        ) { job, sources in
            let metadata = try codeOutput(latency: job)
            let log = CodeLog(printer: job.printer, once: once, raw: raw, sources: sources) { [job] in
                DispatchQueue.global().async { try? job.session.stopRunning() }
            }
            metadata.motionDetection = motion.settings()
            metadata.setMetadataObjectsDelegate(
                MetadataDelegates.with(log, motion: motion, printer: job.printer), queue: DispatchQueue(label: "cvcam.scan.log"))
            try job.add(metadata)
            return (metadata, { log.codesSeen })
        }
        if totals.found == 0 && totals.allFinite && !totals.interrupted { throw ExitCode(ExitStatus.nothingFound) }
    }

    /// The metadata output for --types; with --stats-interval its decoding is timed for `job`'s stats.
    func codeOutput(latency job: CaptureJob) throws -> CaptureMetadataOutput {
        let metadata: CaptureMetadataOutput
        if job.statsInterval != nil {
            let recorder = LatencyRecorder()
            job.latency = recorder
            metadata = CaptureMetadataOutput(
                faceStage: nil, codeStage: TimedCodeStage(DefaultCodeStage(detector: try CodeDetector()), recorder: recorder))
        } else {
            metadata = CaptureMetadataOutput()
        }
        try metadata.setMetadataObjectTypes(try types.resolved(available: metadata.availableMetadataObjectTypes))
        metadata.rectOfInterest = input.regionOfInterest
        metadata.codeRepeatInterval = repeatInterval
        return metadata
    }
}
