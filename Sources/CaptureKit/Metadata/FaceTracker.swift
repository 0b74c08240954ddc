import Foundation
import Synchronization

/// Gives faces identities across frames: each face that enters gets a new `faceID` (from a
/// process-wide counter, never reused), keeps it while it stays, including through brief
/// misses, and loses it when it leaves. Reports `entered`, rate-limited `updated` and `left`
/// events with `MetadataFaceObject`s.
///
/// Matching, per frame: each track's box is predicted at the frame's time from its last box
/// and velocity (constant velocity between its last two sightings). Every (track, detection)
/// pair gets an affinity: its IoU when that is at least `minimumIoU`; otherwise, when the
/// centres are closer than `maximumCentreDistance` × the predicted box's larger side, a
/// smaller affinity that falls with the distance (fast motion, jumpy boxes). Pairs are then
/// assigned greedily, highest affinity first, each track and detection at most once (greedy
/// is optimal whenever faces do not overlap, which is the common case, and avoids Hungarian's
/// cost). Unmatched detections start tracks; a track unmatched for more than
/// `maximumMissedFrames` frames or `maximumMissedDuration` seconds leaves.
///
/// A new track is held back until it has been matched in `framesToEnter` consecutive frames:
/// until then it is followed and matched like any other, but reported nowhere (no event, not
/// in `faces`, no `faceID` spent), and a single miss drops it silently. A face that a detector
/// reports in one frame of video and not the next (a texture that looks like a face for an
/// instant) never enters; a face that stays enters `framesToEnter` − 1 frames later. The hold
/// needs frames close together: when the frame before came more than `maximumHoldGap` seconds
/// earlier (a busy box skipping frames, detection gated to a low rate while nothing moves), a
/// moving face could not be matched across the gap, so new faces enter at once, as without it.
///
/// Each track also follows its face in pixels of the frames it was found in (the detector's own
/// box, moved by a velocity in pixels), so the search near tracked faces gets boxes that never
/// went through device space; device space is only what the tracker reports and matches on.
///
/// Pure logic over detections and timestamps: no session, no images.
/// Threading: a value type; mutate it from one thread at a time (e.g. a metadata output's
/// face thread). The ID counter is shared and thread-safe.
public struct FaceTracker: Sendable {
    /// Policy knobs. Value type; thread-safe.
    public struct Configuration: Sendable, Hashable {
        /// Frames a face may go undetected before it leaves.
        public var maximumMissedFrames: Int
        /// Seconds a face may go undetected before it leaves.
        public var maximumMissedDuration: Double
        /// Least time between two `updated` events of one face, in seconds (0: every frame).
        public var updateInterval: Double
        /// Least IoU between predicted and detected box to match by overlap.
        public var minimumIoU: Double
        /// Largest centre distance, in predicted-box sides, to match without overlap.
        public var maximumCentreDistance: Double
        /// Consecutive frames a new face must be matched in before it enters (1: at once).
        public var framesToEnter: Int
        /// Longest gap between two frames, in seconds, over which a new face is still held back;
        /// after a longer one it enters at once.
        public var maximumHoldGap: Double

        /// Creates a configuration. `framesToEnter` is 1 here (the tracker alone reports what it
        /// is given); `video` holds new faces for 3 frames.
        public init(
            maximumMissedFrames: Int = 5, maximumMissedDuration: Double = 0.5, updateInterval: Double = 0.25,
            minimumIoU: Double = 0.2, maximumCentreDistance: Double = 0.75, framesToEnter: Int = 1,
            maximumHoldGap: Double = 0.25
        ) {
            self.framesToEnter = framesToEnter
            self.maximumHoldGap = maximumHoldGap
            self.maximumMissedFrames = maximumMissedFrames
            self.maximumMissedDuration = maximumMissedDuration
            self.updateInterval = updateInterval
            self.minimumIoU = minimumIoU
            self.maximumCentreDistance = maximumCentreDistance
        }

        /// For video (`DefaultFaceStage`'s default): a new face enters once matched in 3
        /// consecutive frames, 67 ms late at 30 fps (see `Tools/Bench/README.md` for the clips it
        /// was measured on).
        public static let video = Configuration(framesToEnter: 3)
    }

    /// What happened to a face in one frame.
    public enum Event: Sendable, Hashable {
        /// A face appeared, with its new `faceID`.
        case entered(MetadataFaceObject)
        /// A tracked face was seen again (at most once per `updateInterval`).
        case updated(MetadataFaceObject)
        /// A face has not been seen for too long; the object is its last sighting.
        case left(MetadataFaceObject)

        /// The face the event is about.
        public var face: MetadataFaceObject {
            switch self {
            case .entered(let f), .updated(let f), .left(let f): f
            }
        }
    }

    private struct Track: Sendable {
        var face: MetadataFaceObject
        var velocity: CGSize  // device units per second (width: x, height: y)
        /// The last box in pixels and its frame's space, when the detection carried one.
        var pixelBox: FaceDetection.PixelBox?
        var pixelVelocity = CGSize.zero  // pixels per second
        var lastSeen: Double
        var missedFrames: Int
        var lastReported: Double
        /// Consecutive frames matched so far while held back; nil once entered.
        var heldFrames: Int?
    }

    /// The policy in force.
    public var configuration: Configuration
    private var tracks: [Track] = []
    /// The time of the frame `update` saw last: the hold applies only to frames close together.
    private var lastFrameTime: Double?
    /// The time of the last `update`, or of the stillness it was carried to
    /// (`sceneWasStill(through:)`; the hold still sees the gap before the next analysed frame).
    private var lastUpdate: Double?

    private static let nextID = Atomic<Int>(1)

    /// Creates a tracker with no faces.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The faces currently tracked, as last seen (including those briefly missed); faces still
    /// held back (`framesToEnter`) are not among them.
    public var faces: [MetadataFaceObject] { tracks.filter { $0.heldFrames == nil }.map(\.face) }

    /// Where each tracked face, entered or still held back, is expected at `time`: its last box
    /// moved by its velocity (the prediction matching uses), in device space.
    public func predictedBounds(at time: MediaTime) -> [CGRect] {
        tracks.map { predictedBox($0, at: time.seconds) }
    }

    /// `predictedBounds(at:)` in pixels of frames of `space`, moved in pixels from the detector's
    /// own boxes; nil when a track has no pixel box from a frame of that size (then convert the
    /// device-space prediction).
    package func predictedPixelBounds(at time: MediaTime, in space: DeviceSpace) -> [CGRect]? {
        var boxes: [CGRect] = []
        for t in tracks {
            guard let p = t.pixelBox, p.space == space else { return nil }
            let dt = max(0, time.seconds - t.lastSeen)
            boxes.append(p.bounds.offsetBy(dx: t.pixelVelocity.width * dt, dy: t.pixelVelocity.height * dt))
        }
        return boxes
    }

    private func predictedBox(_ t: Track, at now: Double) -> CGRect {
        let dt = max(0, now - t.lastSeen)
        return t.face.bounds.offsetBy(dx: t.velocity.width * dt, dy: t.velocity.height * dt)
    }

    /// Feeds one frame's detections (device space) taken at `time` from `inputID`; returns the
    /// events, in this order: `left` (faces gone), `entered` (new faces), `updated`.
    /// `holdsNewFaces` false lets new faces enter at once, whatever `framesToEnter` says (a
    /// still photo: there is no next frame to confirm it in).
    public mutating func update(
        with detections: [FaceDetection], at time: MediaTime, inputID: CaptureInput.ID, holdsNewFaces: Bool = true
    ) -> [Event] {
        let now = time.seconds
        let dense = lastFrameTime.map { now - $0 <= configuration.maximumHoldGap } ?? true
        lastFrameTime = now
        let framesToEnter = holdsNewFaces && dense ? max(1, configuration.framesToEnter) : 1
        var entered: [Event] = []
        lastUpdate = now
        let predicted = tracks.map { predictedBox($0, at: now) }
        var pairs: [(affinity: Double, track: Int, detection: Int)] = []
        for (ti, box) in predicted.enumerated() {
            for (di, d) in detections.enumerated() {
                let a = affinity(box, d.bounds)
                if a > 0 { pairs.append((a, ti, di)) }
            }
        }
        pairs.sort { $0.affinity > $1.affinity }
        var trackTaken = Set<Int>()
        var detectionTaken = Set<Int>()
        var updated: [Event] = []
        for p in pairs where !trackTaken.contains(p.track) && !detectionTaken.contains(p.detection) {
            trackTaken.insert(p.track)
            detectionTaken.insert(p.detection)
            var t = tracks[p.track]
            let d = detections[p.detection]
            let dt = now - t.lastSeen
            if dt > 0 {
                t.velocity = CGSize(
                    width: (d.bounds.midX - t.face.bounds.midX) / dt, height: (d.bounds.midY - t.face.bounds.midY) / dt)
                if let old = t.pixelBox, let new = d.pixelBox, old.space == new.space {
                    t.pixelVelocity = CGSize(
                        width: (new.bounds.midX - old.bounds.midX) / dt, height: (new.bounds.midY - old.bounds.midY) / dt)
                } else {
                    t.pixelVelocity = .zero
                }
            }
            t.pixelBox = d.pixelBox
            t.face = Self.object(d, faceID: t.face.faceID, time: time, inputID: inputID)
            t.lastSeen = now
            t.missedFrames = 0
            if let held = t.heldFrames {
                if held + 1 >= framesToEnter {
                    t.heldFrames = nil
                    t.face = Self.object(d, faceID: Self.nextID.add(1, ordering: .relaxed).oldValue, time: time, inputID: inputID)
                    t.lastReported = now
                    entered.append(.entered(t.face))
                } else {
                    t.heldFrames = held + 1
                }
            } else if now - t.lastReported >= configuration.updateInterval {
                t.lastReported = now
                updated.append(.updated(t.face))
            }
            tracks[p.track] = t
        }
        var left: [Event] = []
        var kept: [Track] = []
        for (i, var t) in tracks.enumerated() {
            if !trackTaken.contains(i) {
                // A face held back must be seen in consecutive frames: it goes without a word.
                if t.heldFrames != nil { continue }
                t.missedFrames += 1
                if t.missedFrames > configuration.maximumMissedFrames
                    || now - t.lastSeen > configuration.maximumMissedDuration
                {
                    left.append(.left(t.face))
                    continue
                }
            }
            kept.append(t)
        }
        tracks = kept
        for (di, d) in detections.enumerated() where !detectionTaken.contains(di) {
            let enters = framesToEnter <= 1
            // A face held back gets its faceID when it enters: IDs stay consecutive for what is reported.
            let id = enters ? Self.nextID.add(1, ordering: .relaxed).oldValue : 0
            let face = Self.object(d, faceID: id, time: time, inputID: inputID)
            tracks.append(
                Track(
                    face: face, velocity: CGSize.zero, pixelBox: d.pixelBox, lastSeen: now, missedFrames: 0,
                    lastReported: now, heldFrames: enters ? nil : 1))
            if enters { entered.append(.entered(face)) }
        }
        return left + entered + updated
    }

    /// The frames after the last update up to `time` were not analysed because nothing moved in
    /// them (motion gating, `AnalysisFrame.stillThrough`): that span does not count as time a
    /// face went unseen (`maximumMissedDuration`), and, nothing having moved, every track's
    /// velocity is zero. A person standing still keeps their `faceID` through idle analyses;
    /// one who walks away makes motion, so their frames are analysed and they leave as usual.
    public mutating func sceneWasStill(through time: MediaTime) {
        guard let last = lastUpdate else { return }
        let gap = time.seconds - last
        guard gap > 0 else { return }
        for i in tracks.indices {
            tracks[i].lastSeen += gap
            tracks[i].velocity = .zero
            tracks[i].pixelVelocity = .zero
        }
        lastUpdate = time.seconds
    }

    /// Ends every track (e.g. when the session stops): `left` events for all faces that entered
    /// (those still held back go without a word).
    public mutating func reset() -> [Event] {
        defer {
            tracks = []
            lastFrameTime = nil
            lastUpdate = nil
        }
        return tracks.filter { $0.heldFrames == nil }.map { .left($0.face) }
    }

    private func affinity(_ predicted: CGRect, _ detected: CGRect) -> Double {
        predicted.matchAffinity(
            detected, minimumIoU: configuration.minimumIoU, maximumCentreDistance: configuration.maximumCentreDistance)
    }

    private static func object(_ d: FaceDetection, faceID: Int, time: MediaTime, inputID: CaptureInput.ID)
        -> MetadataFaceObject
    {
        MetadataFaceObject(
            bounds: d.bounds, faceID: faceID, hasRollAngle: d.rollAngle != nil, rollAngle: d.rollAngle ?? 0,
            hasYawAngle: d.yawAngle != nil, yawAngle: d.yawAngle ?? 0, landmarks: d.landmarks,
            confidence: d.confidence, time: time, inputID: inputID)
    }
}
