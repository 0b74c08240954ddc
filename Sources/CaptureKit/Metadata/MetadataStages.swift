import Foundation

/// The face half of a metadata output's per-frame work: detect faces in one frame and keep
/// their tracks. The seam between `CaptureMetadataOutput` and a face detector (the default is
/// `FaceDetector` + `FaceTracker`; tests and users may plug their own).
///
/// Threading: called on the metadata output's face thread, one frame at a time, in capture
/// order; implementations need not be reentrant.
public protocol FaceMetadataStage: AnyObject, Sendable {
    /// Whether faces can be detected at all (a model loaded).
    var isAvailable: Bool { get }
    /// The face model the stage runs, for `CaptureMetadataOutput.faceDetectorModel` (the
    /// default: nil, not said).
    var faceDetectorModel: FaceDetectorModel? { get }
    /// Detects faces inside `regionOfInterest` (device space) of `frame`, matches them to the
    /// tracks so far, and returns the frame's faces (with `faceID`s) and the track events.
    /// `updateInterval`: the least time between two `faceUpdated` events of one track.
    /// `scanInterval`: the most frame time between two searches of the whole region; frames in
    /// between may be searched only where tracked faces are (0: search every frame whole).
    func process(
        _ frame: AnalysisFrame, regionOfInterest: CGRect, updateInterval: Double, scanInterval: Double
    ) throws(CaptureError) -> (faces: [MetadataFaceObject], events: [MetadataEvent])
    /// The stream ended: close every open track (their `faceLeft` events).
    func finish() -> [MetadataEvent]
    /// Frames of `width` × `height` are about to come: get ready so the first ones cost what
    /// later ones do (called before capture starts; the default does nothing).
    func prepare(width: Int, height: Int, regionOfInterest: CGRect)
}

extension FaceMetadataStage {
    public func prepare(width: Int, height: Int, regionOfInterest: CGRect) {}
    public var faceDetectorModel: FaceDetectorModel? { nil }
}

/// The code half of a metadata output's per-frame work: decode codes in one frame and decide
/// which are due for delivery (new appearances and repeats).
///
/// Threading: called on the metadata output's code thread, one frame at a time, in capture
/// order; implementations need not be reentrant.
public protocol CodeMetadataStage: AnyObject, Sendable {
    /// The code types the decoder supports at run time.
    var availableTypes: [MetadataObjectType] { get }
    /// Decodes codes of `types` inside `regionOfInterest` of `frame`; returns those due for
    /// delivery (new, or still in view `repeatInterval` seconds after the last delivery) and the
    /// matching events.
    func process(
        _ frame: AnalysisFrame, types: Set<MetadataObjectType>, regionOfInterest: CGRect, repeatInterval: Double
    ) throws(CaptureError) -> (codes: [MetadataMachineReadableCodeObject], events: [MetadataEvent])
    /// The stream ended: forget what is in view, returning its `codeLeft` events.
    func finish() -> [MetadataEvent]
}
