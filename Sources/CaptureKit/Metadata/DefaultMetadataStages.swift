import Foundation
import Synchronization

/// The default face stage: `FaceDetector` (YuNet 2022mar from Models/, Haar alt2 as the
/// fallback) followed by `FaceTracker`.
///
/// Whole-frame searches run at least every `scanInterval` of frame time (and on the first
/// frame, after `finish()`, when the region of interest changes, when time goes backwards, and
/// when a tracked face is too large to follow alone). The frames in between are searched only
/// near the tracked faces' predicted boxes (`FaceDetector.detect(in:near:regionOfInterest:)`),
/// and not at all when no face is tracked. So a tracked face is followed in every frame, and a
/// face that enters is found within `scanInterval`.
///
/// Threading: thread-safe (the tracker and the schedule are behind a Mutex; the detector
/// serialises itself); frames are expected one at a time, as the metadata output sends them.
public final class DefaultFaceStage: FaceMetadataStage {
    /// The detector.
    public let detector: FaceDetector
    private struct State {
        var tracker: FaceTracker
        var lastScan: Double?
        var lastRegion: CGRect?
        var wholeFrameSearches = 0
        var nearSearches = 0
    }
    private let state: Mutex<State>

    /// Wraps a detector and a tracker configuration.
    public init(detector: FaceDetector, tracking: FaceTracker.Configuration = .init()) {
        self.detector = detector
        state = Mutex(State(tracker: FaceTracker(configuration: tracking)))
    }

    /// The default stage with `configuration`, or nil (logged by the detector) when no face model loads.
    static func makeOrNil(_ configuration: FaceDetector.Configuration) -> (any FaceMetadataStage)? {
        (try? FaceDetector(configuration: configuration)).map { DefaultFaceStage(detector: $0) }
    }

    public var isAvailable: Bool { true }

    /// Frames searched whole, and frames searched only near tracked faces, so far.
    public var searchCounts: (wholeFrame: Int, nearTrackedFaces: Int) {
        state.withLock { ($0.wholeFrameSearches, $0.nearSearches) }
    }

    public func process(
        _ image: PixelBuffer, regionOfInterest: CGRect, time: MediaTime, inputID: CaptureInput.ID,
        updateInterval: Double, scanInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent]) {
        let now = time.seconds
        let (scanDue, tracked) = state.withLock { s -> (Bool, [CGRect]) in
            // A millisecond of slack: 3/30 s after the last scan is "0.1 s later".
            let due =
                s.lastScan.map { last in now < last || now - last >= scanInterval - 0.001 } ?? true
                || s.lastRegion != regionOfInterest
            return (due, due ? [] : s.tracker.predictedBounds(at: time))
        }
        var detections: [FaceDetection] = []
        var searchedWhole = scanDue
        if !scanDue, !tracked.isEmpty {
            if let near = try detector.detect(in: image, near: tracked, regionOfInterest: regionOfInterest) {
                detections = near
            } else {
                searchedWhole = true
            }
        }
        if searchedWhole {
            detections = try detector.detect(in: image, regionOfInterest: regionOfInterest)
        }
        return state.withLock { s in
            if searchedWhole {
                s.lastScan = now
                s.lastRegion = regionOfInterest
                s.wholeFrameSearches += 1
            } else if !tracked.isEmpty {
                s.nearSearches += 1
            }
            s.tracker.configuration.updateInterval = updateInterval
            let events = s.tracker.update(with: detections, at: time, inputID: inputID).map(Self.event)
            // Faces seen in this frame (tracks briefly missed are not reported for it).
            return (s.tracker.faces.filter { $0.time == time }, events)
        }
    }

    public func finish() -> [MetadataEvent] {
        state.withLock { s in
            s.lastScan = nil
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

    static func makeOrNil() -> (any CodeMetadataStage)? {
        (try? CodeDetector()).map { DefaultCodeStage(detector: $0) }
    }

    public var availableTypes: [MetadataObjectType] {
        MetadataObjectType.machineReadableCodeTypes.filter { CodeDetector.availableMetadataObjectTypes.contains($0) }
    }

    public func process(
        _ image: PixelBuffer, types: Set<MetadataObjectType>, regionOfInterest: CGRect, time: MediaTime,
        inputID: CaptureInput.ID, repeatInterval: Double
    ) throws(CaptureError) -> (codes: [MetadataMachineReadableCodeObject], events: [MetadataEvent]) {
        if detector.metadataObjectTypes != types { detector.metadataObjectTypes = types }
        if detector.rectOfInterest != regionOfInterest { detector.rectOfInterest = regionOfInterest }
        let found = try detector.detect(in: image, time: time, inputID: inputID)
        let due = tracker.withLock { tracker in
            tracker.repeatInterval = repeatInterval.isFinite ? repeatInterval : nil
            return tracker.deliveries(found, at: time)
        }
        return (due.map(\.code), due.map { $0.isNewAppearance ? .codeAppeared($0.code) : .codeRepeated($0.code) })
    }

    public func finish() {
        tracker.withLock { $0.reset() }
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
/// Threading: `process` runs on the metadata output's face queue, one frame at a time, and
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

    public func process(
        _ image: PixelBuffer, regionOfInterest: CGRect, time: MediaTime, inputID: CaptureInput.ID, updateInterval: Double,
        scanInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent]) {
        let result = try inner.process(
            image, regionOfInterest: regionOfInterest, time: time, inputID: inputID, updateInterval: updateInterval,
            scanInterval: scanInterval)
        let frame = SampleBuffer(
            pixelBuffer: image, presentationTimeStamp: time, duration: .zero, sequenceNumber: sequence, inputID: inputID)
        sequence += 1
        observer(frame, result.faces)
        return result
    }

    public func finish() -> [MetadataEvent] { inner.finish() }
}
