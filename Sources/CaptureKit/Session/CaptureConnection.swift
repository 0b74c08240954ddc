import Synchronization

/// The link between a session's input and one of its outputs (`AVCaptureConnection`), made
/// automatically when both are in a session.
///
/// Rotation and mirroring apply to the pixels a video data output delivers (and to photos and
/// movies). Metadata stays in device space (DESIGN.md); `CaptureVideoPreviewLayer` reads them
/// to convert coordinates.
///
/// Threading: thread-safe. Changes apply from the next frame.
public final class CaptureConnection: Sendable {
    /// The input side.
    public let inputID: CaptureInput.ID
    /// The kind of media carried.
    public let mediaType: CaptureDevice.MediaType

    private struct State {
        var isEnabled = true
        var videoRotationAngle = 0.0
        var isVideoMirrored = false
        weak var output: CaptureOutput?
    }
    private let state: Mutex<State>

    init(inputID: CaptureInput.ID, output: CaptureOutput, mediaType: CaptureDevice.MediaType = .video) {
        self.inputID = inputID
        self.mediaType = mediaType
        state = Mutex(State(output: output))
    }

    /// The output side (nil once the output is gone).
    public var output: CaptureOutput? { state.withLock { $0.output } }

    /// Whether frames flow through this connection.
    public var isEnabled: Bool {
        get { state.withLock { $0.isEnabled } }
        set { state.withLock { $0.isEnabled = newValue } }
    }

    /// Whether `angle` is one this connection can apply: 0, 90, 180 or 270 degrees.
    public func isVideoRotationAngleSupported(_ angle: Double) -> Bool {
        [0.0, 90, 180, 270].contains(angle)
    }

    /// Clockwise rotation applied to the frames, in degrees (`videoRotationAngle`).
    /// Setting an unsupported angle is a programming error and traps, as AVFoundation raises;
    /// check `isVideoRotationAngleSupported(_:)` first for values from users.
    public var videoRotationAngle: Double {
        get { state.withLock { $0.videoRotationAngle } }
        set {
            precondition(isVideoRotationAngleSupported(newValue), "videoRotationAngle must be 0, 90, 180 or 270")
            state.withLock { $0.videoRotationAngle = newValue }
        }
    }

    /// Whether frames are flipped left-right after rotation (`isVideoMirrored`).
    public var isVideoMirrored: Bool {
        get { state.withLock { $0.isVideoMirrored } }
        set { state.withLock { $0.isVideoMirrored = newValue } }
    }

    /// Rotation and mirroring read together, consistently.
    var transform: (rotation: Int32, mirrored: Bool) {
        state.withLock { (Int32($0.videoRotationAngle), $0.isVideoMirrored) }
    }
}
