import Dispatch
import Synchronization

/// Receives video frames and drops (`AVCaptureVideoDataOutputSampleBufferDelegate`), with
/// AVFoundation's signatures: `output` is the `CaptureVideoDataOutput` that calls (typed as
/// `CaptureOutput`, as AVFoundation types it `AVCaptureOutput`).
///
/// Both methods are called on the queue given to `setSampleBufferDelegate(_:queue:)`, in
/// capture order.
public protocol CaptureVideoDataOutputSampleBufferDelegate: AnyObject, Sendable {
    /// A frame, already converted to the output's pixel format and the connection's rotation
    /// and mirroring.
    func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection)
    /// A frame that will not be delivered; `sampleBuffer.droppedFrameReason` says why. Called
    /// once per dropped frame (optional, as in AVFoundation: the default does nothing; the
    /// output counts drops either way). A frame the source never produced (`discontinuity`)
    /// comes as a buffer without pixels (0×0), with its sequence number and estimated time.
    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection)
}

extension CaptureVideoDataOutputSampleBufferDelegate {
    public func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection) {}
}

/// Delivers every captured frame to a delegate or an AsyncSequence
/// (`AVCaptureVideoDataOutput`).
///
/// - Pixel format: `videoPixelFormat` (`.bgr` by default; `.gray`; nil for the device's native
///   format, untouched). Conversion, rotation and mirroring run on the delegate's queue, never
///   on the capture thread.
/// - `alwaysDiscardsLateVideoFrames` (default true): while the delegate is busy, only the newest
///   frame waits; each replaced frame is reported through `didDrop` (its
///   `droppedFrameReason` is `frameWasLate`) and counted. When false, up to `maximumQueuedFrames` wait in order; a file read as fast as
///   possible then waits for the consumer (no frame is lost), a live source drops with
///   `outOfBuffers`.
///
/// Threading: thread-safe; configure it before or while the session runs.
public final class CaptureVideoDataOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: mutable state is behind `config` (a Mutex) and the mailbox's own lock.

    /// Frames waiting when `alwaysDiscardsLateVideoFrames` is false.
    public let maximumQueuedFrames: Int

    private struct Config {
        var delegate: (any CaptureVideoDataOutputSampleBufferDelegate)?
        var queue: DispatchQueue?
        var pixelFormat: PixelFormat? = .bgr
        var delivered = 0
        var drops: [FrameDropReason: Int] = [:]
    }
    private let config = Mutex(Config())
    private let mailbox: DeliveryMailbox<(SampleBuffer, CaptureConnection)>
    private let converter = FrameConverter()

    /// Creates an output. `maximumQueuedFrames` bounds the queue used when late frames are kept.
    public init(maximumQueuedFrames: Int = 16) {
        self.maximumQueuedFrames = maximumQueuedFrames
        mailbox = DeliveryMailbox(capacity: maximumQueuedFrames)
        super.init()
    }

    /// Pixel format of delivered frames; nil delivers the device's native format unconverted.
    public var videoPixelFormat: PixelFormat? {
        get { config.withLock { $0.pixelFormat } }
        set { config.withLock { $0.pixelFormat = newValue } }
    }

    /// Formats `videoPixelFormat` may be set to (nil, native, is always allowed).
    public let availableVideoPixelFormats: [PixelFormat] = [.bgr, .gray, .bgra]

    /// Whether late frames are dropped (true, the default) or queued.
    public var alwaysDiscardsLateVideoFrames: Bool {
        get { mailbox.discardsLateItems }
        set { mailbox.discardsLateItems = newValue }
    }

    /// Sets the delegate and the serial queue it is called on (`setSampleBufferDelegate(_:queue:)`).
    /// The delegate is retained. Pass nil to stop deliveries.
    public func setSampleBufferDelegate(
        _ delegate: (any CaptureVideoDataOutputSampleBufferDelegate)?, queue: DispatchQueue?
    ) {
        config.withLock {
            $0.delegate = delegate
            $0.queue = delegate == nil ? nil : (queue ?? DispatchQueue(label: "cvcam.video-data-output"))
        }
    }

    /// The current delegate.
    public var sampleBufferDelegate: (any CaptureVideoDataOutputSampleBufferDelegate)? {
        config.withLock { $0.delegate }
    }

    /// Frames handed to the delegate so far.
    public var deliveredFrameCount: Int { config.withLock { $0.delivered } }
    /// Frames dropped so far, all reasons.
    public var droppedFrameCount: Int { config.withLock { $0.drops.values.reduce(0, +) } }
    /// Frames dropped so far, per reason.
    public var droppedFrameCounts: [FrameDropReason: Int] { config.withLock { $0.drops } }

    /// The frames as an AsyncSequence; installs an internal delegate (replacing any other) on its
    /// own queue. The stream ends when the session stops. Dropping follows
    /// `alwaysDiscardsLateVideoFrames`: a stream that discards keeps only the newest frame
    /// waiting, and counts the others as `frameWasLate` drops.
    public func sampleBuffers() -> AsyncStream<SampleBuffer> {
        let discards = alwaysDiscardsLateVideoFrames
        let (stream, continuation) = AsyncStream.makeStream(
            of: SampleBuffer.self, bufferingPolicy: discards ? .bufferingNewest(1) : .unbounded)
        let adapter = StreamAdapter(continuation: continuation)
        setSampleBufferDelegate(adapter, queue: DispatchQueue(label: "cvcam.video-data-output.stream"))
        continuation.onTermination = { [weak self, weak adapter] _ in
            guard let self, let adapter, self.sampleBufferDelegate === adapter else { return }
            self.setSampleBufferDelegate(nil, queue: nil)
        }
        return stream
    }

    private final class StreamAdapter: CaptureVideoDataOutputSampleBufferDelegate {
        let continuation: AsyncStream<SampleBuffer>.Continuation
        init(continuation: AsyncStream<SampleBuffer>.Continuation) { self.continuation = continuation }
        func captureOutput(_ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection) {
            if case .dropped = continuation.yield(sampleBuffer) {
                (output as? CaptureVideoDataOutput)?.count(drop: .frameWasLate)
            }
        }
        func finish() { continuation.finish() }
    }

    // MARK: Session hooks

    override func receive(_ sample: SampleBuffer, from connection: CaptureConnection, canWait: Bool) {
        guard let queue = config.withLock({ $0.queue }) else { return }
        let outcome = mailbox.offer((sample, connection), canWait: canWait, queue: queue) { [self] item in
            deliver(item.0, connection: item.1)
        }
        if case .dropped(let item, let reason) = outcome {
            report(drop: reason, sample: item.0, connection: item.1, queue: queue)
        }
    }

    override func sourceSkipped(frames count: Int, before sample: SampleBuffer, connection: CaptureConnection) {
        guard let queue = config.withLock({ $0.queue }) else { return }
        for skipped in SampleBuffer.skipped(count, before: sample) {
            report(drop: .discontinuity, sample: skipped, connection: connection, queue: queue)
        }
    }

    override func drain() { mailbox.drain() }

    override func cancelPendingDeliveries() {
        let (pending, queue) = (mailbox.cancelPending(), config.withLock { $0.queue })
        if let queue {
            for item in pending { report(drop: .frameWasLate, sample: item.0, connection: item.1, queue: queue) }
        }
    }

    /// The frame being converted and handed to the delegate, if any (frames not started were
    /// taken back by `cancelPendingDeliveries`).
    override func waitForWorkInProgress() { mailbox.waitForHandler() }

    override func sessionDidStop() {
        let queue = config.withLock { $0.queue }
        if let adapter = sampleBufferDelegate as? StreamAdapter {
            // Finish after everything already queued has been yielded.
            queue?.async { adapter.finish() }
        }
    }

    fileprivate func count(drop reason: FrameDropReason) {
        config.withLock { $0.drops[reason, default: 0] += 1 }
    }

    private func report(drop reason: FrameDropReason, sample: SampleBuffer, connection: CaptureConnection, queue: DispatchQueue) {
        count(drop: reason)
        let dropped = sample.dropped(reason)
        queue.async { [self] in
            sampleBufferDelegate?.captureOutput(self, didDrop: dropped, from: connection)
        }
    }

    private func deliver(_ sample: SampleBuffer, connection: CaptureConnection) {
        let (delegate, format) = config.withLock { ($0.delegate, $0.pixelFormat) }
        guard let delegate else { return }
        let transform = connection.transform
        let converted: SampleBuffer
        do {
            converted = try converter.convert(
                sample, to: format, rotation: transform.rotation, mirrored: transform.mirrored)
        } catch {
            count(drop: .outOfBuffers)
            delegate.captureOutput(self, didDrop: sample.dropped(.outOfBuffers), from: connection)
            return
        }
        config.withLock { $0.delivered += 1 }
        delegate.captureOutput(self, didOutput: converted, from: connection)
    }
}
