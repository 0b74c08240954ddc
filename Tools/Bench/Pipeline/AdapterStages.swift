import CaptureKit
import Foundation

// While CaptureMetadataOutput's default stages are not wired to the detectors (main still has
// `_TemporaryStages.swift`), the benchmark plugs the library's own detectors and trackers in
// through the public stage protocols: FaceDetector + FaceTracker, CodeDetector + CodeTracker.
// Results say which stages ran ("stages_source").

/// `FaceDetector` (standard configuration) + `FaceTracker` as a face stage.
final class DetectorFaceStage: FaceMetadataStage, @unchecked Sendable {
    // @unchecked: `tracker` is touched only by the metadata output's detection queue, one frame
    // at a time (the stage protocol's rule).
    let detector: FaceDetector
    private var tracker = FaceTracker()

    init() throws {
        guard let models = FaceDetector.locateModels() else { throw BenchError("cannot find Models/") }
        detector = try FaceDetector(
            yuNetModel: models.appendingPathComponent(FaceDetector.yuNetModelName),
            haarCascade: models.appendingPathComponent(FaceDetector.haarCascadeName))
    }

    var isAvailable: Bool { true }

    func process(
        _ image: PixelBuffer, regionOfInterest: CGRect, time: MediaTime, inputID: CaptureInput.ID, updateInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent]) {
        let found = try detector.detect(in: image, regionOfInterest: regionOfInterest)
        let events = tracker.update(with: found, at: time, inputID: inputID)
        return (tracker.faces, events.map(Self.event))
    }

    func finish() -> [MetadataEvent] { tracker.reset().map(Self.event) }

    static func event(_ e: FaceTracker.Event) -> MetadataEvent {
        switch e {
        case .entered(let f): .faceEntered(f)
        case .updated(let f): .faceUpdated(f)
        case .left(let f): .faceLeft(f)
        }
    }
}

/// `CodeDetector` + `CodeTracker` as a code stage.
final class DetectorCodeStage: CodeMetadataStage, @unchecked Sendable {
    // @unchecked: `tracker` and `lastInterval` are touched only by the detection queue.
    let detector: CodeDetector
    private var tracker = CodeTracker()
    private var lastInterval: Double = 2

    init() throws { detector = try CodeDetector(metadataObjectTypes: [.qr]) }

    var availableTypes: [MetadataObjectType] { [.qr] }

    func process(
        _ image: PixelBuffer, types: Set<MetadataObjectType>, regionOfInterest: CGRect, time: MediaTime,
        inputID: CaptureInput.ID, repeatInterval: Double
    ) throws(CaptureError) -> (codes: [MetadataMachineReadableCodeObject], events: [MetadataEvent]) {
        if repeatInterval != lastInterval {
            tracker = CodeTracker(repeatInterval: repeatInterval.isFinite ? repeatInterval : nil)
            lastInterval = repeatInterval
        }
        detector.rectOfInterest = regionOfInterest
        let found = try detector.detect(in: image, time: time, inputID: inputID)
        let due = tracker.update(found, at: time)
        // An appearance: the payload was not seen within the tracker's grace period (0.5 s).
        let t = time.seconds
        let events: [MetadataEvent] = due.map { code in
            if let seen = lastSeen[code.payload], t - seen <= 0.5 { .codeRepeated(code) } else { .codeAppeared(code) }
        }
        for code in found { lastSeen[code.payload] = t }
        lastSeen = lastSeen.filter { t - $0.value <= 0.5 }
        return (due, events)
    }

    private var lastSeen: [[UInt8]: Double] = [:]

    func finish() {
        tracker.reset()
        lastSeen = [:]
    }
}
