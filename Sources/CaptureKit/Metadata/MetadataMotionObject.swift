import Foundation

/// Motion in one frame, as `CaptureMetadataOutput.motionDetection` found it. CaptureKit's own:
/// AVFoundation has no motion object.
///
/// Value type; thread-safe.
public struct MetadataMotionObject: MetadataObject, Hashable {
    public var type: MetadataObjectType { .motion }
    /// The box holding every moving region, in device space.
    public var bounds: CGRect
    /// Each moving region's box in device space, largest first (at most
    /// `MotionDetector.maximumRegions`).
    public var regions: [CGRect]
    /// Fraction of the watched area (the rect of interest outside the masks) that changed, 0…1.
    public var changedFraction: Double
    public var time: MediaTime
    public var inputID: CaptureInput.ID

    /// Motion in `regions` (device space); `bounds` is their union.
    public init(regions: [CGRect], changedFraction: Double, time: MediaTime, inputID: CaptureInput.ID) {
        self.regions = regions
        bounds = regions.dropFirst().reduce(regions.first ?? .zero) { $0.union($1) }
        self.changedFraction = changedFraction
        self.time = time
        self.inputID = inputID
    }
}

/// Decides, frame by frame, whether faces and codes are looked for, from what the motion stage
/// saw: the policy half of motion gating (the pixels are `MotionDetector`'s). Pure logic over
/// motion results and frame times.
///
/// - A frame with motion is analysed, and so is every frame until `endDelay` seconds after the
///   last one with motion (motion is *active* from its first frame to then): a face that walks
///   out of view is seen to go, and a code held up is read at the camera's rate.
/// - A global change (a light switched, the camera bumped) gets its frame analysed once and
///   starts no motion; so does the first frame of a stream.
/// - Otherwise a frame is analysed when `idleAnalysisInterval` has passed since the last analysed
///   one (0: every frame), so a code or a face that stays still is still seen.
/// - An analysed frame that follows withheld ones carries the time of the last withheld frame
///   (`stillThrough`): the trackers take what they saw last as still there until then, so a
///   person standing still does not leave and enter again with every idle analysis.
///
/// Events: `motionStarted` with a motion's first frame, `motionEnded` (with the last frame that
/// moved) once `endDelay` passed without motion, or when the stream ends (`finish`).
///
/// Threading: a value type; mutate it from one thread at a time (the output's motion thread).
struct MotionGate: Sendable {
    /// What to do with one frame.
    struct Decision: Sendable {
        /// Whether the detectors look at the frame.
        var analyse: Bool
        /// The frame's motion (nil: nothing moved).
        var motion: MetadataMotionObject?
        /// `motionStarted` / `motionEnded`, in order.
        var events: [MetadataEvent]
        /// For an analysed frame after withheld ones: the last withheld frame's time.
        var stillThrough: MediaTime?
    }

    var endDelay: Double
    var idleAnalysisInterval: Double
    private(set) var isActive = false
    private var lastMotion: MetadataMotionObject?
    private var lastAnalysed: MediaTime?
    private var lastWithheld: MediaTime?

    init(endDelay: Double, idleAnalysisInterval: Double) {
        self.endDelay = endDelay
        self.idleAnalysisInterval = idleAnalysisInterval
    }

    mutating func decide(_ result: MotionDetector.Result, at time: MediaTime, inputID: CaptureInput.ID) -> Decision {
        let now = time.seconds
        var events: [MetadataEvent] = []
        var motion: MetadataMotionObject?
        if result.hasMotion {
            let object = MetadataMotionObject(regions: result.regions, changedFraction: result.changedFraction, time: time, inputID: inputID)
            if !isActive { events.append(.motionStarted(object)) }
            isActive = true
            lastMotion = object
            motion = object
        } else if isActive, let last = lastMotion, now - last.time.seconds >= endDelay - 0.001 || now < last.time.seconds {
            isActive = false
            events.append(.motionEnded(last))
        }
        let previous = lastAnalysed?.seconds
        // A millisecond of slack: 20 frames of 1/10 s are "2 s later".
        let due = previous.map { now < $0 || now - $0 >= idleAnalysisInterval - 0.001 } ?? true
        let analyse = motion != nil || isActive || result.isGlobalChange || result.isFirstFrame || due
        guard analyse else {
            lastWithheld = time
            return Decision(analyse: false, motion: nil, events: events, stillThrough: nil)
        }
        var still: MediaTime?
        if let withheld = lastWithheld, let previous, withheld.seconds > previous { still = withheld }
        lastAnalysed = time
        lastWithheld = nil
        return Decision(analyse: true, motion: motion, events: events, stillThrough: still)
    }

    /// The stream ended: a motion still active ends (its `motionEnded`), and the next frame
    /// starts afresh.
    mutating func finish() -> [MetadataEvent] {
        defer {
            isActive = false
            lastMotion = nil
            lastAnalysed = nil
            lastWithheld = nil
        }
        guard isActive, let last = lastMotion else { return [] }
        return [.motionEnded(last)]
    }
}
