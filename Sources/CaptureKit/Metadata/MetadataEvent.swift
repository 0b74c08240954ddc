/// A change in what a `CaptureMetadataOutput` sees, for consumers that want one line per
/// appearance rather than AVFoundation's per-frame object lists.
///
/// Value type; thread-safe.
public enum MetadataEvent: Sendable {
    /// A new face track began (a new `faceID`).
    case faceEntered(MetadataFaceObject)
    /// A tracked face, at most once per `CaptureMetadataOutput.faceUpdateInterval`.
    case faceUpdated(MetadataFaceObject)
    /// A face track ended; the object is the face as last seen.
    case faceLeft(MetadataFaceObject)
    /// A code came into view (once per appearance).
    case codeAppeared(MetadataMachineReadableCodeObject)
    /// A code still in view after `CaptureMetadataOutput.codeRepeatInterval`.
    case codeRepeated(MetadataMachineReadableCodeObject)
    /// A code went out of view (unseen for `CodeTracker.gracePeriod`, or the stream ended); the
    /// object is the code as last seen.
    case codeLeft(MetadataMachineReadableCodeObject)
    /// Something began to move (`CaptureMetadataOutput.motionDetection`; AVFoundation has no
    /// motion events): the first frame of a motion.
    case motionStarted(MetadataMotionObject)
    /// Nothing moved for `MotionDetection.endDelay`, or the stream ended; the object is the last
    /// frame that moved.
    case motionEnded(MetadataMotionObject)

    /// The object the event is about.
    public var object: any MetadataObject {
        switch self {
        case .faceEntered(let f), .faceUpdated(let f), .faceLeft(let f): f
        case .codeAppeared(let c), .codeRepeated(let c), .codeLeft(let c): c
        case .motionStarted(let m), .motionEnded(let m): m
        }
    }

    /// A short name: "enter", "update", "leave" (faces and codes), "appear", "repeat", "start" and
    /// "end" (motion). cvcam prints it as the `event` of its face, code and motion lines, so the
    /// names live only here.
    public var name: String {
        switch self {
        case .faceEntered: "enter"
        case .faceUpdated: "update"
        case .faceLeft, .codeLeft: "leave"
        case .codeAppeared: "appear"
        case .codeRepeated: "repeat"
        case .motionStarted: "start"
        case .motionEnded: "end"
        }
    }
}
