import Foundation

/// Why a snapshot was taken.
public enum SnapshotReason: String, Codable, Hashable, Sendable {
    /// A face track appeared (a faceID not seen before passed the gates).
    case newFace
    /// A face that already triggered is still present after `faceCooldown`.
    case faceCooldownElapsed
    /// Faces were present and `interval` seconds passed since the last periodic snapshot.
    case interval
}

/// A photo the trigger decided to take: the chosen frame at the input's full resolution, the
/// frames before it, and the record of why.
///
/// Value type; thread-safe.
public struct Snapshot: Sendable {
    /// The chosen frame (the sharpest, most frontal of the best-frame window).
    public var frame: SampleBuffer
    /// Up to `preTriggerFrameCount` frames that came just before `frame`, oldest first.
    public var precedingFrames: [SampleBuffer]
    /// Every face found in `frame`.
    public var faces: [MetadataFaceObject]
    /// The faces that caused the snapshot.
    public var triggeringFaceIDs: [Int]
    /// Why it was taken.
    public var reason: SnapshotReason
    /// The record stored with the photo: time, faceIDs, boxes, scores, reason, and the choice's
    /// figures (`sharpness`, `frontalness`, `framesConsidered`, `triggerTime` of the first
    /// qualifying frame).
    public var annotation: PhotoAnnotation
}

/// Decides when to take face-triggered snapshots (`cvcam watch`): pure logic over frames and the
/// face objects found in them, so it runs (and is tested) without a detector or a session.
///
/// Per frame, a face qualifies when it passes every gate: size, confidence, roll and yaw
/// limits, and the sharpness of its box. Then:
/// - `.newFace`: a faceID qualifying for the first time opens a best-frame window of
///   `bestFrameWindow` qualifying frames; at its end (or when the face leaves) the frame with the
///   highest sharpness × frontalness is the snapshot. With `faceCooldown` set, a face still
///   present that long after its snapshot triggers again.
/// - `.interval(seconds)`: while qualifying faces are present, a window opens every `seconds`.
/// A window opens only when the global cooldown and the per-window maximum allow a snapshot;
/// if a face's window is refused, the face keeps trying on later frames while it qualifies.
/// Time is the frames' presentation time, so results are deterministic.
///
/// Threading: not thread-safe; feed it from one queue (the metadata output's delegate queue).
public final class SnapshotTrigger {
    /// What triggers snapshots and the gates a face must pass.
    public struct Configuration: Hashable, Sendable {
        /// When to take snapshots.
        public enum Mode: Hashable, Sendable {
            /// When a face track appears.
            case newFace
            /// Every `seconds` while faces are present.
            case interval(seconds: Double)
        }
        public var mode: Mode
        /// Smallest face box height, as a fraction of the frame height (device space).
        public var minimumFaceSize: Double
        /// Smallest detector confidence.
        public var minimumConfidence: Double
        /// Largest |roll| in degrees, for faces that report roll; nil: no limit.
        public var maximumRollAngle: Double?
        /// Largest |yaw| in degrees, for faces that report yaw; nil: no limit.
        public var maximumYawAngle: Double?
        /// Smallest variance of the Laplacian over the face box; nil: no sharpness gate.
        public var minimumSharpness: Double?
        /// Qualifying frames considered before choosing (1: take the first).
        public var bestFrameWindow: Int
        /// Seconds before a face that triggered may trigger again while it stays; nil: once per track.
        public var faceCooldown: Double?
        /// Seconds after any snapshot during which no other is taken.
        public var globalCooldown: Double
        /// Frames kept from before the chosen frame.
        public var preTriggerFrameCount: Int
        /// At most this many snapshots in any `snapshotWindow` seconds; nil: no limit.
        public var maximumSnapshotsPerWindow: Int?
        /// The window for `maximumSnapshotsPerWindow`, in seconds.
        public var snapshotWindow: Double

        /// Creates a configuration; the defaults take one snapshot per new face.
        public init(
            mode: Mode = .newFace, minimumFaceSize: Double = 0.05, minimumConfidence: Double = 0.6,
            maximumRollAngle: Double? = 30, maximumYawAngle: Double? = 45, minimumSharpness: Double? = nil,
            bestFrameWindow: Int = 1, faceCooldown: Double? = nil, globalCooldown: Double = 0,
            preTriggerFrameCount: Int = 0, maximumSnapshotsPerWindow: Int? = nil, snapshotWindow: Double = 60
        ) {
            self.mode = mode
            self.minimumFaceSize = minimumFaceSize
            self.minimumConfidence = minimumConfidence
            self.maximumRollAngle = maximumRollAngle
            self.maximumYawAngle = maximumYawAngle
            self.minimumSharpness = minimumSharpness
            self.bestFrameWindow = bestFrameWindow
            self.faceCooldown = faceCooldown
            self.globalCooldown = globalCooldown
            self.preTriggerFrameCount = preTriggerFrameCount
            self.maximumSnapshotsPerWindow = maximumSnapshotsPerWindow
            self.snapshotWindow = snapshotWindow
        }
    }

    /// The configuration in use.
    public let configuration: Configuration

    private struct Candidate {
        var frame: SampleBuffer
        var preceding: [SampleBuffer]
        var faces: [MetadataFaceObject]
        var sharpness: Double
        var frontalness: Double
        var score: Double { sharpness * frontalness }
    }
    private struct Window {
        var faceIDs: [Int]
        var reason: SnapshotReason
        var candidates: [Candidate] = []
        var openedAt: Double
    }

    private var ring: [SampleBuffer] = []
    private var seenFaceIDs = Set<Int>()
    private var lastSnapshotOfFace: [Int: Double] = [:]
    private var windows: [Window] = []
    private var snapshotTimes: [Double] = []
    private var lastIntervalStart: Double?
    private let converter = FrameConverter()

    /// Creates a trigger.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Feeds one frame and the faces found in it; returns the snapshots decided now (usually
    /// none, at most one per window that ends).
    public func process(_ frame: SampleBuffer, faces: [MetadataFaceObject]) -> [Snapshot] {
        let t = frame.presentationTimeStamp.seconds
        let measured = faces.map { face in (face, measure(face, in: frame)) }
        let qualifying = measured.filter { passes($0.0, sharpness: $0.1) }
        let qualifyingIDs = Set(qualifying.map(\.0.faceID))
        var out: [Snapshot] = []

        // Windows whose faces all left end now, on what they collected.
        var still: [Window] = []
        for w in windows {
            let present = w.reason == .interval ? !qualifyingIDs.isEmpty : w.faceIDs.contains(where: qualifyingIDs.contains)
            if present { still.append(w) } else if let s = decide(w) { out.append(s) }
        }
        windows = still

        // Open new windows.
        switch configuration.mode {
        case .newFace:
            for (face, _) in qualifying where !windows.contains(where: { $0.faceIDs.contains(face.faceID) }) {
                let reason: SnapshotReason
                if !seenFaceIDs.contains(face.faceID) {
                    reason = .newFace
                } else if let cooldown = configuration.faceCooldown, let last = lastSnapshotOfFace[face.faceID],
                    t - last >= cooldown
                {
                    reason = .faceCooldownElapsed
                } else {
                    continue
                }
                guard mayTakeSnapshot(at: t) else { continue }
                seenFaceIDs.insert(face.faceID)
                windows.append(Window(faceIDs: [face.faceID], reason: reason, openedAt: t))
            }
        case .interval(let seconds):
            if !qualifying.isEmpty, windows.isEmpty, lastIntervalStart.map({ t - $0 >= seconds }) ?? true,
                mayTakeSnapshot(at: t)
            {
                lastIntervalStart = t
                windows.append(Window(faceIDs: qualifying.map(\.0.faceID), reason: .interval, openedAt: t))
            }
        }

        // Every open window considers this frame; full windows decide.
        var open: [Window] = []
        for var w in windows {
            let own = qualifying.filter { w.reason == .interval || w.faceIDs.contains($0.0.faceID) }
            if !own.isEmpty {
                let sharpness = own.map { $0.1 ?? 1 }.min() ?? 1
                let frontalness = own.map { Self.frontalness($0.0) }.min() ?? 1
                w.candidates.append(
                    Candidate(frame: frame, preceding: ring, faces: faces, sharpness: sharpness, frontalness: frontalness))
            }
            if w.candidates.count >= max(1, configuration.bestFrameWindow) {
                if let s = decide(w) { out.append(s) }
            } else {
                open.append(w)
            }
        }
        windows = open

        if configuration.preTriggerFrameCount > 0 {
            ring.append(frame)
            if ring.count > configuration.preTriggerFrameCount { ring.removeFirst(ring.count - configuration.preTriggerFrameCount) }
        }
        return Self.merged(out)
    }

    /// Ends every open window (end of input); returns the snapshots they decide.
    public func finish() -> [Snapshot] {
        let pending = windows
        windows = []
        return Self.merged(pending.compactMap(decide))
    }

    /// Snapshots taken so far, by presentation time (seconds).
    public var snapshotTimeStamps: [Double] { snapshotTimes }

    // MARK: Rules

    private func mayTakeSnapshot(at t: Double) -> Bool {
        if let last = snapshotTimes.last, t - last < configuration.globalCooldown { return false }
        if let limit = configuration.maximumSnapshotsPerWindow {
            let recent = snapshotTimes.filter { t - $0 < configuration.snapshotWindow }.count
            if recent >= limit { return false }
        }
        return true
    }

    /// Picks the best candidate (highest sharpness × frontalness, earliest on ties) and records it.
    private func decide(_ w: Window) -> Snapshot? {
        guard var best = w.candidates.first else { return nil }
        for c in w.candidates.dropFirst() where c.score > best.score { best = c }
        let t = best.frame.presentationTimeStamp.seconds
        // Another window may have taken a snapshot since this one opened.
        if let last = snapshotTimes.last, last != t, !mayTakeSnapshot(at: t) { return nil }
        if snapshotTimes.last != t { snapshotTimes.append(t) }
        for id in w.faceIDs { lastSnapshotOfFace[id] = t }
        let annotation = PhotoAnnotation(
            reason: w.reason.rawValue, frameTime: t, faces: best.faces,
            details: [
                "sharpness": best.sharpness, "frontalness": best.frontalness,
                "framesConsidered": Double(w.candidates.count), "triggerTime": w.openedAt,
            ])
        return Snapshot(
            frame: best.frame, precedingFrames: best.preceding, faces: best.faces, triggeringFaceIDs: w.faceIDs,
            reason: w.reason, annotation: annotation)
    }

    /// Snapshots of the same frame become one, naming every triggering face.
    private static func merged(_ list: [Snapshot]) -> [Snapshot] {
        var out: [Snapshot] = []
        for s in list {
            if let i = out.firstIndex(where: { $0.frame.sequenceNumber == s.frame.sequenceNumber }) {
                out[i].triggeringFaceIDs += s.triggeringFaceIDs.filter { !out[i].triggeringFaceIDs.contains($0) }
            } else {
                out.append(s)
            }
        }
        return out
    }

    private func passes(_ face: MetadataFaceObject, sharpness: Double?) -> Bool {
        let c = configuration
        if face.bounds.height < c.minimumFaceSize || face.confidence < c.minimumConfidence { return false }
        if let limit = c.maximumRollAngle, face.hasRollAngle, abs(face.rollAngle) > limit { return false }
        if let limit = c.maximumYawAngle, face.hasYawAngle, abs(face.yawAngle) > limit { return false }
        if let limit = c.minimumSharpness, (sharpness ?? 0) < limit { return false }
        return true
    }

    /// cos(yaw)·cos(roll), 1 for a face looking straight at the camera (unknown angles count as 0°).
    static func frontalness(_ face: MetadataFaceObject) -> Double {
        let yaw = face.hasYawAngle ? face.yawAngle : 0
        let roll = face.hasRollAngle ? face.rollAngle : 0
        return max(0, cos(yaw * .pi / 180)) * max(0, cos(roll * .pi / 180))
    }

    /// The face box's sharpness, when a gate or the best-frame choice needs it.
    private func measure(_ face: MetadataFaceObject, in frame: SampleBuffer) -> Double? {
        guard configuration.minimumSharpness != nil || configuration.bestFrameWindow > 1 else { return nil }
        return try? Self.sharpness(of: frame.pixelBuffer, in: face.bounds, converter: converter)
    }

    /// Variance of the Laplacian over `rect` (device space) of `buffer`
    /// (`Imaging.laplacianVariance`). YUYV and NV12 are measured on their luma.
    public static func sharpness(of buffer: PixelBuffer, in rect: CGRect) throws(CaptureError) -> Double {
        try sharpness(of: buffer, in: rect, converter: FrameConverter())
    }

    static func sharpness(of buffer: PixelBuffer, in rect: CGRect, converter: FrameConverter) throws(CaptureError) -> Double {
        var measured = buffer
        if buffer.pixelFormat == .yuyv || buffer.pixelFormat == .nv12 {
            let sample = SampleBuffer(
                pixelBuffer: buffer, presentationTimeStamp: .zero, duration: .zero, sequenceNumber: 0,
                inputID: CaptureInput.ID(rawValue: 0))
            measured = try converter.convert(sample, to: .gray, rotation: 0, mirrored: false).pixelBuffer
        }
        guard let box = DeviceSpace(measured).wholePixels(rect) else {
            throw CaptureError(.conversionFailed, "measuring sharpness failed: the rectangle lies outside the image")
        }
        return try Imaging.laplacianVariance(measured, in: box, "measuring sharpness failed")
    }
}
