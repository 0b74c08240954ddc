import Foundation
import Synchronization

/// The default face stage: `FaceDetector` (YuNet-n 2023 from Models/, Haar alt2 as the
/// fallback) followed by `FaceTracker` (`FaceTracker.Configuration.video`: in video a new face
/// enters once seen in 3 consecutive frames; a still photo's faces enter at once).
///
/// A whole-frame search begins every `scanInterval` of frame time. On video whose frames come
/// at least three per `scanInterval` (with a quarter of slack: 25 fps and faster at the default
/// 0.1 s), one search is spread over three consecutive frames (`FaceDetector.ScanPart`:
/// coarse, upper half, lower half), so no frame pays for a whole search; otherwise (slower
/// video, `.tiled` detection, a scan interval of 0) each search is done whole in one frame.
/// The first frame, a frame after `finish()`, a changed region of interest and time going
/// backwards get a whole search at once. In every frame the tracked faces are also followed
/// near their predicted boxes, kept in pixels by the tracker (`FaceDetector.detect(in:nearPixels:)`; a face too
/// large for that gets a whole search instead), so they are reported in every frame, and a
/// face that enters is found within `scanInterval` plus three frames.
///
/// Threading: thread-safe (the tracker and the schedule are behind a Mutex; the detector
/// serialises itself); frames are expected one at a time, as the metadata output sends them.
public final class DefaultFaceStage: FaceMetadataStage {
    /// The detector.
    public let detector: FaceDetector
    private struct State {
        var tracker: FaceTracker
        var lastScanStart: Double?
        var lastFrame: Double?
        var lastRegion: CGRect?
        var pendingParts: [FaceDetector.ScanPart] = []
        var counts = SearchCounts()
    }
    private let state: Mutex<State>

    /// How often each kind of search ran: frames searched whole, spread-search parts, and
    /// frames in which tracked faces were followed.
    public struct SearchCounts: Sendable, Hashable {
        /// Frames searched whole.
        public var wholeFrame: Int
        /// Parts of spread searches (one per frame).
        public var parts: Int
        /// Frames in which tracked faces were followed.
        public var nearTrackedFaces: Int

        /// Creates counts.
        public init(wholeFrame: Int = 0, parts: Int = 0, nearTrackedFaces: Int = 0) {
            self.wholeFrame = wholeFrame
            self.parts = parts
            self.nearTrackedFaces = nearTrackedFaces
        }
    }

    /// Wraps a detector and a tracker configuration.
    public init(detector: FaceDetector, tracking: FaceTracker.Configuration = .video) {
        self.detector = detector
        state = Mutex(State(tracker: FaceTracker(configuration: tracking)))
    }

    public var isAvailable: Bool { true }

    /// The detector's model (`FaceDetector.model`).
    public var faceDetectorModel: FaceDetectorModel? { detector.model }

    /// The searches run so far.
    public var searchCounts: SearchCounts { state.withLock { $0.counts } }

    private enum Search { case whole, part(FaceDetector.ScanPart), none }

    public func process(
        _ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent]) {
        let time = frame.time, inputID = frame.inputID
        let now = time.seconds
        let canSpread = detector.configuration.tileSize == nil
        // Tracked faces are followed in pixels of this frame, as the tracker keeps them.
        let space = DeviceSpace(frame.pixelBuffer)
        let stillThrough = frame.stillThrough
        let (planned, tracked) = state.withLock { s -> (Search, [CGRect]) in
            defer { s.lastFrame = now }
            if let stillThrough { s.tracker.sceneWasStill(through: stillThrough) }
            let restart = s.lastScanStart.map { now < $0 } ?? true || s.lastRegion != regionOfInterest
            if restart { s.pendingParts = [] }
            // A millisecond of slack: 3/30 s after the last start is "0.1 s later".
            let due = restart || now - (s.lastScanStart ?? now) >= scanInterval - 0.001
            if s.pendingParts.isEmpty, due {
                s.lastScanStart = now
                s.lastRegion = regionOfInterest
                let step = s.lastFrame.map { now - $0 } ?? 0
                if !restart, canSpread, scanInterval > 0, step > 0, 3 * step <= 1.25 * scanInterval {
                    s.pendingParts = FaceDetector.ScanPart.allCases
                } else {
                    return (.whole, [])
                }
            }
            let tracked =
                s.tracker.predictedPixelBounds(at: time, in: space)
                ?? s.tracker.predictedBounds(at: time).map(space.pixelRect(fromDevice:))
            return s.pendingParts.isEmpty ? (.none, tracked) : (.part(s.pendingParts.removeFirst()), tracked)
        }
        var search = planned
        // Every search of this frame reads the one BGR view (the frame converted at most once).
        let image = try frame.bgr()
        var followed: [FaceDetection]?
        var fellBack = false
        // (A whole search comes with no tracked boxes: it finds every face itself.)
        if !tracked.isEmpty {
            followed = try detector.detect(in: image, nearPixels: tracked, regionOfInterest: regionOfInterest)
            // nil: a face too large to follow; a whole search replaces the spread one.
            if followed == nil {
                search = .whole
                fellBack = true
            }
        }
        let detections: [FaceDetection]
        switch search {
        case .whole: detections = try detector.detect(in: image, regionOfInterest: regionOfInterest)
        case .part(let part):
            detections = Self.merge(
                followed ?? [], try detector.detect(in: image, regionOfInterest: regionOfInterest, part: part))
        case .none: detections = followed ?? []
        }
        return state.withLock { s in
            switch search {
            case .whole:
                s.counts.wholeFrame += 1
                if fellBack {
                    s.pendingParts = []
                    s.lastScanStart = now
                }
            case .part: s.counts.parts += 1
            case .none: break
            }
            if followed != nil { s.counts.nearTrackedFaces += 1 }
            s.tracker.configuration.updateInterval = updateInterval
            let events = s.tracker.update(with: detections, at: time, inputID: inputID, holdsNewFaces: !frame.isIndependentStill)
                .map(Self.event)
            // Faces seen in this frame (tracks briefly missed are not reported for it).
            return (s.tracker.faces.filter { $0.time == time }, events)
        }
    }

    /// Warms the detector up for the frame size (`FaceDetector.prepare`); a failure is left
    /// for the first frame to report.
    public func prepare(width: Int, height: Int, regionOfInterest: CGRect) {
        try? detector.prepare(width: width, height: height, regionOfInterest: regionOfInterest)
    }

    /// Faces followed near their tracks plus those a search part found; where both found the
    /// same face (IoU > 0.3), the more confident detection.
    static func merge(_ a: [FaceDetection], _ b: [FaceDetection]) -> [FaceDetection] {
        var kept: [FaceDetection] = []
        for f in (a + b).sorted(by: { $0.confidence > $1.confidence })
        where !kept.contains(where: { $0.bounds.intersectionOverUnion(f.bounds) > 0.3 }) {
            kept.append(f)
        }
        return kept
    }

    public func finish() -> [MetadataEvent] {
        state.withLock { s in
            s.lastScanStart = nil
            s.lastFrame = nil
            s.pendingParts = []
            return s.tracker.reset()
        }.map(Self.event)
    }

    private static func event(_ e: FaceTracker.Event) -> MetadataEvent {
        switch e {
        case .entered(let f): .faceEntered(f)
        case .updated(let f): .faceUpdated(f)
        case .left(let f): .faceLeft(f)
        }
    }
}

/// The default code stage: `CodeDetector` (ZBar helped by OpenCV) followed by `CodeTracker`.
///
/// Threading: thread-safe (the tracker is behind a Mutex; the detector serialises itself).
public final class DefaultCodeStage: CodeMetadataStage {
    /// The detector.
    public let detector: CodeDetector
    private let tracker = Mutex(CodeTracker())

    /// Wraps a detector.
    public init(detector: CodeDetector) {
        self.detector = detector
    }

    public var availableTypes: [MetadataObjectType] { Self.supportedTypes }

    /// The code types the linked decoders support (known without building a detector).
    static var supportedTypes: [MetadataObjectType] {
        MetadataObjectType.machineReadableCodeTypes.filter { CodeDetector.availableMetadataObjectTypes.contains($0) }
    }

    public func process(
        _ frame: AnalysisFrame, types: Set<MetadataObjectType>, regionOfInterest: CGRect, repeatInterval: Double
    ) throws(CaptureError) -> (codes: [MetadataMachineReadableCodeObject], events: [MetadataEvent]) {
        if detector.metadataObjectTypes != types { detector.metadataObjectTypes = types }
        if detector.rectOfInterest != regionOfInterest { detector.rectOfInterest = regionOfInterest }
        let time = frame.time
        let found = try detector.detect(in: try frame.gray(), time: time, inputID: frame.inputID)
        let stillThrough = frame.stillThrough
        let changes = tracker.withLock { tracker in
            if let stillThrough { tracker.sceneWasStill(through: stillThrough) }
            tracker.repeatInterval = repeatInterval.isFinite ? repeatInterval : nil
            return tracker.changes(found, at: time)
        }
        var due: [MetadataMachineReadableCodeObject] = []
        let events = changes.map { change -> MetadataEvent in
            switch change {
            case .appeared(let code):
                due.append(code)
                return .codeAppeared(code)
            case .repeated(let code):
                due.append(code)
                return .codeRepeated(code)
            case .left(let code): return .codeLeft(code)
            }
        }
        return (due, events)
    }

    public func finish() -> [MetadataEvent] {
        tracker.withLock { $0.finish() }.map { .codeLeft($0) }
    }
}

/// A face stage that runs another one and then hands each analysed frame, with exactly the
/// faces found in it, to `observer`: what a face-triggered snapshot needs (`SnapshotTrigger`
/// wants every analysed frame, also those without faces, which close best-frame windows).
///
/// Why a stage rather than pairing a video data output with the metadata output: the metadata
/// delegate is only called for frames with faces, so face-free frames could not be told apart
/// from frames the detector skipped. Here the pairing is exact by construction, for files and
/// live cameras alike: the image and its faces come from the same `process` call. Frames the
/// metadata output skips (live input, detector busy) are never observed.
///
/// Threading: `process` runs on the metadata output's face thread, one frame at a time, and
/// calls `observer` there; an observer with slow work (JPEG encoding) should hand it to its
/// own queue so detection is not held up.
public final class FaceObservingStage: FaceMetadataStage, @unchecked Sendable {
    // @unchecked: `sequence` is only touched in `process`, which the metadata output calls one
    // frame at a time; `inner` and `observer` are Sendable.
    let inner: any FaceMetadataStage
    let observer: @Sendable (SampleBuffer, [MetadataFaceObject]) -> Void
    private var sequence: UInt64 = 0

    /// Wraps `inner`; `observer` gets each analysed frame (numbered from 0 in analysis order)
    /// and its faces.
    public init(wrapping inner: any FaceMetadataStage, observer: @escaping @Sendable (SampleBuffer, [MetadataFaceObject]) -> Void) {
        self.inner = inner
        self.observer = observer
    }

    public var isAvailable: Bool { inner.isAvailable }

    public var faceDetectorModel: FaceDetectorModel? { inner.faceDetectorModel }

    public func process(
        _ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent]) {
        let result = try inner.process(
            frame, regionOfInterest: regionOfInterest, updateInterval: updateInterval, scanInterval: scanInterval)
        let observed = SampleBuffer(
            pixelBuffer: frame.pixelBuffer, presentationTimeStamp: frame.time, duration: .zero, sequenceNumber: sequence,
            inputID: frame.inputID)
        sequence += 1
        observer(observed, result.faces)
        return result
    }

    public func finish() -> [MetadataEvent] { inner.finish() }

    public func prepare(width: Int, height: Int, regionOfInterest: CGRect) {
        inner.prepare(width: width, height: height, regionOfInterest: regionOfInterest)
    }
}
