import CaptureJobs
import CaptureKit
import CapturePreview
import Foundation
import Logging

/// A camera's continuous recording for `cvcam serve`: Motion-JPEG AVI files of `segment`
/// seconds each (`CaptureMovieFileOutput` with `maxRecordedDuration`), one after another, named
/// `<camera>-<yyyyMMdd-HHmmss.mmm>.avi` in the folder; a name that is taken gets -2, -3, …, so no
/// file is ever replaced. Each file is playable up to its last fragment if the daemon is killed.
///
/// A recording that fails (a full disk, a folder gone read-only) is tried again after 1 s,
/// doubling to `maximumRetryDelay`, until a file takes frames again: every failure and the
/// recovery are logged (stderr, the journal) and published as events (`error` with code
/// `recordingFailed`, then `recording` with `resumedAfterFailures`). A failed attempt leaves no
/// file behind when not one frame could be written.
///
/// Threading: `start` and `finish` on the camera's thread; the delegate calls arrive on the
/// movie output's queue, retries on the recorder's own queue.
package final class SegmentRecorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    // @unchecked: `finishing`, `active`, `failures` and `retry` are guarded by `lock`; the rest is immutable.
    private let movie = CaptureMovieFileOutput()
    private let folder: URL
    private let camera: String
    private let printer: EventPrinter
    private let logger: Logger
    private let lock = NSLock()
    private var finishing = false
    private var active = false
    /// Failed attempts since the last file that took frames.
    private var failures = 0
    private var retry: DispatchWorkItem?
    private let retryQueue = DispatchQueue(label: "cvcam.serve.recording-retry")
    private let ended = DispatchSemaphore(value: 0)
    private let size: CaptureDevice.Dimensions

    /// The first wait after a failure; it doubles with each failure up to `maximumRetryDelay`.
    package static let firstRetryDelay = 1.0
    package static let maximumRetryDelay = 30.0

    package init(
        settings: ServeConfig.Record, camera: String, session: CaptureSession, printer: EventPrinter, input: InputOptions,
        logger: Logger
    ) throws {
        folder = URL(fileURLWithPath: settings.dir, isDirectory: true)
        try LocalFiles.makeFolder(settings.dir, what: "the recording folder")
        self.camera = camera
        self.printer = printer
        self.logger = logger
        movie.maxRecordedDuration = MediaTime(seconds: settings.segment)
        movie.jpegQuality = settings.quality
        try session.addOutput(movie)
        input.orient(movie)
        let format = (session.inputs.first as? CaptureDeviceInput)?.device.activeFormat.dimensions ?? .init(width: 0, height: 0)
        size = input.oriented(format)
    }

    /// Starts the first file (a failure is retried like any other).
    package func start() { startSegment() }

    /// The delay before attempt `failures + 1`.
    package static func retryDelay(afterFailures failures: Int) -> Double {
        min(firstRetryDelay * pow(2, Double(max(0, failures - 1))), maximumRetryDelay)
    }

    /// Starts the next file, unless finishing. The movie output's recording begins under the
    /// lock, so `finish` either sees it active (and stops it) or stops it from starting.
    private func startSegment() {
        let base = camera + "-" + LocalTimestamp(Date()).fileNameStamp
        guard let url = RecordingFiles.freshURL(in: folder, base: base, pathExtension: "avi") else {
            return failed("\(folder.path) already holds \(base).avi to -\(SnapshotStore.maximumCollisionSuffix).avi")
        }
        let problem: CaptureError? = lock.withLock {
            guard !finishing else { return nil }
            do throws(CaptureError) {
                try movie.startRecording(to: url, recordingDelegate: self)
                active = true
                return nil
            } catch {
                return error
            }
        }
        if let problem { failed(problem.message) }
    }

    /// Says why recording stopped and tries again after the backoff delay.
    private func failed(_ message: String) {
        let delay: Double? = lock.withLock {
            guard !finishing else { return nil }
            failures += 1
            let delay = Self.retryDelay(afterFailures: failures)
            let work = DispatchWorkItem { [weak self] in self?.startSegment() }
            retry = work
            retryQueue.asyncAfter(deadline: .now() + delay, execute: work)
            return delay
        }
        guard let delay else { return }
        let text = "recording failed: \(message); trying again in \(delay) s"
        logger.error("\(TerminalText.escaped(text))")
        printer.emit(ErrorEvent(code: "recordingFailed", message: text), text: "")
    }

    /// Ends the current file and waits (up to 10 s) until it is complete; a retry waiting to
    /// start is cancelled.
    package func finish() {
        let wait = lock.withLock {
            finishing = true
            retry?.cancel()
            retry = nil
            return active
        }
        guard wait else { return }
        movie.stopRecording()
        if ended.wait(timeout: .now() + 10) == .timedOut {
            logger.error("the recording did not finish within 10 s")
        }
    }

    package func fileOutput(_ output: CaptureMovieFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]) {
        let resumed: Int? = lock.withLock {
            defer { failures = 0 }
            return failures > 0 ? failures : nil
        }
        if let resumed {
            // A warning, as the errors it ends: both show in the daemon's default log.
            logger.warning("recording resumed after \(resumed) failed attempt(s): \(TerminalText.escaped(fileURL.path))")
        }
        printer.emit(
            RecordingEvent(path: fileURL.path, width: size.width, height: size.height, resumedAfterFailures: resumed), text: "")
    }

    package func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?
    ) {
        let error = error.map(CaptureError.delegated)
        let stopping = lock.withLock {
            active = false
            return finishing
        }
        if stopping {
            if let error, !RecordingFiles.completeEndings.contains(error.code) { failedWhileStopping(error) }
            ended.signal()
            return
        }
        switch error?.code {
        case .maximumDurationReached?, .maximumFileSizeReached?:
            // A segment that reached its length: the next one follows at once.
            startSegment()
        case nil, .sessionWasStopped?:
            // The session stopped (the camera failed): the camera starts a new recorder with its next session.
            break
        case .some:
            failed(error?.message ?? "")
        }
    }

    /// A failure while the daemon stops: said, not retried.
    private func failedWhileStopping(_ error: CaptureError) {
        logger.error("recording failed: \(TerminalText.escaped(error.message))")
        printer.emit(ErrorEvent(code: "recordingFailed", message: error.message), text: "")
    }
}
