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
/// - `availableMetadataObjectTypes`: what the detectors allow (`.face` when a usable face model
///   is found or loaded; the code types the linked decoders support).
/// - `metadataObjectTypes`: what to look for; empty by default (nothing is detected). Set it as
///   in AVFoundation (`output.metadataObjectTypes = [.face, .qr]`), or with the throwing
///   `setMetadataObjectTypes(_:)`.
///   Taking every face type (or every code type) out while the session runs ends that stage's
///   tracks: their `faceLeft` (`codeLeft`) events come with the next frame, after every frame
///   analysed before the change, and asking for the types again starts afresh (`faceEntered`
///   with new IDs).
/// - `rectOfInterest`: device space (0…1, top-left origin, unrotated); detectors look only
///   inside it and objects outside it are not reported.
///
/// ## Face models
/// Faces are found by YuNet (`faceDetectorModel` says which model and file run). The model
/// travels with the library (see `FaceModelSearch`). A missing or unloadable YuNet is never
/// a quiet downgrade: unless the output was created with `allowsHaarCascadeFallback: true`,
/// asking for `.face` without a usable YuNet fails with `.faceModelUnavailable`:
/// `setMetadataObjectTypes(_:)` throws it at once; after the property setter,
/// `CaptureSession.startRunning()` throws it, and a session already running stops with it as a
/// `.runtimeError` event (how AVFoundation reports failures at run time).
///
/// ## Misuse
/// As AVFoundation raises an exception, the property setter stops the program (a precondition)
/// for a type this output can never deliver: a code type the linked decoders lack, or `.face`
/// on an output created without a face stage. Check `availableMetadataObjectTypes`, or use
/// `setMetadataObjectTypes(_:)`, which throws `.unsupported` instead.
///
/// Detection runs on the output's own threads, never on the capture thread: each stage on its
/// own (`cvcam.faces`, `cvcam.codes`; a stage is loaded only when its types are asked for), and
/// delivery on `cvcam.metadata`, which joins each frame's results in capture order
/// (`MetadataPipeline`). Each stage reads the frame through one `AnalysisFrame`, so a frame is
/// converted to BGR or gray at most once. A frame that arrives while a stage is still busy
/// waits in a one-frame slot; a newer frame replaces it while no stage has started it, and the
/// replaced or refused frame is counted in `skippedFrameCount` (late frames are skipped, not
/// queued). For a file read as fast as possible, frames wait instead and none is skipped.
/// Results carry the timestamp of the frame they came from. For an image folder every image is
/// its own scene: each face enters and leaves within its image, and each code appears once per
/// image.
///
/// With `motionDetection` enabled (off by default, as AVFoundation analyses every frame), a
/// motion stage on its own thread (`cvcam.motion`) looks at every frame first, on a small gray
/// image made from the frame's gray view, and the detectors run on frames with motion and at
/// `MotionDetection.idleAnalysisInterval` otherwise; motion is reported as `motionStarted` /
/// `motionEnded` events and as a `MetadataMotionObject` among an analysed frame's objects.
///
/// Threading: thread-safe.
public final class CaptureMetadataOutput: CaptureOutput, @unchecked Sendable {
    // @unchecked: configuration and counters are behind `config` (a Mutex); each stage is used
    // only on its lane's thread, one frame at a time; the slots are behind their own Mutexes.

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
        /// Per lane, how many times its types were all taken out: a frame carrying a newer
        /// count than the lane has seen ends the lane's tracks first.
        var laneEpochs: [Lane: Int] = [:]
        /// Per lane, the epoch a frame that ends its tracks was admitted for.
        var endingAdmitted: [Lane: Int] = [:]
        var motionDetection = MotionDetection.disabled
        var still = 0
        var motionActive = false
    }

    /// Whether the Haar cascade may run when YuNet cannot be loaded (see "Face models").
    public let allowsHaarCascadeFallback: Bool

    private let config = Mutex(Config())
    private let faceSlot: StageSlot<any FaceMetadataStage>
    private let codeSlot: StageSlot<any CodeMetadataStage>
    private let converter = FrameConverter()
    private let canWaitForFrames = Atomic<Bool>(true)
    /// Per lane, the epoch its stage last worked in (each lane reads and writes its own entry).
    private let laneEpochsSeen = Mutex<[Lane: Int]>([:])
    private let logger = Logger(label: "cvcam.metadata")
    /// The motion stage's detector and gate: used on the motion thread only, one frame at a time.
    private let motion = Mutex(MotionStage())

    /// The two kinds of stage, each a lane of the pipeline.
    enum Lane: Hashable, Sendable { case faces, codes }

    /// The settings one frame is analysed with (taken when it is admitted).
    struct FrameContext: Sendable {
        var connection: CaptureConnection
        var codeTypes: Set<MetadataObjectType>
        var regionOfInterest: CGRect
        var faceUpdateInterval: Double
        var faceScanInterval: Double
        var codeRepeatInterval: Double
        var independent: Bool
        /// Each lane's epoch at admission (see `Config.laneEpochs`).
        var epochs: [Lane: Int] = [:]
        /// Lanes whose types were taken out: this frame only ends their tracks.
        var ending: Set<Lane> = []
        /// The motion settings the frame is gated with (nil: not gated).
        var motionDetection: MotionDetection?
        /// What the motion stage decided (set on the motion thread).
        var motion: MotionGate.Decision?
    }

    /// What one lane found in one frame, and how long it took.
    struct LaneOutput: Sendable {
        var faces: [MetadataFaceObject] = []
        var codes: [MetadataMachineReadableCodeObject] = []
        var events: [MetadataEvent] = []
        var error: CaptureError?
        var seconds = 0.0
    }

    // Lazy because its closures need `self`; built once, under `pipelineLock`, on first use.
    private lazy var lazyPipeline = MetadataPipeline<Lane, FrameContext, LaneOutput>(
        name: "cvcam.metadata", threadName: { $0 == .faces ? "cvcam.faces" : "cvcam.codes" }, gateThreadName: "cvcam.motion",
        gate: { [unowned self] job in gate(&job) },
        work: { [unowned self] lane, job in analyse(job, in: lane) },
        deliver: { [unowned self] job, outputs in deliver(job, outputs) })
    private let pipelineLock = Mutex(())
    private var pipeline: MetadataPipeline<Lane, FrameContext, LaneOutput> { pipelineLock.withLock { _ in lazyPipeline } }

    /// Creates an output with the default detectors: YuNet faces with
    /// `FaceDetector.Configuration.realTime` (frames scaled to a 640 px long side, so faces and
    /// QR on a 720p30 camera are analysed at its frame rate on two cores; faces from about
    /// 32 px tall at 720p) and codes from `CodeDetector`.
    public override init() {
        faceSlot = .faces(.realTime, modelsDirectory: nil, allowsHaarCascadeFallback: false)
        codeSlot = .codes()
        allowsHaarCascadeFallback = false
        super.init()
    }

    /// Creates an output whose face detector uses `faceDetection`: `.realTime` (the default of
    /// `init()`), `.standard` (frames up to 2048 px analysed at their own size: smaller faces,
    /// about 4× the CPU of `.realTime` at 720p; the right choice for photos) or `.tiled` (distant
    /// faces in 1080p). Codes as in `init()`.
    ///
    /// - Parameters:
    ///   - faceDetection: the face detector's configuration.
    ///   - faceModelsDirectory: the only folder to load the face models from (nil: the
    ///     `FaceModelSearch` order, which finds the models shipped with the library).
    ///   - allowsHaarCascadeFallback: run OpenCV's Haar cascade (no landmarks, roll or yaw;
    ///     fewer faces) when YuNet cannot be loaded, instead of failing; a warning is logged on
    ///     `cvcam.faces` and `faceDetectorModel` says so.
    public init(
        faceDetection: FaceDetector.Configuration, faceModelsDirectory: URL? = nil, allowsHaarCascadeFallback: Bool = false
    ) {
        faceSlot = .faces(
            faceDetection, modelsDirectory: faceModelsDirectory, allowsHaarCascadeFallback: allowsHaarCascadeFallback)
        codeSlot = .codes()
        self.allowsHaarCascadeFallback = allowsHaarCascadeFallback
        super.init()
    }

    /// Creates an output with the given stages (nil: that kind of metadata is unavailable).
    public init(faceStage: (any FaceMetadataStage)?, codeStage: (any CodeMetadataStage)?) {
        faceSlot = StageSlot(faceStage)
        codeSlot = StageSlot(codeStage)
        allowsHaarCascadeFallback = false
        super.init()
    }

    /// What can be detected. The default stages are loaded when their types are set; until then
    /// faces count as available when a usable face model file is found (`FaceModelSearch`: YuNet,
    /// or the Haar cascade with `allowsHaarCascadeFallback`), and not after a model failed to load.
    public var availableMetadataObjectTypes: [MetadataObjectType] {
        let faces = faceSlot.loaded.map(\.isAvailable) ?? faceSlot.mayLoad
        let codes = codeSlot.loaded?.availableTypes ?? (codeSlot.mayLoad ? DefaultCodeStage.supportedTypes : [])
        return (faces ? [.face] : []) + codes
    }

    /// The face model the face stage runs (YuNet or, when allowed, the Haar cascade, with its
    /// file); nil until `.face` has been asked for and loaded, when loading failed, or for a
    /// custom face stage that does not say.
    public var faceDetectorModel: FaceDetectorModel? { faceSlot.loaded?.faceDetectorModel }

    /// Whether the face stage (and its networks) has been loaded; the code stage likewise.
    var loadedStages: (faces: Bool, codes: Bool) { (faceSlot.loaded != nil, codeSlot.loaded != nil) }

    /// What is being looked for (empty by default), as AVFoundation's `metadataObjectTypes`.
    ///
    /// Setting it loads the detectors the types need. A type this output can never deliver stops
    /// the program (see "Misuse"); a face model that cannot be loaded is reported by
    /// `CaptureSession.startRunning()`, or as a runtime error of a running session (see "Face
    /// models"). `setMetadataObjectTypes(_:)` reports both as thrown errors instead.
    public var metadataObjectTypes: [MetadataObjectType] {
        get { config.withLock { $0.types } }
        set {
            let (misuse, loadError) = prepare(newValue)
            if let misuse { preconditionFailure(misuse.message) }
            apply(newValue)
            if let loadError { reportRuntimeError(loadError) }
        }
    }

    /// Chooses what to look for (the throwing form of the `metadataObjectTypes` setter).
    ///
    /// - Throws: `.unsupported` naming the types this output cannot deliver (nothing changes);
    ///   `.faceModelUnavailable` when `.face` is asked for and no usable face model loads
    ///   (nothing changes).
    public func setMetadataObjectTypes(_ types: [MetadataObjectType]) throws(CaptureError) {
        let (misuse, loadError) = prepare(types)
        if let error = misuse ?? loadError { throw error }
        apply(types)
    }

    /// Loads the stages `types` need. Returns the misuse (a type this output can never deliver)
    /// and the load failure (a stage that exists but could not be loaded now), if any.
    private func prepare(_ types: [MetadataObjectType]) -> (misuse: CaptureError?, loadError: CaptureError?) {
        var loadError: CaptureError?
        if types.contains(.face), case .failure(let error) = faceSlot.load() { loadError = error }
        if types.contains(where: { $0 != .face }), case .failure(let error) = codeSlot.load() { loadError = loadError ?? error }
        let faceProvided = faceSlot.isProvided
        let codeTypes = codeSlot.loaded?.availableTypes ?? (codeSlot.isProvided ? DefaultCodeStage.supportedTypes : [])
        let missing = types.filter { $0 == .face ? !faceProvided : !codeTypes.contains($0) }
        guard missing.isEmpty else {
            let available = availableMetadataObjectTypes
            return (
                CaptureError(
                    .unsupported,
                    "metadata types \(missing.map(\.rawValue).joined(separator: ", ")) are not available; available: \(available.map(\.rawValue).joined(separator: ", ")) (check availableMetadataObjectTypes first)"
                ), nil
            )
        }
        return (nil, loadError)
    }

    /// Sets `types`; a lane switched off ends its tracks (a face still there when it is switched
    /// on again would otherwise come back as an update of a track nobody saw enter).
    private func apply(_ types: [MetadataObjectType]) {
        config.withLock { c in
            for lane in Self.lanes(of: c.types).subtracting(Self.lanes(of: types)) { c.laneEpochs[lane, default: 0] += 1 }
            c.types = types
        }
    }

    /// The lanes `types` need.
    private static func lanes(of types: [MetadataObjectType]) -> Set<Lane> {
        var lanes: Set<Lane> = []
        if types.contains(.face) { lanes.insert(.faces) }
        if types.contains(where: { $0 != .face }) { lanes.insert(.codes) }
        return lanes
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
    /// found within this interval plus three frames (why: latency and skipped frames in
    /// `Tools/Bench/README.md`). Frames of an image folder are always searched whole.
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

    /// Motion detection and gating (default `.disabled`: every frame is analysed, as
    /// AVFoundation does). Values out of range are brought into it (`MotionDetection.clamped`).
    /// Takes effect with the next frame; changing the masks, the analysis width or the rect of
    /// interest starts the background again.
    public var motionDetection: MotionDetection {
        get { config.withLock { $0.motionDetection } }
        set { config.withLock { $0.motionDetection = newValue.clamped } }
    }

    /// Sets the delegate and the serial queue it is called on. The delegate is retained.
    public func setMetadataObjectsDelegate(_ delegate: (any CaptureMetadataOutputObjectsDelegate)?, queue: DispatchQueue?) {
        let queue = delegate == nil ? nil : (queue ?? DispatchQueue(label: "cvcam.metadata.delegate"))
        if let queue, queue !== DispatchQueue.main { queue.setSpecific(key: Self.delegateQueueKey, value: ObjectIdentifier(self)) }
        config.withLock {
            $0.delegate = delegate
            $0.queue = queue
        }
    }

    /// The current delegate.
    public var metadataObjectsDelegate: (any CaptureMetadataOutputObjectsDelegate)? { config.withLock { $0.delegate } }

    /// Frames analysed so far: with `motionDetection` on, every frame the motion stage finished
    /// with, including those the detectors were spared because nothing moved (`stillFrameCount`).
    public var processedFrameCount: Int { config.withLock { $0.processed } }
    /// Frames whose faces and codes were not looked for because nothing moved in them and no
    /// idle analysis was due (`motionDetection`); they are among `processedFrameCount`.
    public var stillFrameCount: Int { config.withLock { $0.still } }
    /// Whether a motion is going on: from its `motionStarted` event to its `motionEnded`, as
    /// delivered so far.
    public var isMotionActive: Bool { config.withLock { $0.motionActive } }
    /// Frames skipped because analysis was still busy with an earlier one.
    public var skippedFrameCount: Int { config.withLock { $0.skipped } }
    /// Frames the source never produced (lost by the driver, or not streamed while a photo
    /// switched the camera to a still format): they were not analysed and are not in
    /// `skippedFrameCount`.
    public var sourceSkippedFrameCount: Int { config.withLock { $0.sourceSkipped } }
    /// Total seconds each stage spent on its frames (faces and codes run in parallel, each
    /// timed on its own thread).
    public var stageSeconds: (faces: Double, codes: Double) { config.withLock { ($0.faceSeconds, $0.codeSeconds) } }
    /// The last detector error (detection goes on with the next frame).
    public var lastError: CaptureError? { config.withLock { $0.lastError } }

    /// Blocks until every frame received so far has been analysed and its results handed to the
    /// delegate (call after the session stopped, before reading the final results).
    ///
    /// Deliveries queued behind the caller cannot run while it waits: called on the main thread
    /// while the delegate queue is `.main` (a main-queue block cannot be told apart from
    /// top-level code there), or from the delegate queue itself, it returns once every delivery
    /// is queued, and they run when the caller returns to its queue.
    public func waitUntilIdle() {
        pipeline.waitUntilIdle()
        guard let queue = config.withLock({ $0.queue }) else { return }
        if queue === DispatchQueue.main {
            if !Thread.isMainThread { queue.sync {} }
        } else if DispatchQueue.getSpecific(key: Self.delegateQueueKey) != ObjectIdentifier(self) {
            queue.sync {}
        }
    }

    /// Marks the delegate queue so that `waitUntilIdle` can tell when it is called from it.
    private static let delegateQueueKey = DispatchSpecificKey<ObjectIdentifier>()

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

    override func startError() -> CaptureError? {
        // Loads again, so a model installed since the types were set is found now.
        let types = config.withLock { $0.types }
        if types.contains(.face), case .failure(let error) = faceSlot.load() { return error }
        if types.contains(where: { $0 != .face }), case .failure(let error) = codeSlot.load() { return error }
        return nil
    }

    override func sessionWillStart(format: CaptureDevice.Format, input: CaptureDeviceInput) {
        let source = input.device.source
        // Files read as fast as possible are analysed frame by frame; live inputs skip late frames.
        canWaitForFrames.store(!(source.isLive || source.pacing == .realTime), ordering: .relaxed)
        let (wantsFaces, roi) = config.withLock { ($0.types.contains(.face), $0.rectOfInterest) }
        if wantsFaces, let faceStage = faceSlot.loaded {
            // Before the first frame, so that it does not wait for OpenCV's allocations.
            faceStage.prepare(
                width: Int(format.dimensions.width), height: Int(format.dimensions.height), regionOfInterest: roi)
        }
        motion.withLock { $0.reset() }
        config.withLock {
            $0.lastDeliveryWasEmpty = true
            $0.motionActive = false
            // Photos in a folder are separate scenes: a face or code in one is not the same
            // appearance as one at a similar place in the next.
            $0.framesAreIndependent = input.device.deviceType == .imageFolder
        }
    }

    override func receive(_ sample: SampleBuffer, from connection: CaptureConnection, canWait: Bool) {
        let job = config.withLock { c -> MetadataPipeline<Lane, FrameContext, LaneOutput>.Job? in
            // Photos of a folder are separate scenes: nothing moves from one to the next.
            let motion = c.motionDetection.isEnabled && !c.framesAreIndependent ? c.motionDetection : nil
            let codeTypes = Set(c.types).subtracting([.face])
            var lanes: Set<Lane> = []
            if c.types.contains(.face), faceSlot.loaded != nil { lanes.insert(.faces) }
            if !codeTypes.isEmpty, codeSlot.loaded != nil { lanes.insert(.codes) }
            // A lane switched off since it last ran gets this frame only to end its tracks.
            var ending: Set<Lane> = []
            for (lane, epoch) in c.laneEpochs where !lanes.contains(lane) && c.endingAdmitted[lane] != epoch {
                let loaded = lane == .faces ? faceSlot.loaded != nil : codeSlot.loaded != nil
                if loaded { ending.insert(lane) }
            }
            guard !lanes.isEmpty || !ending.isEmpty || motion != nil else { return nil }
            let context = FrameContext(
                connection: connection, codeTypes: codeTypes, regionOfInterest: c.rectOfInterest,
                faceUpdateInterval: c.faceUpdateInterval, faceScanInterval: c.faceScanInterval,
                codeRepeatInterval: c.codeRepeatInterval, independent: c.framesAreIndependent, epochs: c.laneEpochs,
                ending: ending, motionDetection: motion)
            return .init(
                frame: AnalysisFrame(sample, converter: converter, isIndependentStill: c.framesAreIndependent),
                lanes: lanes.union(ending), context: context, needsGate: motion != nil)
        }
        guard let job else { return }
        // A gated frame that ends tracks waits for the gate rather than be replaced there: once
        // admitted, nothing sends its ending again.
        let mayWait = canWait && canWaitForFrames.load(ordering: .relaxed) || (job.needsGate && !job.context.ending.isEmpty)
        let admission = pipeline.offer(job, canWait: mayWait)
        config.withLock { c in
            if admission != .admitted, job.lanes != job.context.ending { c.skipped += 1 }
            // Dropped: the next frame ends the tracks instead.
            guard admission != .dropped else { return }
            for lane in job.context.ending { c.endingAdmitted[lane] = job.context.epochs[lane] }
        }
    }

    override func sourceSkipped(frames count: Int, before sample: SampleBuffer, connection: CaptureConnection) {
        config.withLock { $0.sourceSkipped += count }
    }

    override func drain() { pipeline.waitUntilIdle() }

    override func cancelPendingDeliveries() {
        let dropped = pipeline.cancelPending()
        config.withLock { $0.skipped += dropped }
    }

    override func waitForWorkInProgress() { pipeline.endThreads() }

    override func sessionDidStop() {
        // After the last admitted frame is delivered, on the delivery thread: no lane is
        // working then, so the stages may be finished from here.
        pipeline.whenIdle { [self] in
            let motionEnd = motion.withLock { $0.gate.finish() }
            if !motionEnd.isEmpty { config.withLock { $0.motionActive = false } }
            let events = (faceSlot.loaded?.finish() ?? []) + (codeSlot.loaded?.finish() ?? []) + motionEnd
            let (delegate, queue, connection) = config.withLock { ($0.delegate, $0.queue, self.connections.first) }
            guard let delegate, let queue, let connection else { return }
            queue.async {
                if !events.isEmpty { delegate.metadataOutput(self, didEmit: events, from: connection) }
                (delegate as? EventStreamAdapter)?.finish()
            }
        }
    }

    // MARK: Motion (the motion thread, in capture order)

    /// Looks for motion in a frame that needs the gate and decides whether its lanes run: none
    /// when nothing moved and no idle analysis is due. A frame whose motion cannot be measured
    /// (a conversion failed) is analysed, so a failing motion stage never hides a face.
    private func gate(_ job: inout MetadataPipeline<Lane, FrameContext, LaneOutput>.Job) {
        guard let settings = job.context.motionDetection else { return }
        let frame = job.frame
        let roi = job.context.regionOfInterest
        let decision: MotionGate.Decision
        do throws(CaptureError) {
            let gray = try frame.gray()
            decision = try motion.withLock { (stage: inout MotionStage) throws(CaptureError) -> MotionGate.Decision in
                stage.apply(settings)
                let result = try stage.detector.process(gray, time: frame.time.seconds, regionOfInterest: roi)
                return stage.gate.decide(result, at: frame.time, inputID: frame.inputID)
            }
        } catch {
            logger.warning("motion detection failed: \(error)")
            config.withLock { $0.lastError = error }
            decision = MotionGate.Decision(analyse: true, motion: nil, events: [], stillThrough: nil)
        }
        frame.setMotion(decision.motion, stillThrough: decision.stillThrough)
        job.context.motion = decision
        // A spared frame still ends the tracks of lanes switched off.
        if !decision.analyse { job.lanes = job.context.ending }
    }

    // MARK: Analysis (each lane's thread)

    private func analyse(_ job: MetadataPipeline<Lane, FrameContext, LaneOutput>.Job, in lane: Lane) -> LaneOutput {
        let context = job.context
        let start = DispatchTime.now().uptimeNanoseconds
        var output = LaneOutput()
        // The lane was switched off since it last worked: its open tracks end before this frame.
        let epoch = context.epochs[lane] ?? 0
        let switchedOff = laneEpochsSeen.withLock { seen in
            defer { seen[lane] = epoch }
            return seen[lane, default: 0] != epoch
        }
        var ended: [MetadataEvent] = []
        if switchedOff {
            ended = (lane == .faces ? faceSlot.loaded?.finish() : codeSlot.loaded?.finish()) ?? []
        }
        guard !context.ending.contains(lane) else {
            output.events = ended
            return output
        }
        do throws(CaptureError) {
            switch lane {
            case .faces:
                guard let stage = faceSlot.loaded else { break }
                let r = try stage.process(
                    job.frame, regionOfInterest: context.regionOfInterest, updateInterval: context.faceUpdateInterval,
                    scanInterval: context.independent ? 0 : context.faceScanInterval)
                output.faces = r.faces
                output.events = r.events
                if context.independent { output.events += stage.finish() }
            case .codes:
                guard let stage = codeSlot.loaded else { break }
                let r = try stage.process(
                    job.frame, types: context.codeTypes, regionOfInterest: context.regionOfInterest,
                    repeatInterval: context.codeRepeatInterval)
                output.codes = r.codes
                output.events = r.events
                if context.independent { output.events += stage.finish() }
            }
        } catch {
            output.error = error
        }
        output.events = ended + output.events
        output.seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return output
    }

    // MARK: Delivery (the delivery thread, in capture order)

    private func deliver(_ job: MetadataPipeline<Lane, FrameContext, LaneOutput>.Job, _ outputs: [Lane: LaneOutput]) {
        let faces = outputs[.faces], codes = outputs[.codes]
        let gated = job.context.motion
        // Motion events first (a motion starts before the face it brings enters), then face
        // events before code events, as one frame's track events always were.
        let motionEvents = gated?.events ?? []
        let events = motionEvents + (faces?.events ?? []) + (codes?.events ?? [])
        let error = faces?.error ?? codes?.error
        if let error { logger.warning("metadata detection failed: \(error)") }
        // A frame the detectors looked at (or, with no detector asked for, the motion stage)
        // reports its objects; a frame spared or skipped reports only its motion events.
        let analysed = !job.wasSkipped && (gated?.analyse ?? true)
        let motionObject: [any MetadataObject] = gated?.motion.map { [$0] } ?? []
        let objects: [any MetadataObject] = (faces?.faces ?? []) + (codes?.codes ?? []) + motionObject
        let (delegate, queue, deliverEmpty) = config.withLock { c -> ((any CaptureMetadataOutputObjectsDelegate)?, DispatchQueue?, Bool) in
            // A frame that only ended tracks was not analysed; one the motion stage spared was
            // (`stillFrameCount`).
            if job.wasSkipped { c.skipped += 1 } else if gated != nil || job.lanes != job.context.ending { c.processed += 1 }
            if let gated, !gated.analyse, !job.wasSkipped { c.still += 1 }
            for event in motionEvents {
                if case .motionStarted = event { c.motionActive = true } else if case .motionEnded = event { c.motionActive = false }
            }
            if let faces { c.faceSeconds += faces.seconds }
            if let codes { c.codeSeconds += codes.seconds }
            if let error { c.lastError = error }
            guard analysed else { return (c.delegate, c.queue, false) }
            let deliverEmpty = objects.isEmpty && !c.lastDeliveryWasEmpty
            c.lastDeliveryWasEmpty = objects.isEmpty
            return (c.delegate, c.queue, deliverEmpty)
        }
        guard let delegate, let queue else { return }
        let sendsObjects = analysed && (!objects.isEmpty || deliverEmpty)
        guard sendsObjects || !events.isEmpty else { return }
        let connection = job.context.connection
        queue.async { [self] in
            if sendsObjects { delegate.metadataOutput(self, didOutput: objects, from: connection) }
            if !events.isEmpty { delegate.metadataOutput(self, didEmit: events, from: connection) }
        }
    }
}

/// A metadata stage loaded on first use: the default stages load models and build detectors,
/// which an output that never asks for their types should not pay for.
///
/// Threading: thread-safe.
final class StageSlot<Stage: Sendable>: @unchecked Sendable {
    // @unchecked: `state` is a Mutex; the stages themselves are Sendable by their protocols.
    typealias Factory = @Sendable () throws(CaptureError) -> Stage
    private struct State: Sendable {
        var stage: Stage?
        var factory: Factory?
        /// Why the last load failed (cleared by a load that succeeds).
        var lastError: CaptureError?
    }
    private let state: Mutex<State>
    /// Whether loading may succeed, checked without loading.
    private let available: @Sendable () -> Bool

    /// A slot holding `stage` (nil: that kind of metadata is unavailable).
    init(_ stage: Stage?) {
        state = Mutex(State(stage: stage, factory: nil))
        let present = stage != nil
        available = { present }
    }

    /// A slot that builds its stage with `factory` on `load()`.
    init(factory: @escaping Factory, available: @escaping @Sendable () -> Bool) {
        state = Mutex(State(stage: nil, factory: factory))
        self.available = available
    }

    /// The stage, if loaded.
    var loaded: Stage? { state.withLock { $0.stage } }

    /// Whether the slot can give a stage at all: it holds one or can build one (which may still
    /// fail, e.g. for want of a model file).
    var isProvided: Bool { state.withLock { $0.stage != nil || $0.factory != nil } }

    /// Whether the stage is loaded or a load may succeed (not after a failed one).
    var mayLoad: Bool {
        loaded != nil || state.withLock { $0.factory != nil && $0.lastError == nil } && available()
    }

    /// The stage, loaded now if it was not (a failed load is tried again on the next call, so a
    /// model installed meanwhile is found); nil when the slot has no stage and no factory.
    func load() -> Result<Stage, CaptureError>? {
        state.withLock { s -> Result<Stage, CaptureError>? in
            if let stage = s.stage { return .success(stage) }
            guard let factory = s.factory else { return nil }
            do throws(CaptureError) {
                let stage = try factory()
                s.stage = stage
                s.factory = nil
                s.lastError = nil
                return .success(stage)
            } catch {
                s.lastError = error
                return .failure(error)
            }
        }
    }
}

extension StageSlot where Stage == any FaceMetadataStage {
    /// The default face stage with `configuration`, loaded on first use from the models
    /// `FaceModelSearch` finds (only `modelsDirectory` when given).
    static func faces(
        _ configuration: FaceDetector.Configuration, modelsDirectory: URL?, allowsHaarCascadeFallback: Bool
    ) -> StageSlot {
        StageSlot(
            factory: { () throws(CaptureError) in
                DefaultFaceStage(
                    detector: try FaceDetector(
                        configuration: configuration, modelsDirectory: modelsDirectory,
                        allowsHaarCascadeFallback: allowsHaarCascadeFallback))
            },
            available: {
                FaceDetector.hasUsableModel(
                    in: FaceModelSearch(explicit: modelsDirectory), allowsHaarCascadeFallback: allowsHaarCascadeFallback)
            })
    }
}

extension StageSlot where Stage == any CodeMetadataStage {
    /// The default code stage, loaded on first use.
    static func codes() -> StageSlot {
        StageSlot(factory: { () throws(CaptureError) in DefaultCodeStage(detector: try CodeDetector()) }, available: { true })
    }
}
