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

    /// The object the event is about.
    public var object: any MetadataObject {
        switch self {
        case .faceEntered(let f), .faceUpdated(let f), .faceLeft(let f): f
        case .codeAppeared(let c), .codeRepeated(let c), .codeLeft(let c): c
        }
    }

    /// A short name: "enter", "update", "leave" (faces and codes), "appear", "repeat". cvcam prints it as the
    /// `event` of its face and code lines, so the names live only here.
    public var name: String {
        switch self {
        case .faceEntered: "enter"
        case .faceUpdated: "update"
        case .faceLeft, .codeLeft: "leave"
        case .codeAppeared: "appear"
        case .codeRepeated: "repeat"
        }
    }
}
