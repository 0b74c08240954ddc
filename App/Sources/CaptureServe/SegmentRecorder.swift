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
/// Threading: `start` and `finish` on the camera's thread; the delegate calls arrive on the
/// movie output's queue.
package final class SegmentRecorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    // @unchecked: `finishing`, `active` and `size` are guarded by `lock`.
    private let movie = CaptureMovieFileOutput()
    private let folder: URL
    private let camera: String
    private let printer: EventPrinter
    private let logger: Logger
    private let lock = NSLock()
    private var finishing = false
    private var active = false
    private let ended = DispatchSemaphore(value: 0)
    private let size: CaptureDevice.Dimensions

    package init(
        settings: ServeConfig.Record, camera: String, session: CaptureSession, printer: EventPrinter, input: InputOptions,
        logger: Logger
    ) throws {
        folder = URL(fileURLWithPath: settings.dir, isDirectory: true)
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw CLIError.message("cannot create the recording folder \(settings.dir): \(error.localizedDescription)")
        }
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

    package func start() throws { try startSegment() }

    private func startSegment() throws {
        let base = camera + "-" + LocalTimestamp(Date()).fileNameStamp
        guard let url = RecordingFiles.freshURL(in: folder, base: base, pathExtension: "avi") else {
            throw CLIError.message("\(folder.path) already holds \(base).avi to -\(SnapshotStore.maximumCollisionSuffix).avi")
        }
        lock.withLock { active = true }
        do { try movie.startRecording(to: url, recordingDelegate: self) } catch {
            lock.withLock { active = false }
            throw error
        }
    }

    /// Ends the current file and waits (up to 10 s) until it is complete.
    package func finish() {
        let wait = lock.withLock {
            finishing = true
            return active
        }
        guard wait else { return }
        movie.stopRecording()
        if ended.wait(timeout: .now() + 10) == .timedOut {
            logger.error("the recording did not finish within 10 s")
        }
    }

    package func fileOutput(_ output: CaptureMovieFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]) {
        printer.emit(RecordingEvent(path: fileURL.path, width: size.width, height: size.height), text: "")
    }

    package func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?
    ) {
        let error = error.map(CaptureError.delegated)
        let next = lock.withLock {
            active = false
            return !finishing && error?.code == .maximumDurationReached
        }
        if let error, !RecordingFiles.completeEndings.contains(error.code) {
            printer.emit(ErrorEvent(error), text: "")
        }
        if next {
            do { try startSegment(); return } catch {
                printer.emit(ErrorEvent(code: "recordingFailed", message: "the next recording could not start: \(ServeCamera.message(error))"), text: "")
            }
        }
        ended.signal()
    }
}
