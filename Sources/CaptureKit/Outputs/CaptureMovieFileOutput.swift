import Dispatch
import Foundation
import Logging
import Synchronization

/// AVFoundation's `AVCaptureFileOutput`, the type its recording delegate is called with:
/// CaptureKit has one file output, so this names it.
public typealias CaptureFileOutput = CaptureMovieFileOutput

/// Receives the start and end of recordings (`AVCaptureFileOutputRecordingDelegate`), with
/// AVFoundation's signatures (`CaptureFileOutput`, `error: Error?`).
///
/// Called on the movie output's serial delegate queue. `didFinishRecordingTo` is called exactly
/// once for every `startRecording` (also when the file could not be created); `didStartRecordingTo`
/// comes before it when the first frame was written.
public protocol CaptureFileOutputRecordingDelegate: AnyObject, Sendable {
    /// The first frame is in the file.
    func fileOutput(_ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection])
    /// The recording ended. `error` is nil after `stopRecording()`; otherwise it is a
    /// `CaptureError` saying why: `.maximumDurationReached`, `.maximumFileSizeReached`,
    /// `.diskSpaceLimitReached` and `.sessionWasStopped` leave a complete file; `.writeFailed`
    /// leaves a file that plays up to its last fragment, or no file when not one frame could be
    /// written (it could not be created, or the disk was full): then `didStartRecordingTo` was
    /// not called either.
    func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?)
}

extension CaptureFileOutputRecordingDelegate {
    public func fileOutput(_ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]) {}
}

/// Records the session's video to a movie file (`AVCaptureMovieFileOutput`): Motion-JPEG in AVI,
/// crash-safe up to the last fragment (see `MJPEGAVIWriter` for the measurements and
/// trade-offs behind the format).
///
/// Every `movieFragmentInterval` of recorded time the file's headers are brought up to date
/// and the file is fsynced: a recorder killed at any moment (SIGKILL, power cut) leaves a
/// playable file with at least every frame up to the last fragment. Limits
/// (`maxRecordedDuration`, `maxRecordedFileSize`, `minFreeDiskSpaceLimit`) end the recording
/// with a complete file and name the reason in `didFinishRecordingTo`.
///
/// Frames are converted (the connection's rotation and mirroring applied) and JPEG-encoded on
/// the output's writer queue, never on the capture thread. When the writer falls behind a live
/// camera, frames are dropped and counted (`droppedFrameCount`); a file input read as fast as
/// possible waits instead.
///
/// Threading: thread-safe. Configure limits before `startRecording`; changes apply to the next
/// recording.
public final class CaptureMovieFileOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: mutable state is behind `state` (a Mutex); the writer is touched only on
    // `writerQueue`.

    private struct Settings {
        var movieFragmentInterval = MediaTime(value: 10, timescale: 1)
        var maxRecordedDuration: MediaTime?
        var maxRecordedFileSize: Int64?
        var minFreeDiskSpaceLimit: Int64 = 0
        var jpegQuality = 85
    }
    private struct Recording {
        var url: URL
        var delegate: any CaptureFileOutputRecordingDelegate
        var settings: Settings
        var frames = 0
        var duration = MediaTime.zero
        var fileSize: Int64 = 0
    }
    private struct State {
        var settings = Settings()
        var recording: Recording?
        var drops = 0
    }
    private let state = Mutex(State())
    private let writerQueue = DispatchQueue(label: "cvcam.movie-output.writer")
    private let delegateQueue = DispatchQueue(label: "cvcam.movie-output.delegate")
    private let mailbox = DeliveryMailbox<(SampleBuffer, CaptureConnection)>(capacity: 32)
    private let converter = FrameConverter()
    let fileCalls: any FileSystemCalls
    /// Writer-queue only.
    private var writer: MJPEGAVIWriter?
    private var warnedAboutScaling = false
    private let logger = Logger(label: "cvcam.movie")
    private var lastFragmentDuration = MediaTime.zero

    /// Creates a movie output.
    public override init() {
        fileCalls = SystemFileCalls()
        super.init()
        mailbox.discardsLateItems = false
    }

    init(fileCalls: any FileSystemCalls) {
        self.fileCalls = fileCalls
        super.init()
        mailbox.discardsLateItems = false
    }

    /// Recorded time between fragments (default 10 s); must be positive. Shorter intervals lose
    /// less on a crash and cost one fsync each.
    public var movieFragmentInterval: MediaTime {
        get { state.withLock { $0.settings.movieFragmentInterval } }
        set { state.withLock { $0.settings.movieFragmentInterval = newValue.value > 0 ? newValue : MediaTime(value: 1, timescale: 1) } }
    }
    /// Stop after this much recorded time (`.maximumDurationReached`); nil: no limit.
    public var maxRecordedDuration: MediaTime? {
        get { state.withLock { $0.settings.maxRecordedDuration } }
        set { state.withLock { $0.settings.maxRecordedDuration = newValue } }
    }
    /// Stop before the file grows past this many bytes (`.maximumFileSizeReached`); nil: the
    /// format's own limit (about 2 GiB).
    public var maxRecordedFileSize: Int64? {
        get { state.withLock { $0.settings.maxRecordedFileSize } }
        set { state.withLock { $0.settings.maxRecordedFileSize = newValue } }
    }
    /// Stop when the disk has fewer free bytes than this (`.diskSpaceLimitReached`); 0: until full.
    public var minFreeDiskSpaceLimit: Int64 {
        get { state.withLock { $0.settings.minFreeDiskSpaceLimit } }
        set { state.withLock { $0.settings.minFreeDiskSpaceLimit = max(0, newValue) } }
    }
    /// JPEG quality of each frame, 0…100 (default 85).
    public var jpegQuality: Int {
        get { state.withLock { $0.settings.jpegQuality } }
        set { state.withLock { $0.settings.jpegQuality = max(0, min(100, newValue)) } }
    }

    /// Whether a recording is in progress (`isRecording`).
    public var isRecording: Bool { state.withLock { $0.recording != nil } }
    /// The file being recorded (`outputFileURL`).
    public var outputFileURL: URL? { state.withLock { $0.recording?.url } }
    /// Time recorded so far in the current recording (frames × frame duration).
    public var recordedDuration: MediaTime { state.withLock { $0.recording?.duration ?? .zero } }
    /// Bytes in the current recording's file so far.
    public var recordedFileSize: Int64 { state.withLock { $0.recording?.fileSize ?? 0 } }
    /// Frames the writer could not keep up with, over the output's life.
    public var droppedFrameCount: Int { state.withLock { $0.drops } }

    /// Starts recording to `url`, which must not exist, from the next frame
    /// (`startRecording(to:recordingDelegate:)`). The delegate is retained until
    /// `didFinishRecordingTo`.
    ///
    /// - Throws: `.recordingInProgress` while another recording runs. Failures to create the
    ///   file arrive through `didFinishRecordingTo`.
    public func startRecording(to url: URL, recordingDelegate delegate: any CaptureFileOutputRecordingDelegate) throws(CaptureError) {
        try state.withLock { (s: inout State) throws(CaptureError) in
            guard s.recording == nil else {
                throw CaptureError(.recordingInProgress, "already recording to \(s.recording!.url.path); call stopRecording() first")
            }
            s.recording = Recording(url: url, delegate: delegate, settings: s.settings)
        }
    }

    /// Ends the recording after the frames already handed to the writer
    /// (`stopRecording()`); `didFinishRecordingTo` follows with no error. No effect when not recording.
    public func stopRecording() {
        writerQueue.async { [self] in end(error: nil) }
    }

    // MARK: Session hooks

    override func receive(_ sample: SampleBuffer, from connection: CaptureConnection, canWait: Bool) {
        guard state.withLock({ $0.recording != nil }) else { return }
        let outcome = mailbox.offer((sample, connection), canWait: canWait, queue: writerQueue) { [self] item in
            write(item.0, connection: item.1)
        }
        if case .dropped = outcome { state.withLock { $0.drops += 1 } }
    }

    override func drain() { mailbox.drain() }

    override func cancelPendingDeliveries() {
        let dropped = mailbox.cancelPending().count
        state.withLock { $0.drops += dropped }
    }

    override func sessionDidStop() {
        writerQueue.async { [self] in
            end(error: CaptureError(.sessionWasStopped, "the session stopped, so the recording ended; the file is complete"))
        }
    }

    /// Frames being encoded and the end of the file `sessionDidStop` asked for: both on the
    /// private writer queue, which runs no delegate code, so waiting for it cannot wait for the caller.
    override func waitForWorkInProgress() { writerQueue.sync {} }

    // MARK: Writer queue

    private func write(_ sample: SampleBuffer, connection: CaptureConnection) {
        guard let recording = state.withLock({ $0.recording }) else { return }
        let settings = recording.settings
        do throws(CaptureError) {
            let t = connection.transform
            var frame = try converter.convert(sample, to: .bgr, rotation: t.rotation, mirrored: t.mirrored).pixelBuffer
            // An AVI has one frame size, the first frame's: later frames of another size (a folder
            // of mixed images) are scaled to it, and the first such frame is logged.
            if let writer, frame.width != writer.width || frame.height != writer.height {
                if !warnedAboutScaling {
                    warnedAboutScaling = true
                    logger.warning(
                        "frame \(sample.sequenceNumber) is \(frame.width)x\(frame.height): scaling frames to the movie's \(writer.width)x\(writer.height) (its first frame's size)")
                }
                let scaled = try PixelBuffer(width: writer.width, height: writer.height, pixelFormat: .bgr)
                try Imaging.resize(frame, into: scaled, "scaling a frame to the movie's size failed")
                frame = scaled
            }
            let jpeg = try PhotoEncoder.encode(
                frame, codec: .jpeg(quality: settings.jpegQuality), rotation: 0, mirrored: false, device: nil,
                captureDate: Date(), annotation: nil, converter: converter)
            let limit = min(settings.maxRecordedFileSize ?? MJPEGAVIWriter.maximumFileSize, MJPEGAVIWriter.maximumFileSize)
            if writer == nil {
                writer = try MJPEGAVIWriter(
                    path: recording.url.path, width: frame.width, height: frame.height, frameDuration: sample.duration,
                    calls: fileCalls)
                lastFragmentDuration = .zero
            }
            guard let writer else { return }
            // Frame chunk + its index entry must fit under the size limit.
            if writer.fileSize + Int64(jpeg.count) + 8 + 16 * Int64(writer.frameCount + 1) + 1 > limit {
                return end(error: CaptureError(
                    .maximumFileSizeReached,
                    "the recording reached its file size limit of \(limit) bytes; the file is complete"))
            }
            if settings.minFreeDiskSpaceLimit > 0,
                case .success(let free) = fileCalls.availableBytes(at: recording.url.deletingLastPathComponent().path),
                free - Int64(jpeg.count) < settings.minFreeDiskSpaceLimit
            {
                return end(error: CaptureError(
                    .diskSpaceLimitReached,
                    "free disk space fell to \(free) bytes, below minFreeDiskSpaceLimit \(settings.minFreeDiskSpaceLimit); the file is complete"))
            }
            try writer.append(jpeg: jpeg)
            if writer.frameCount == 1 {
                // Only now is the first frame in the file (the delegate's contract).
                let connections = self.connections
                delegateQueue.async { [self] in
                    recording.delegate.fileOutput(self, didStartRecordingTo: recording.url, from: connections)
                }
            }
            let duration = sample.duration.multiplied(by: Int64(writer.frameCount))
            state.withLock {
                $0.recording?.frames = writer.frameCount
                $0.recording?.duration = duration
                $0.recording?.fileSize = writer.fileSize
            }
            if (duration.seconds - lastFragmentDuration.seconds) >= settings.movieFragmentInterval.seconds - 1e-9 {
                try writer.fragment()
                lastFragmentDuration = duration
            }
            if let max = settings.maxRecordedDuration, duration >= max {
                end(error: CaptureError(
                    .maximumDurationReached, "the recording reached maxRecordedDuration \(max.seconds) s; the file is complete"))
            }
        } catch {
            end(error: error)
        }
    }

    /// Finishes the file (if any) and tells the delegate. Writer queue.
    private func end(error: CaptureError?) {
        guard let recording = state.withLock({ s -> Recording? in
            let r = s.recording
            s.recording = nil
            return r
        }) else { return }
        var finalError = error
        if let writer, writer.frameCount == 0, error?.code == .writeFailed {
            // Not one frame made it into the file (a full disk): nothing to keep.
            writer.discard()
        } else if let writer {
            do throws(CaptureError) {
                try writer.finish()
            } catch let e {
                if finalError == nil || finalError?.code != .writeFailed { finalError = e }
            }
        }
        writer = nil
        let connections = self.connections
        let reported = finalError
        delegateQueue.async { [self] in
            recording.delegate.fileOutput(self, didFinishRecordingTo: recording.url, from: connections, error: reported)
        }
    }
}
