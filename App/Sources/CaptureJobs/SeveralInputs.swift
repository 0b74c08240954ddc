import ArgumentParser
import CaptureKit
import Foundation

/// The inputs of one `scan` or `faces` run: the positional arguments, then every --input, in
/// order. `-` is standard input, read once: an image (recognised by its first bytes, written to
/// a temporary file for the run) or else a list of paths, one per line (bytes kept as given).
/// An empty list means the camera (--device, or the default one).
///
/// Threading: made and used on the main thread (it reads standard input once, when made).
package struct InputList {
    package struct Entry: Equatable {
        /// What the session opens (nil: the camera).
        package var path: String?
        /// How events and errors name it: the path as given, `-` for an image on standard input.
        package var shownAs: String?

        /// Creates the value from each of its properties.
        package init(path: String? = nil, shownAs: String? = nil) {
            self.path = path
            self.shownAs = shownAs
        }
    }

    package private(set) var entries: [Entry] = []
    private var temporaryFiles: [String] = []

    package var isSeveral: Bool { entries.count > 1 }

    package init(arguments: [String], options: InputOptions, standardInput: () -> Data = { FileHandle.standardInput.readDataToEndOfFile() })
        throws
    {
        let given = arguments + options.inputs
        if !arguments.isEmpty && options.device != nil {
            throw ValidationError("Use either --device or input files, not both.")
        }
        guard given.filter({ $0 == "-" }).count <= 1 else {
            throw ValidationError("- (standard input) can be given once.")
        }
        for item in given {
            try InputOptions.validateSynthetic(item)
            guard item == "-" else {
                entries.append(Entry(path: item, shownAs: item))
                continue
            }
            let data = standardInput()
            guard !data.isEmpty else {
                throw CLIError.message("Standard input (-) was empty: pipe an image, or a list of paths one per line.")
            }
            if let ext = Self.imageExtension(of: data) {
                let path = NSTemporaryDirectory() + "cvcam-stdin-\(getpid())-\(UUID().uuidString).\(ext)"
                do { try AtomicFile.write(data, to: URL(fileURLWithPath: path)) } catch {
                    throw CLIError.message("Could not keep the image from standard input: \(error.message)")
                }
                temporaryFiles.append(path)
                entries.append(Entry(path: path, shownAs: "-"))
            } else {
                for line in data.split(separator: UInt8(ascii: "\n")) {
                    let bytes = line.last == UInt8(ascii: "\r") ? line.dropLast() : line
                    guard !bytes.isEmpty else { continue }
                    let path = FilePathBytes.string(bytes)
                    try InputOptions.validateSynthetic(path)
                    entries.append(Entry(path: path, shownAs: path))
                }
            }
        }
        if given.isEmpty { entries = [Entry(path: nil, shownAs: nil)] }
        guard !entries.isEmpty else {
            throw CLIError.message("Standard input (-) listed no paths.")
        }
    }

    /// Removes the image standard input was copied to.
    package func removeTemporaryFiles() {
        for path in temporaryFiles { unlink(path) }
    }

    /// The extension OpenCV decodes `data` by, when its first bytes are an image's: PNG, JPEG,
    /// BMP (with a known info-header size, so a path list starting "BM" is not one), TIFF, WebP, PNM.
    package static func imageExtension(of data: Data) -> String? {
        let b = [UInt8](data.prefix(26))
        func starts(_ prefix: [UInt8]) -> Bool { b.starts(with: prefix) }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "png" }
        if starts([0xFF, 0xD8, 0xFF]) { return "jpg" }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return "tif" }
        if b.count >= 12, starts(Array("RIFF".utf8)), Array(b[8..<12]) == Array("WEBP".utf8) { return "webp" }
        if b.count >= 18, starts(Array("BM".utf8)), [12, 40, 52, 56, 64, 108, 124].contains(b[14]),
            b[15] == 0, b[16] == 0, b[17] == 0
        {
            return "bmp"
        }
        if b.count >= 3, b[0] == UInt8(ascii: "P"), (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(b[1]),
            [0x20, 0x09, 0x0A, 0x0D].contains(b[2])
        {
            return ["pbm", "pgm", "ppm"][Int(b[1] - UInt8(ascii: "1")) % 3]
        }
        return nil
    }
}

/// Names the file each event's frame came from (the `source` field): the image within a folder,
/// or the file itself; nothing for cameras and synthetic scenes. Text lines start with it
/// (`name: `) when it varies: a folder, or several inputs.
///
/// Threading: immutable; `name` is called on the delegates' queues.
package struct SourceNames: Sendable {
    package let name: @Sendable (MediaTime) -> String?
    package let inText: Bool

    package static let none = SourceNames(name: { _ in nil }, inText: false)

    /// For `job`'s input, shown as `shownAs`.
    package init(job: CaptureJob, shownAs: String?, several: Bool) {
        switch job.device.source {
        case let folder as ImageFolderSource where !folder.loops && job.options.inputKind == "folder":
            // A folder's frame i is files[i], at i frame durations (ImageFolderSource's clock).
            let files = folder.files
            let step = MediaTime.frameDuration(framesPerSecond: folder.frameRate).seconds
            self.init(
                name: { t in
                    let i = Int((t.seconds / step).rounded())
                    return files.indices.contains(i) ? files[i] : nil
                }, inText: true)
        case is ImageFolderSource, is VideoFileSource:
            // A file input may be a URL FFmpeg opens (rtmp://user:pass@…): shown redacted.
            let shown = shownAs.map(Redaction.redact)
            self.init(name: { _ in shown }, inText: several)
        default:
            self.init(name: { _ in nil }, inText: false)
        }
    }

    package init(name: @escaping @Sendable (MediaTime) -> String?, inText: Bool) {
        self.name = name
        self.inText = inText
    }

    /// "name: " for text lines, when shown.
    package func prefix(_ time: MediaTime) -> String { inText ? name(time).map { "\($0): " } ?? "" : "" }
}

extension CaptureJob {
    /// What a run of an analysing command over its inputs came to.
    package struct Totals {
        package var found = 0
        package var failedInputs = 0
        /// Every input ends by itself (no camera), so "nothing found" is meaningful.
        package var allFinite = true
        package var interrupted = false

        /// Creates the value from each of its properties.
        package init(found: Int = 0, failedInputs: Int = 0, allFinite: Bool = true, interrupted: Bool = false) {
            self.found = found
            self.failedInputs = failedInputs
            self.allFinite = allFinite
            self.interrupted = interrupted
        }
    }

    /// Runs an analysing command (faces, scan) over every input of `list` in turn: `setUp` adds
    /// the command's metadata output to each input's job and returns it with its count of what
    /// was found. Then one summary for the run (`phrase`, e.g. "codes read", in text; the count
    /// in `summaryField`). With one input, an input that cannot be opened is thrown as before;
    /// with several, it is reported as an `error` and the run goes on. Throws exit 1 when any
    /// input failed, after the summary. SIGINT/SIGTERM ends the run after the current input, and
    /// so does a find with `untilFound` (scan --once).
    package static func analyseEach(
        _ list: InputList, options: InputOptions, output: OutputOptions, noun: String, phrase: String,
        summaryField: WritableKeyPath<SummaryEvent, Int?>, untilFound: Bool = false,
        setUp: (CaptureJob, SourceNames) throws -> (CaptureMetadataOutput, @Sendable () -> Int)
    ) throws -> Totals {
        let runPrinter = EventPrinter(json: output.json, quiet: output.quiet, preview: nil, statusLine: nil)
        var totals = Totals()
        var outcomes: [Outcome] = []
        let started = Date()
        for entry in list.entries {
            var one = options
            one.input = entry.path
            totals.allFinite = totals.allFinite && one.isFinite
            let job: CaptureJob
            do {
                job = try CaptureJob(input: one, output: output)
            } catch let error as CaptureError where list.isSeveral {
                totals.failedInputs += 1
                runPrinter.emit(ErrorEvent(error), text: "error: \(error.message)")
                continue
            } catch let error as CLIError where list.isSeveral {
                totals.failedInputs += 1
                runPrinter.emit(ErrorEvent(code: "inputFailed", message: error.description), text: "error: \(error.description)")
                continue
            }
            let (metadata, found) = try setUp(job, SourceNames(job: job, shownAs: entry.shownAs, several: list.isSeveral))
            let outcome = try job.analyse(metadata, noun: noun, found: found)
            outcomes.append(outcome)
            totals.found += outcome.found
            if outcome.failed { totals.failedInputs += 1 }
            if outcome.interrupted {
                totals.interrupted = true
                break
            }
            if untilFound && totals.found > 0 { break }
        }
        var summary = SummaryEvent(
            frames: outcomes.map(\.frames).reduce(0, +), analysed: outcomes.map(\.analysed).reduce(0, +),
            skipped: outcomes.map(\.skipped).reduce(0, +),
            seconds: list.isSeveral ? Date().timeIntervalSince(started) : outcomes.first?.seconds ?? 0,
            input: outcomes.first?.input ?? .init(kind: "none", name: "", size: ""))
        summary[keyPath: summaryField] = totals.found
        var lead = ""
        if list.isSeveral {
            let sizes = Set(outcomes.map(\.input.size))
            summary.input = .init(kind: "several", name: "\(list.entries.count) inputs", size: sizes.count == 1 ? sizes.first! : "mixed")
            summary.inputs = list.entries.count
            summary.failedInputs = totals.failedInputs
            lead = "\(list.entries.count) inputs" + (totals.failedInputs > 0 ? " (\(totals.failedInputs) failed)" : "") + ", "
        }
        runPrinter.emit(
            summary,
            text: "summary: " + lead
                + String(
                    format: "%d frames, %d analysed at %.1f fps, %d skipped, %d %@", summary.frames, summary.analysed,
                    summary.fps, summary.skipped, totals.found, phrase)
                + (list.isSeveral ? "" : outcomes.first?.formatSummary ?? ""))
        if totals.failedInputs > 0 { throw ExitCode(ExitStatus.runtimeError) }
        return totals
    }
}
