import ArgumentParser
import CaptureJobs
import CaptureKit
import Foundation

/// `cvcam record`: a movie (Motion-JPEG in AVI) through `CaptureMovieFileOutput`.
struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record the input to a movie file (Motion-JPEG AVI), until stopped or a limit is reached.",
        discussion: """
            Recording starts at the first frame (a `recording` event) and ends when the input \
            ends, a limit (--duration, --max-size) is reached, or SIGINT/SIGTERM arrives; each \
            way the file is finalised and a summary gives its frames and bytes. Every \
            --fragment-interval seconds of recorded time the file is made playable on disk, so \
            even a killed recorder leaves a file that plays up to its last fragment.

            The movie is written beside FILE under a temporary name and put in place when it \
            is complete, so a failed or killed run never costs the file that was there before. \
            -o naming a folder or the input, or a file another cvcam is recording, is refused. \
            With --dir instead of -o the movie is named by the input and the local wall time it \
            started, <camera>-<yyyyMMdd-HHmmss.mmm>.avi; a name already taken gets -2, -3, …; \
            --max-age, --max-bytes and --min-free-space then keep that camera's recordings in \
            the folder within limits, the oldest removed first (never the one being written, \
            nor a file cvcam did not name), each removal a `retention` event.

            Exit codes: 0 the file was finalised; 1 runtime error (input failed, the file could \
            not be written, -o refused); 64 usage error.
            """)

    @OptionGroup var input: InputOptions
    @OptionGroup var output: OutputOptions

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("The movie file (.avi).", valueName: "file"), completion: .file(extensions: ["avi"]), transform: InputOptions.argumentBytes)
    var outputFile: String?

    @Option(help: "Instead of -o: record into this folder (created if missing), named by input and start time.", completion: .directory, transform: InputOptions.argumentBytes)
    var dir: String?

    @Option(help: "Stop after this many seconds of recorded time.")
    var duration: Double?

    @Option(help: "Stop before the file grows past this size: bytes, or with K, M or G (e.g. 50M).")
    var maxSize: String?

    @Option(help: "Seconds of recorded time between crash-safe points (fsync + playable headers).")
    var fragmentInterval: Double = 2

    @Option(help: "JPEG quality of each frame, 1…100.")
    var quality: Int = 85

    @Flag(help: "Replace FILE if it exists (only once the new recording is complete).")
    var overwrite = false

    @OptionGroup(title: "Retention (with --dir)") var retention: RetentionOptions

    func validate() throws {
        try input.requireSingleInput("record")
        guard (outputFile == nil) != (dir == nil) else {
            throw ValidationError("Give the movie's file with -o FILE.avi, or a folder with --dir (not both).")
        }
        // Recording goes through Foundation paths, which would store such a name's bytes altered.
        if let dir, dir.unicodeScalars.contains(where: { FilePathBytes.carriedByte($0) != nil }) {
            throw ValidationError(
                "--dir '\(TerminalText.escaped(dir))' is not a UTF-8 folder name; use a UTF-8 name for the folder.")
        }
        if let outputFile {
            guard !outputFile.unicodeScalars.contains(where: { FilePathBytes.carriedByte($0) != nil }) else {
                throw ValidationError(
                    "-o '\(TerminalText.escaped(outputFile))' is not a UTF-8 file name; record to a UTF-8 name and rename the file afterwards.")
            }
            guard (outputFile as NSString).pathExtension.lowercased() == "avi" else {
                throw ValidationError("-o must end in .avi (got '\(outputFile)'); cvcam records Motion-JPEG AVI.")
            }
        }
        // Up to a year of recorded time.
        try OptionRange.check(duration, 0.001...31_622_400, "--duration", unit: " seconds")
        if let maxSize, RecordingFiles.parseBytes(maxSize) == nil {
            throw ValidationError("--max-size must be a number of bytes above 0, optionally with K, M or G (got '\(maxSize)').")
        }
        try OptionRange.check(fragmentInterval, OptionRange.positiveSeconds, "--fragment-interval", unit: " seconds")
        try OptionRange.check(quality, 1...100, "--quality")
        if retention.isSet && dir == nil {
            throw ValidationError("--max-age, --max-bytes and --min-free-space keep a folder of recordings: record with --dir.")
        }
    }

    func run() throws {
        var guarded: OutputFileGuard?
        // Nothing under -o is touched until the new recording is complete; refused before the input opens.
        if let outputFile {
            guarded = try OutputFileGuard(target: URL(fileURLWithPath: outputFile), input: input.input, overwrite: overwrite)
        }
        let job = try CaptureJob(input: input, output: output)
        if let dir {
            let folder = URL(fileURLWithPath: dir, isDirectory: true)
            try LocalFiles.makeFolder(dir, what: "the recording folder")
            let base = SnapshotStore.sanitizedName(job.device.localizedName) + "-" + LocalTimestamp(Date()).fileNameStamp
            guarded = try RecordingFiles.freshGuard(in: folder, base: base, input: input.input)
        }
        guard let guarded else { throw ValidationError("Give -o FILE.avi or --dir FOLDER.") }
        let url = guarded.target
        let movie = CaptureMovieFileOutput()
        movie.movieFragmentInterval = MediaTime(seconds: fragmentInterval)
        movie.maxRecordedDuration = duration.map { MediaTime(seconds: $0) }
        movie.maxRecordedFileSize = maxSize.flatMap(RecordingFiles.parseBytes)
        movie.jpegQuality = quality
        try job.add(movie)
        let format = job.device.activeFormat.dimensions
        let size = input.oriented(format)
        // Retention keeps this camera's earlier recordings in the folder within limits; the
        // one being written is the newest, which is never removed.
        let keeper = dir.flatMap { dir in
            retention.keeper(
                camera: SnapshotStore.sanitizedName(job.device.localizedName), folders: [(.recordings, dir)], printer: job.printer)
        }
        keeper?.start()
        defer { keeper?.stop() }
        let recorder = Recorder(printer: job.printer, path: url.path, size: size) { [job] in
            DispatchQueue.global().async { try? job.session.stopRunning() }
        }
        // Recording begins with the session's first frame.
        try movie.startRecording(to: guarded.temporary, recordingDelegate: recorder)
        try job.run { [job] in
            String(
                format: "recording %@  %.1f s  %@", url.lastPathComponent, movie.recordedDuration.seconds,
                ByteCountFormatter.string(fromByteCount: movie.recordedFileSize, countStyle: .file))
                + "  \(job.session.capturedFrameCount) frames"
        }
        let ending = recorder.waitUntilFinished()
        job.reportRuntimeError()
        let complete = job.runtimeError == nil && (ending.map { RecordingFiles.completeEndings.contains($0.code) } ?? true)
        // A failed run still leaves its partial (playable) recording when there was no old file.
        if complete || guarded.writesInPlace || !FileManager.default.fileExists(atPath: url.path) {
            do { try guarded.commit(overwrite: overwrite) } catch {
                let message = SystemErrorText.reason(for: error)  // already names the file
                job.printer.emit(ErrorEvent(code: "writeFailed", message: message), text: "error: \(message)")
                throw ExitCode(ExitStatus.runtimeError)
            }
        } else {
            guarded.discard()
            job.printer.emit(
                ErrorEvent(code: "notReplaced", message: "the recording failed; \(url.path) was left as it was"),
                text: "error: the recording failed; \(url.path) was left as it was")
        }
        // What is in the file, read back from it.
        let bytes = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int64) ?? 0
        let frames = bytes > 0 ? ((try? VideoFileSource(path: url.path))?.declaredFrameCount ?? 0) : 0
        if let error = ending, !RecordingFiles.completeEndings.contains(error.code) {
            job.printer.emit(ErrorEvent(error), text: "error: \(error.message)")
        }
        if !output.quiet || output.json {
            var summary = job.summary(processed: frames, skipped: movie.droppedFrameCount)
            summary.path = url.path
            summary.recordedFrames = frames
            summary.bytes = bytes
            summary.ended = ending?.code.rawValue ?? "stopped"
            job.printer.emit(
                summary,
                text: "summary: \(url.path): \(frames) frames, \(bytes) bytes, \(movie.droppedFrameCount) dropped (ended: \(ending?.code.rawValue ?? "stopped"))\(job.formatSummary)")
        }
        if job.runtimeError != nil { throw ExitCode(ExitStatus.runtimeError) }
        if let error = ending, !RecordingFiles.completeEndings.contains(error.code) { throw ExitCode(ExitStatus.runtimeError) }
    }
}

/// Prints the start of the recording and remembers how it ended.
///
/// Threading: called on the movie output's delegate queue; `waitUntilFinished` on any thread.
final class Recorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    // @unchecked: `ending` is written once before `finished` is signalled and read after it.
    let printer: EventPrinter
    /// The file the user named (the recording itself goes to a temporary name beside it).
    let path: String
    let size: CaptureDevice.Dimensions
    let stop: @Sendable () -> Void
    private let finished = DispatchSemaphore(value: 0)
    private var ending: CaptureError?

    init(printer: EventPrinter, path: String, size: CaptureDevice.Dimensions, stop: @escaping @Sendable () -> Void) {
        self.printer = printer
        self.path = path
        self.size = size
        self.stop = stop
    }

    func fileOutput(_ output: CaptureMovieFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]) {
        printer.emit(
            RecordingEvent(path: path, width: size.width, height: size.height),
            text: "recording \(path)  \(size)")
    }

    func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?
    ) {
        ending = error.map(CaptureError.delegated)
        finished.signal()
        // A limit ended the recording: nothing more to do, stop the session.
        stop()
    }

    /// Blocks until the recording ended; returns why (nil: stopRecording()).
    func waitUntilFinished() -> CaptureError? {
        finished.wait()
        return ending
    }
}
