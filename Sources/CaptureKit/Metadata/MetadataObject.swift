import Foundation

/// What every metadata object has (`AVMetadataObject`).
///
/// Coordinates are in device space: normalised 0…1, origin top-left, in the frame as the
/// camera delivered it (unrotated, unmirrored). `CaptureVideoPreviewLayer` converts them.
public protocol MetadataObject: Sendable {
    /// The kind of object.
    var type: MetadataObjectType { get }
    /// Bounding box in device space.
    var bounds: CGRect { get }
    /// Presentation time of the frame the object was found in.
    var time: MediaTime { get }
    /// The input whose frame it was found in.
    var inputID: CaptureInput.ID { get }
}

/// A face (`AVMetadataFaceObject`).
///
/// Value type; thread-safe.
public struct MetadataFaceObject: MetadataObject, Hashable {
    public var type: MetadataObjectType { .face }
    /// Bounding box in device space (YuNet's box: forehead to chin).
    public var bounds: CGRect
    /// Identifies one appearance of a face: new when a face enters, kept while the same face
    /// stays (through brief misses), never reused within the process.
    public var faceID: Int
    /// Whether `rollAngle` is meaningful.
    public var hasRollAngle: Bool
    /// Rotation in the image plane, in degrees, positive clockwise (head tilted to its left
    /// shoulder as seen in the image).
    public var rollAngle: Double
    /// Whether `yawAngle` is meaningful.
    public var hasYawAngle: Bool
    /// Rotation about the vertical axis, in degrees, positive when the face turns towards the
    /// image's right.
    public var yawAngle: Double
    /// The detector's five landmarks in device space, in YuNet's order: right eye, left eye
    /// (the person's), nose tip, right mouth corner, left mouth corner. Empty when the
    /// detector gives none (Haar).
    public var landmarks: [CGPoint]
    /// The detector's confidence, 0…1 (AVFoundation has none).
    public var confidence: Double
    public var time: MediaTime
    public var inputID: CaptureInput.ID

    public init(
        bounds: CGRect, faceID: Int, hasRollAngle: Bool = false, rollAngle: Double = 0, hasYawAngle: Bool = false,
        yawAngle: Double = 0, landmarks: [CGPoint] = [], confidence: Double, time: MediaTime, inputID: CaptureInput.ID
    ) {
        self.bounds = bounds
        self.faceID = faceID
        self.hasRollAngle = hasRollAngle
        self.rollAngle = rollAngle
        self.hasYawAngle = hasYawAngle
        self.yawAngle = yawAngle
        self.landmarks = landmarks
        self.confidence = confidence
        self.time = time
        self.inputID = inputID
    }
}

/// A QR code or barcode (`AVMetadataMachineReadableCodeObject`).
///
/// Value type; thread-safe.
public struct MetadataMachineReadableCodeObject: MetadataObject, Hashable {
    public var type: MetadataObjectType
    /// Bounding box of `corners` in device space.
    public var bounds: CGRect
    /// The payload as text when it is valid text (UTF-8, or the character set the symbol
    /// declares); nil for binary payloads.
    public var stringValue: String?
    /// The payload's raw bytes, exactly as encoded.
    public var payload: [UInt8]
    /// The symbol's corners in device space, clockwise starting from the code's own top-left
    /// (for QR: the finder pattern at the top-left of the upright symbol), as ZBar orders its
    /// polygon. Four points for QR; linear codes give the scan line's ends and extent.
    public var corners: [CGPoint]
    /// ZBar's quality figure (higher is better; for QR, 1).
    public var quality: Int
    public var time: MediaTime
    public var inputID: CaptureInput.ID

    public init(
        type: MetadataObjectType, bounds: CGRect, stringValue: String?, payload: [UInt8], corners: [CGPoint],
        quality: Int, time: MediaTime, inputID: CaptureInput.ID
    ) {
        self.type = type
        self.bounds = bounds
        self.stringValue = stringValue
        self.payload = payload
        self.corners = corners
        self.quality = quality
        self.time = time
        self.inputID = inputID
    }
}
