import ArgumentParser
import CaptureKit
import Foundation
import Synchronization

/// The event-clip options of `cvcam watch`, which are also the keys of a `cvcam serve`
/// camera's `clips:` section (`preRoll` is `--pre-roll`; `dir` is `--clips`).
package struct ClipOptions: ParsableArguments {
    @Option(
        name: .customLong("clips"),
        help: ArgumentHelp("Also record event clips into this folder (created if missing): a face's visit, with --pre-roll and --post-roll.", valueName: "dir"),
        completion: .directory, transform: InputOptions.argumentBytes)
    package var dir: String?

    @Option(help: ArgumentHelp("Seconds of video before a face entered that a clip starts with (0…60).", valueName: "seconds"))
    package var preRoll: Double = 5

    @Option(help: ArgumentHelp("Seconds a clip goes on after the last face left (0…600).", valueName: "seconds"))
    package var postRoll: Double = 5

    @Option(help: ArgumentHelp("Longest clip in seconds (1…3600); a longer visit goes on in the next clip.", valueName: "seconds"))
    package var maxClip: Double = 120

    @Option(help: ArgumentHelp("JPEG quality of clip frames encoded here, 1…100 (an MJPEG camera's own frames are kept as they came).", valueName: "quality"))
    package var clipQuality: Int = 80

    @Option(help: ArgumentHelp("Scale clip frames down to fit this size (WxH), encoding each once; default: the frame's own size.", valueName: "WxH"))
    package var clipMaxSize: String?

    package init() {}

    package func validate() throws {
        if let dir, dir.unicodeScalars.contains(where: { FilePathBytes.carriedByte($0) != nil }) {
            throw ValidationError("--clips '\(TerminalText.escaped(dir))' is not a UTF-8 folder name; use a UTF-8 name for the clip folder.")
        }
        try OptionRange.check(preRoll, 0...60, "--pre-roll", unit: " seconds")
        try OptionRange.check(postRoll, 0...600, "--post-roll", unit: " seconds")
        try OptionRange.check(maxClip, 1...3600, "--max-clip", unit: " seconds")
        try OptionRange.check(clipQuality, 1...100, "--clip-quality")
        if let clipMaxSize, InputOptions.parseSize(clipMaxSize) == nil {
            throw ValidationError("--clip-max-size must be WxH, each side 1 to 16384 (got '\(clipMaxSize)').")
        }
    }

    /// A clip output writing into `dir` (created, and checked writable, now rather than at the
    /// first face), its files named `<prefix>-<time>-clip.avi`.
    package func makeOutput(prefix: String) throws -> CaptureClipOutput {
        guard let dir else { throw CLIError.message("no clip folder was given") }
        let folder = URL(fileURLWithPath: dir, isDirectory: true)
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw CLIError.message("Cannot create the clip folder \(dir): \(error.localizedDescription)")
        }
        guard access(folder.path, W_OK | X_OK) == 0 else {
            throw CLIError.message("Cannot write clips to \(dir): \(AtomicFile.advice(for: errno, folder: dir)).")
        }
        let output = CaptureClipOutput(folder: folder)
        output.namePrefix = prefix
        output.preRoll = MediaTime(seconds: preRoll)
        output.postRoll = MediaTime(seconds: postRoll)
        output.maxClipDuration = MediaTime(seconds: maxClip)
        output.jpegQuality = clipQuality
        output.maximumFrameSize = clipMaxSize.flatMap(InputOptions.parseSize)
        return output
    }
}

/// Prints each finished clip as a `clip` event (and a clip that failed as an `error`), and
/// counts them.
///
/// Threading: the clip output calls it on its delegate queue; the counters from any thread.
package final class ClipAnnouncer: CaptureClipOutputDelegate {
    package let printer: EventPrinter
    private let counts = Mutex((written: 0, failed: 0))

    package init(printer: EventPrinter) {
        self.printer = printer
    }

    /// Clips with frames written so far, and clips that failed.
    package var writtenCount: Int { counts.withLock { $0.written } }
    package var failedCount: Int { counts.withLock { $0.failed } }

    package func clipOutput(_ output: CaptureClipOutput, didFinishClip clip: CaptureClip, error: CaptureError?) {
        if clip.frameCount > 0 {
            counts.withLock { $0.written += 1 }
            let event = ClipEvent(clip)
            printer.emit(
                event, wall: clip.lastFrameDate,
                text: "\(printer.timeText(clip.firstFrameTime))  clip \(clip.url.path)  \(String(format: "%.1f", event.duration)) s, \(clip.frameCount) frames"
                    + (clip.faceIDs.isEmpty ? "" : "  faces \(clip.faceIDs.map(String.init).joined(separator: ","))"))
        }
        if let error {
            counts.withLock { $0.failed += 1 }
            let text = clip.frameCount > 0
                ? "the clip \(clip.url.path) ended early: \(error.message); it plays up to its last fragment"
                : "no clip could be written: \(error.message)"
            printer.emit(ErrorEvent(code: "clipFailed", message: text), text: "error: \(text)")
        }
    }
}

/// Prints what retention removed as `retention` events, and a camera that cannot make room
/// as an `error` (`cannotMakeRoom`), for `watch` and `record`.
///
/// Threading: called on the retention keeper's thread.
package struct PrintingRetentionReporter: RetentionReporter {
    package let printer: EventPrinter

    package init(printer: EventPrinter) { self.printer = printer }

    package func removed(camera: String, kind: FileKind, reason: RetentionReason, count: Int, bytes: Int64, files: [RetentionEvent.File]) {
        printer.emit(
            RetentionEvent(kind: kind.rawValue, reason: reason.rawValue, count: count, bytes: bytes, files: files),
            text: "retention: removed \(count) \(kind.rawValue) file(s), \(bytes) bytes (\(reason.rawValue))")
    }

    package func shortOfRoom(camera: String, problem: String?) {
        guard let problem else { return }
        let text = "\(camera) cannot make room: \(problem); retention keeps trying"
        printer.emit(ErrorEvent(code: "cannotMakeRoom", message: text), text: "error: \(text)")
    }
}
