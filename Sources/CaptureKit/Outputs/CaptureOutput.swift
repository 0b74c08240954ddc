import Synchronization

/// Something a session delivers to (`AVCaptureOutput`): video data, metadata, photos, movies.
///
/// Public but not open: the output kinds are CaptureKit's. Each subclass overrides the internal
/// hooks the session's capture thread calls.
///
/// Threading: thread-safe.
public class CaptureOutput: @unchecked Sendable {
    // @unchecked: mutable state is behind Mutexes; subclasses document their own.

    private let connectionList = Mutex<[CaptureConnection]>([])
    let owner = Mutex<ObjectIdentifier?>(nil)
    /// Set by the session holding this output: stops it with a runtime error, if it runs.
    let runtimeErrorSink = Mutex<(@Sendable (CaptureError) -> Void)?>(nil)

    init() {}

    /// The connections from the session's input to this output.
    public var connections: [CaptureConnection] { connectionList.withLock { $0 } }

    /// The first connection carrying `mediaType`, if any (`connection(with:)`).
    public func connection(with mediaType: CaptureDevice.MediaType) -> CaptureConnection? {
        connections.first { $0.mediaType == mediaType }
    }

    func setConnections(_ list: [CaptureConnection]) {
        connectionList.withLock { $0 = list }
    }

    /// Reports a failure that keeps this output from doing what it was asked while its session
    /// runs (a face model that will not load): the session stops with a `.runtimeError` event,
    /// as AVFoundation posts `AVCaptureSessionRuntimeError`. Nothing happens outside a running
    /// session; `startError()` reports the failure when it starts. Any thread.
    func reportRuntimeError(_ error: CaptureError) {
        runtimeErrorSink.withLock { $0 }?(error)
    }

    // MARK: Hooks for the session (called on the session queue or the capture thread)

    /// Why this output cannot run as configured (the session's `startRunning()` throws it), or
    /// nil. Session queue.
    func startError() -> CaptureError? { nil }

    /// The session is about to start streaming `format` from `input`. Session queue.
    func sessionWillStart(format: CaptureDevice.Format, input: CaptureDeviceInput) {}

    /// A frame for this output. Capture thread; must not block unless `canWait`.
    func receive(_ sample: SampleBuffer, from connection: CaptureConnection, canWait: Bool) {}

    /// The source skipped `count` frames before this one. Capture thread.
    func sourceSkipped(frames count: Int, before sample: SampleBuffer, connection: CaptureConnection) {}

    /// Blocks until everything received has been delivered (end of a file input). Capture thread.
    func drain() {}

    /// A format this output needs a few frames in, for a moment (a photo larger than the active
    /// format), or nil. The capture thread of a live input asks between frames; see
    /// `CaptureRunner` for the switch.
    func requestedStillFormat() -> CaptureDevice.Format? { nil }

    /// A frame in the format `requestedStillFormat()` named; other outputs never see it.
    /// Returns true once no more frames in that format are needed. Capture thread.
    func receiveStill(_ sample: SampleBuffer, format: CaptureDevice.Format, from connection: CaptureConnection) -> Bool {
        true
    }

    /// Streaming in the requested still format failed (or was given up); the session is back in
    /// its own format, or stopping. Capture thread.
    func stillFormatFailed(_ format: CaptureDevice.Format, error: CaptureError) {}

    /// The session is stopping: forget frames not yet delivered and release a capture thread
    /// blocked on a full queue. Session queue.
    func cancelPendingDeliveries() {}

    /// Streaming stopped (user stop, end of input or error). Session queue.
    func sessionDidStop() {}

    /// Blocks until no work on a frame of the stopped stream is in progress (detection,
    /// conversion, encoding, writing): the session returns from a stop only after this, so a
    /// process may `exit` right away without a thread still inside OpenCV. Called on the session
    /// queue after `sessionDidStop`. Must not wait for the calling thread itself (a delegate
    /// that stops the session from its callback).
    func waitForWorkInProgress() {}
}
