import CaptureKit
import Dispatch
import Foundation

/// A video data output delegate that records what it is given: the frames, the drop reasons,
/// optionally taking `delay` seconds per frame to play a slow consumer.
///
/// Threading: the delegate methods run on the output's delegate queue; read the properties
/// from any thread.
public final class FrameRecorder: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    private let lock = NSLock()
    private var _frames: [SampleBuffer] = []
    private var _drops: [FrameDropReason] = []
    /// Seconds each delivered frame is held before returning.
    public let delay: Double

    /// A recorder that holds each frame for `delay` seconds.
    public init(delay: Double = 0) { self.delay = delay }

    /// Every frame delivered so far, in order.
    public var frames: [SampleBuffer] { lock.withLock { _frames } }
    /// Why each dropped frame was dropped, in order.
    public var drops: [FrameDropReason] { lock.withLock { _drops } }

    public func captureOutput(
        _ output: CaptureVideoDataOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        lock.withLock { _frames.append(sampleBuffer) }
    }

    public func captureOutput(
        _ output: CaptureVideoDataOutput, didDrop sampleBuffer: SampleBuffer?, reason: FrameDropReason,
        from connection: CaptureConnection
    ) {
        lock.withLock { _drops.append(reason) }
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
