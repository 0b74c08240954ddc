import CaptureKit
import Dispatch
import Foundation

/// A video data output delegate that records what it is given: the frames (or only their
/// count), the drop reasons, optionally taking `delay` seconds per frame to play a slow
/// consumer.
///
/// Threading: the delegate methods run on the output's delegate queue; read the properties
/// and wait from any thread.
public final class FrameRecorder: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`.
    private let condition = NSCondition()
    private var _frames: [SampleBuffer] = []
    private var _drops: [FrameDropReason] = []
    private var _droppedBuffers: [SampleBuffer] = []
    private var _received = 0
    /// Seconds each delivered frame is held before returning.
    public let delay: Double
    /// Whether frames are kept; when false only counted, so no buffer (a V4L2 mmap buffer, say)
    /// stays referenced.
    public let keepsFrames: Bool

    /// A recorder that holds each frame for `delay` seconds and keeps the frames when
    /// `keepsFrames` is true.
    public init(delay: Double = 0, keepsFrames: Bool = true) {
        self.delay = delay
        self.keepsFrames = keepsFrames
    }

    /// Every frame kept so far, in order.
    public var frames: [SampleBuffer] { condition.withLock { _frames } }
    /// Why each dropped frame was dropped (its `droppedFrameReason`), in order.
    public var drops: [FrameDropReason] { condition.withLock { _drops } }
    /// The buffers handed to `didDrop`, in order (kept only when `keepsFrames`).
    public var droppedSampleBuffers: [SampleBuffer] { condition.withLock { _droppedBuffers } }
    /// Frames delivered so far, kept or not.
    public var received: Int { condition.withLock { _received } }

    /// Waits until `n` frames arrived (or `timeout` seconds passed); returns the frames kept.
    public func wait(for n: Int, timeout: Double = 10) -> [SampleBuffer] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while _received < n && condition.wait(until: deadline) {}
        return _frames
    }

    public func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        condition.withLock {
            if keepsFrames { _frames.append(sampleBuffer) }
            _received += 1
            condition.broadcast()
        }
    }

    public func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
        condition.withLock {
            guard let reason = sampleBuffer.droppedFrameReason else {
                preconditionFailure("a buffer handed to didDrop carries no droppedFrameReason")
            }
            _drops.append(reason)
            if keepsFrames { _droppedBuffers.append(sampleBuffer) }
        }
    }
}

/// A metadata output delegate that records each frame's objects and every track event.
///
/// Threading: the delegate methods run on the output's delegate queue; read the properties
/// from any thread.
public final class MetadataRecorder: CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var _frames: [[any MetadataObject]] = []
    private var _events: [MetadataEvent] = []

    /// An empty recorder.
    public init() {}

    /// The objects of each delivered frame, in order.
    public var frames: [[any MetadataObject]] { lock.withLock { _frames } }
    /// Every event emitted so far, in order.
    public var events: [MetadataEvent] { lock.withLock { _events } }

    public func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject], from connection: CaptureConnection
    ) {
        lock.withLock { _frames.append(metadataObjects) }
    }

    public func metadataOutput(
        _ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection
    ) {
        lock.withLock { _events.append(contentsOf: events) }
    }
}

/// Collects a session's events (their descriptions) in the background, for assertions on
/// what a session reported and in which order.
///
/// Threading: events arrive on a private queue; read from any thread.
public final class EventLog: @unchecked Sendable {
    // @unchecked: `events` is guarded by `lock`; `observation` is set once in init.
    private let lock = NSLock()
    private var _events: [String] = []
    private var observation: CaptureSession.EventObservation?

    /// Starts collecting `session`'s events; collection stops when the log goes away.
    public init(_ session: CaptureSession) {
        observation = session.observeEvents(on: DispatchQueue(label: "CaptureKitTesting.EventLog")) { [weak self] event in
            self?.append(event.description)
        }
    }

    private func append(_ e: String) { lock.withLock { _events.append(e) } }

    /// Events so far, after giving the stream up to `timeout` seconds to hold `count` of them.
    public func events(count: Int, timeout: Double = 5) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, lock.withLock({ _events.count }) < count { Thread.sleep(forTimeInterval: 0.01) }
        return lock.withLock { _events }
    }

    /// Events so far, after giving the stream up to `timeout` seconds to contain one starting
    /// with `last`.
    public func events(waitingFor last: String? = nil, timeout: Double = 5) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while let last, Date() < deadline, !lock.withLock({ _events.contains { $0.hasPrefix(last) } }) {
            Thread.sleep(forTimeInterval: 0.01)
        }
        return lock.withLock { _events }
    }
}

/// A photo capture delegate that records every call as "<stage>:<uniqueID>" in order, with the
/// photos and errors, so a test can check a capture's whole lifecycle.
///
/// Threading: the delegate methods run on the photo output's queue; read from any thread.
public final class PhotoEvents: CapturePhotoCaptureDelegate, @unchecked Sendable {
    // @unchecked: all state is behind `lock`; `finished` is a semaphore.
    private let lock = NSLock()
    private var _events: [String] = []
    private var _photos: [CapturePhoto] = []
    private var _photoErrors: [CaptureError?] = []
    private var _finishErrors: [Int64: CaptureError?] = [:]
    private let finished = DispatchSemaphore(value: 0)

    /// An empty recorder.
    public init() {}

    /// Every call so far, as "<stage>:<uniqueID>".
    public var events: [String] { lock.withLock { _events } }
    /// The photos delivered, in order.
    public var photos: [CapturePhoto] { lock.withLock { _photos } }
    /// The error delivered with each photo (nil when it succeeded), in order.
    public var photoErrors: [CaptureError?] { lock.withLock { _photoErrors } }
    /// The error each capture finished with, by the settings' `uniqueID`.
    public var finishErrors: [Int64: CaptureError?] { lock.withLock { _finishErrors } }

    private func add(_ s: String) { lock.withLock { _events.append(s) } }

    /// The photo output's errors are `CaptureError`s typed `Error?` (as AVFoundation types them);
    /// anything else would be recorded as `.unsupported` naming it.
    private static func captureError(_ error: any Error) -> CaptureError {
        error as? CaptureError ?? CaptureError(.unsupported, "not a CaptureError: \(error)")
    }

    public func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor r: CaptureResolvedPhotoSettings) {
        add("willBegin:\(r.uniqueID)")
    }
    public func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor r: CaptureResolvedPhotoSettings) {
        add("willCapture:\(r.uniqueID)")
    }
    public func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor r: CaptureResolvedPhotoSettings) {
        add("didCapture:\(r.uniqueID)")
    }
    public func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
        lock.withLock {
            _events.append("didFinishProcessing:\(photo.resolvedSettings.uniqueID)")
            _photos.append(photo)
            _photoErrors.append(error.map(Self.captureError))
        }
    }
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor r: CaptureResolvedPhotoSettings, error: (any Error)?
    ) {
        lock.withLock {
            _events.append("didFinishCapture:\(r.uniqueID)")
            // `.some`: a capture that finished without an error is recorded as nil, not left out.
            let finishError: CaptureError? = error.map(Self.captureError)
            _finishErrors[r.uniqueID] = .some(finishError)
        }
        finished.signal()
    }

    /// Waits for `count` captures to finish, up to 20 seconds each; false when one did not.
    public func wait(_ count: Int) -> Bool {
        (0..<count).allSatisfy { _ in finished.wait(timeout: .now() + 20) == .success }
    }

    /// The stages of one capture, in order, with the ID stripped.
    public func stages(of id: Int64) -> [String] {
        events.filter { $0.hasSuffix(":\(id)") }.map { String($0.split(separator: ":")[0]) }
    }

    /// The stages of a successful capture of `photos` photos.
    public static func lifecycle(photos: Int) -> [String] {
        ["willBegin", "willCapture", "didCapture"] + Array(repeating: "didFinishProcessing", count: photos) + ["didFinishCapture"]
    }
}

/// A movie recording delegate that records its calls ("didStart", "didFinish") and the error
/// the recording finished with.
///
/// Threading: the delegate methods run on the movie output's queue; read from any thread.
public final class RecordingEvents: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    // @unchecked: all state is behind `lock`; `finished` is a semaphore.
    private let lock = NSLock()
    private var _events: [String] = []
    private var _error: CaptureError?
    private let finished = DispatchSemaphore(value: 0)

    /// An empty recorder.
    public init() {}

    /// The calls so far, in order.
    public var events: [String] { lock.withLock { _events } }
    /// The error the recording finished with; nil while recording or when it finished cleanly.
    public var error: CaptureError? { lock.withLock { _error } }

    public func fileOutput(
        _ output: CaptureMovieFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        lock.withLock { _events.append("didStart") }
    }
    public func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?
    ) {
        lock.withLock {
            _events.append("didFinish")
            // CaptureKit's recording errors are CaptureErrors typed `Error?`, as in AVFoundation.
            _error = error.map { $0 as? CaptureError ?? CaptureError(.writeFailed, "not a CaptureError: \($0)") }
        }
        finished.signal()
    }

    /// Waits up to a minute for the recording to finish; false when it did not.
    public func wait() -> Bool { finished.wait(timeout: .now() + 60) == .success }
}
