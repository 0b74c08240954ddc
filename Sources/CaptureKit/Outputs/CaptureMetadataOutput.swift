import Dispatch
import Foundation
import Logging
import Synchronization

/// Receives metadata (`AVCaptureMetadataOutputObjectsDelegate`), on the queue given to
/// `setMetadataObjectsDelegate(_:queue:)`, in capture order.
public protocol CaptureMetadataOutputObjectsDelegate: AnyObject, Sendable {
    /// The objects of one frame: every face in it, and the codes due for delivery (a code is
    /// delivered when it appears and again every `codeRepeatInterval` while it stays). Called
    /// for each frame with objects, and once with an empty array when they are all gone.
    func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject],
        from connection: CaptureConnection)
    /// Track events of one frame (face enter/update/leave, code appear/repeat), in order.
    func metadataOutput(
        _ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection)
}

extension CaptureMetadataOutputObjectsDelegate {
    public func metadataOutput(
        _ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection
    ) {}
}

/// Finds faces and machine-readable codes in the session's frames (`AVCaptureMetadataOutput`).
///
/// - `availableMetadataObjectTypes`: what the loaded detectors allow (`.face` when a face
///   model loaded; the code types ZBar supports).
/// - `metadataObjectTypes`: what to look for; empty by default (nothing is detected). Setting a
///   type that is not available throws `.unsupported`.
/// - `rectOfInterest`: device space (0…1, top-left origin, unrotated); detectors look only
///   inside it and objects outside it are not reported.
///
/// Detection runs on the output's own two threads (`cvcam.detect`, codes and delivery, and
/// `cvcam.faces`), never on the capture thread; faces and codes run in parallel on two cores
/// when both are asked for. A frame that arrives while the previous
/// one is still being analysed waits in a one-frame slot; a newer frame replaces it and the
/// replaced frame is counted in `skippedFrameCount` (late frames are skipped, not queued). For
/// a file read as fast as possible, frames wait instead and none is skipped. Results carry the
/// timestamp of the frame they came from. For an image folder every image is its own scene:
/// each face enters and leaves within its image, and each code appears once per image.
///
/// Threading: thread-safe.
public final class CaptureMetadataOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: configuration and counters are behind `config` (a Mutex); the stages are used
    // only on `detectionThread` (faces also on `faceThread`, one frame at a time).

    private struct Config {
        var types: [MetadataObjectType] = []
        var rectOfInterest = CGRect(x: 0, y: 0, width: 1, height: 1)
        var faceUpdateInterval = 1.0
        var faceScanInterval = 0.1
        var codeRepeatInterval = 2.0
        var delegate: (any CaptureMetadataOutputObjectsDelegate)?
        var queue: DispatchQueue?
        var processed = 0
        var skipped = 0
        var sourceSkipped = 0
        var faceSeconds = 0.0
        var codeSeconds = 0.0
        var lastDeliveryWasEmpty = true
        var lastError: CaptureError?
        var framesAreIndependent = false
    }

    private let config = Mutex(Config())
    private let faceStage: (any FaceMetadataStage)?
    private let codeStage: (any CodeMetadataStage)?
    private let mailbox = DeliveryMailbox<(SampleBuffer, CaptureConnection)>(capacity: 4)
    // Threads of their own rather than dispatch queues: the detection job blocks while the face
    // job runs, and libdispatch grows its pool when all its threads are busy (see WorkerThread).
    private let detectionThread = WorkerThread(name: "cvcam.detect")
    private let faceThread = WorkerThread(name: "cvcam.faces")
    private let logger = Logger(label: "cvcam.metadata")

    /// Creates an output with the default detectors: YuNet faces with
    /// `FaceDetector.Configuration.realTime` (frames scaled to a 640 px long side, so faces and
    /// QR on a 720p30 camera are analysed at its frame rate on two cores; faces from about
    /// 32 px tall at 720p) and codes from `CodeDetector`.
    public override init() {
        faceStage = DefaultFaceStage.makeOrNil(.realTime)
        codeStage = DefaultCodeStage.makeOrNil()
        super.init()
    }

    /// Creates an output whose face detector uses `faceDetection`: `.standard` (frames up to
    /// 2048 px analysed at their own size: smaller faces, about 4× the CPU of `.realTime` at
    /// 720p; the right choice for photos) or `.tiled` (distant faces in 1080p). Codes as in `init()`.
    public convenience init(faceDetection: FaceDetector.Configuration) {
        self.init(faceStage: DefaultFaceStage.makeOrNil(faceDetection), codeStage: DefaultCodeStage.makeOrNil())
    }

    /// Creates an output with the given stages (nil: that kind of metadata is unavailable).
    public init(faceStage: (any FaceMetadataStage)?, codeStage: (any CodeMetadataStage)?) {
        self.faceStage = faceStage
        self.codeStage = codeStage
        super.init()
    }

    /// What can be detected with the loaded detectors.
    public var availableMetadataObjectTypes: [MetadataObjectType] {
        ((faceStage?.isAvailable ?? false) ? [.face] : []) + (codeStage?.availableTypes ?? [])
    }

    /// What is being looked for (empty by default).
    public var metadataObjectTypes: [MetadataObjectType] { config.withLock { $0.types } }

    /// Chooses what to look for.
    ///
    /// - Throws: `.unsupported` naming the types that are not in `availableMetadataObjectTypes`.
    public func setMetadataObjectTypes(_ types: [MetadataObjectType]) throws(CaptureError) {
        let available = availableMetadataObjectTypes
        let missing = types.filter { !available.contains($0) }
        guard missing.isEmpty else {
            throw CaptureError(
                .unsupported,
                "metadata types \(missing.map(\.rawValue).joined(separator: ", ")) are not available; available: \(available.map(\.rawValue).joined(separator: ", "))"
            )
        }
        config.withLock { $0.types = types }
    }

    /// The area detectors look in, in device space (default: the whole frame).
    public var rectOfInterest: CGRect {
        get { config.withLock { $0.rectOfInterest } }
        set {
            let clipped = newValue.standardized.intersection(CGRect(x: 0, y: 0, width: 1, height: 1))
            config.withLock { $0.rectOfInterest = clipped.isNull ? .zero : clipped }
        }
    }

    /// The least time, in seconds of frame time, between two `faceUpdated` events of one face
    /// (default 1; 0 sends one per frame).
    public var faceUpdateInterval: Double {
        get { config.withLock { $0.faceUpdateInterval } }
        set { config.withLock { $0.faceUpdateInterval = max(0, newValue) } }
    }

    /// How often, in seconds of frame time, a search of the whole frame (or region of
    /// interest) for new faces begins (default 0.1; 0 searches every frame whole). See
    /// `DefaultFaceStage`: on video at 25 fps or more each search is spread over three frames
    /// (a coarse pass, then each half), and tracked faces are followed in every frame by a
    /// 128×128 search near each, so they are reported in every frame and a face that enters is
    /// found within this interval plus three frames. On a 720p30 clip with one face and one
    /// code (`Tools/bench`), latency p95 went from 59–64 ms with every frame searched whole to
    /// 33–44 ms, and skipped frames from 2–6 of 300 to 0–1. Frames of an image folder are
    /// always searched whole.
    public var faceScanInterval: Double {
        get { config.withLock { $0.faceScanInterval } }
        set { config.withLock { $0.faceScanInterval = max(0, newValue) } }
    }

    /// How long a code must stay in view before it is delivered again, in seconds of frame time
    /// (default 2, ZBar's fixed value; `.infinity`: once per appearance only).
    public var codeRepeatInterval: Double {
        get { config.withLock { $0.codeRepeatInterval } }
        set { config.withLock { $0.codeRepeatInterval = max(0, newValue) } }
    }

    /// Sets the delegate and the serial queue it is called on. The delegate is retained.
    public func setMetadataObjectsDelegate(_ delegate: (any CaptureMetadataOutputObjectsDelegate)?, queue: DispatchQueue?) {
        config.withLock {
            $0.delegate = delegate
            $0.queue = delegate == nil ? nil : (queue ?? DispatchQueue(label: "cvcam.metadata.delegate"))
        }
    }

    /// The current delegate.
    public var metadataObjectsDelegate: (any CaptureMetadataOutputObjectsDelegate)? { config.withLock { $0.delegate } }

    /// Frames analysed so far.
    public var processedFrameCount: Int { config.withLock { $0.processed } }
    /// Frames skipped because analysis was still busy with an earlier one.
    public var skippedFrameCount: Int { config.withLock { $0.skipped } }
    /// Frames the source never produced (lost by the driver, or not streamed while a photo
    /// switched the camera to a still format): they were not analysed and are not in
    /// `skippedFrameCount`.
    public var sourceSkippedFrameCount: Int { config.withLock { $0.sourceSkipped } }
    /// Total seconds spent detecting faces and decoding codes (for per-stage breakdowns).
    public var stageSeconds: (faces: Double, codes: Double) { config.withLock { ($0.faceSeconds, $0.codeSeconds) } }
    /// The last detector error (detection goes on with the next frame).
    public var lastError: CaptureError? { config.withLock { $0.lastError } }

    /// Blocks until every frame received so far has been analysed and its results handed to the
    /// delegate (call after the session stopped, before reading the final results).
    public func waitUntilIdle() {
        detectionThread.waitUntilIdle()
        faceThread.waitUntilIdle()
        detectionThread.waitUntilIdle()
        config.withLock { $0.queue }?.sync {}
    }

    /// Events as an AsyncSequence; installs an internal delegate (replacing any other). Ends
    /// when the session stops.
    public func metadataEvents() -> AsyncStream<MetadataEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: MetadataEvent.self, bufferingPolicy: .unbounded)
        let adapter = EventStreamAdapter(continuation: continuation)
        setMetadataObjectsDelegate(adapter, queue: DispatchQueue(label: "cvcam.metadata.stream"))
        return stream
    }

    private final class EventStreamAdapter: CaptureMetadataOutputObjectsDelegate {
        let continuation: AsyncStream<MetadataEvent>.Continuation
        init(continuation: AsyncStream<MetadataEvent>.Continuation) { self.continuation = continuation }
        func metadataOutput(
            _ output: CaptureMetadataOutput, didOutput metadataObjects: [any MetadataObject],
            from connection: CaptureConnection
        ) {}
        func metadataOutput(
            _ output: CaptureMetadataOutput, didEmit events: [MetadataEvent], from connection: CaptureConnection
        ) {
            for e in events { continuation.yield(e) }
        }
        func finish() { continuation.finish() }
    }

    // MARK: Session hooks

    override func sessionWillStart(format: CaptureDevice.Format, input: CaptureDeviceInput) {
        let source = input.device.source
        // Files read as fast as possible are analysed frame by frame; live inputs skip late frames.
        mailbox.discardsLateItems = source.isLive || source.pacing == .realTime
        let (wantsFaces, roi) = config.withLock { ($0.types.contains(.face), $0.rectOfInterest) }
        if wantsFaces, let faceStage {
            // Before the first frame, so that it does not wait for OpenCV's allocations.
            faceStage.prepare(
                width: Int(format.dimensions.width), height: Int(format.dimensions.height), regionOfInterest: roi)
        }
        config.withLock {
            $0.lastDeliveryWasEmpty = true
            // Photos in a folder are separate scenes: a face or code in one is not the same
            // appearance as one at a similar place in the next.
            $0.framesAreIndependent = input.device.deviceType == .imageFolder
        }
    }

    override func receive(_ sample: SampleBuffer, from connection: CaptureConnection, canWait: Bool) {
        guard !config.withLock({ $0.types.isEmpty }) else { return }
        let outcome = mailbox.offer((sample, connection), canWait: canWait, queue: detectionThread) { [self] item in
            analyse(item.0, connection: item.1)
        }
        if case .dropped = outcome { config.withLock { $0.skipped += 1 } }
    }

    override func sourceSkipped(frames count: Int, before sample: SampleBuffer, connection: CaptureConnection) {
        config.withLock { $0.sourceSkipped += count }
    }

    override func drain() { mailbox.drain() }

    override func cancelPendingDeliveries() {
        let dropped = mailbox.cancelPending()
        config.withLock { $0.skipped += dropped.count }
    }

    override func sessionDidStop() {
        detectionThread.run { [self] in
            let events = faceStage?.finish() ?? []
            codeStage?.finish()
            let (delegate, queue, connection) = config.withLock { ($0.delegate, $0.queue, self.connections.first) }
            guard let delegate, let queue, let connection else { return }
            queue.async {
                if !events.isEmpty { delegate.metadataOutput(self, didEmit: events, from: connection) }
                (delegate as? EventStreamAdapter)?.finish()
            }
        }
    }

    // MARK: Detection (detection thread)

    private func analyse(_ sample: SampleBuffer, connection: CaptureConnection) {
        let (types, roi, updateInterval, scanInterval, repeatInterval, independent) = config.withLock {
            (
                Set($0.types), $0.rectOfInterest, $0.faceUpdateInterval, $0.faceScanInterval, $0.codeRepeatInterval,
                $0.framesAreIndependent
            )
        }
        let image = sample.pixelBuffer
        let wantsFaces = types.contains(.face) && faceStage != nil
        let codeTypes = types.subtracting([.face])
        let wantsCodes = !codeTypes.isEmpty && codeStage != nil

        let faceResult = Mutex<Result<([MetadataFaceObject], [MetadataEvent]), CaptureError>?>(nil)
        let facesDone = DispatchSemaphore(value: 0)
        let faceStart = DispatchTime.now().uptimeNanoseconds
        if wantsFaces, let faceStage {
            // Faces on a second core while codes run here.
            faceThread.run {
                defer { facesDone.signal() }
                let r = Result { () throws(CaptureError) in
                    try faceStage.process(
                        image, regionOfInterest: roi, time: sample.presentationTimeStamp, inputID: sample.inputID,
                        updateInterval: updateInterval, scanInterval: independent ? 0 : scanInterval)
                }
                faceResult.withLock { $0 = r.map { ($0.faces, $0.events) } }
            }
        }
        var codes: [MetadataMachineReadableCodeObject] = []
        var events: [MetadataEvent] = []
        var codeError: CaptureError?
        let codeStart = DispatchTime.now().uptimeNanoseconds
        if wantsCodes, let codeStage {
            do {
                let r = try codeStage.process(
                    image, types: codeTypes, regionOfInterest: roi, time: sample.presentationTimeStamp,
                    inputID: sample.inputID, repeatInterval: repeatInterval)
                codes = r.codes
                events = r.events
            } catch {
                codeError = error
            }
        }
        let codeSeconds = Double(DispatchTime.now().uptimeNanoseconds - codeStart) / 1e9
        if wantsFaces && faceStage != nil { facesDone.wait() }
        let faceSeconds = Double(DispatchTime.now().uptimeNanoseconds - faceStart) / 1e9

        var faces: [MetadataFaceObject] = []
        var faceError: CaptureError?
        switch faceResult.withLock({ $0 }) {
        case .success(let (f, e)):
            faces = f
            events = e + events
        case .failure(let error): faceError = error
        case nil: break
        }
        if independent {
            if wantsFaces { events += faceStage?.finish() ?? [] }
            if wantsCodes { codeStage?.finish() }
        }
        if let error = faceError ?? codeError {
            logger.warning("metadata detection failed: \(error)")
        }
        let objects: [any MetadataObject] = faces + codes
        let (delegate, queue, deliverEmpty) = config.withLock { c -> ((any CaptureMetadataOutputObjectsDelegate)?, DispatchQueue?, Bool) in
            c.processed += 1
            if wantsFaces { c.faceSeconds += faceSeconds }
            if wantsCodes { c.codeSeconds += codeSeconds }
            if let error = faceError ?? codeError { c.lastError = error }
            let deliverEmpty = objects.isEmpty && !c.lastDeliveryWasEmpty
            c.lastDeliveryWasEmpty = objects.isEmpty
            return (c.delegate, c.queue, deliverEmpty)
        }
        guard let delegate, let queue else { return }
        guard !objects.isEmpty || deliverEmpty || !events.isEmpty else { return }
        let frameEvents = events
        queue.async { [self] in
            if !objects.isEmpty || deliverEmpty { delegate.metadataOutput(self, didOutput: objects, from: connection) }
            if !frameEvents.isEmpty { delegate.metadataOutput(self, didEmit: frameEvents, from: connection) }
        }
    }
}
