import Foundation

/// The kinds of metadata a `CaptureMetadataOutput` can report (`AVMetadataObject.ObjectType`).
public struct MetadataObjectType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Faces (OpenCV YuNet, Haar as fallback).
    public static let face = MetadataObjectType(rawValue: "face")
    /// QR codes (ZBar and zxing-cpp).
    public static let qr = MetadataObjectType(rawValue: "qr")
    /// Micro QR codes (zxing-cpp; `AVMetadataObject.ObjectType.microQR`).
    public static let microQR = MetadataObjectType(rawValue: "microqr")
    /// Data Matrix codes (zxing-cpp; `AVMetadataObject.ObjectType.dataMatrix`).
    public static let dataMatrix = MetadataObjectType(rawValue: "datamatrix")
    /// Aztec codes (zxing-cpp; `AVMetadataObject.ObjectType.aztec`).
    public static let aztec = MetadataObjectType(rawValue: "aztec")
    /// Linear and stacked symbologies ZBar reads.
    public static let ean13 = MetadataObjectType(rawValue: "ean13")
    public static let ean8 = MetadataObjectType(rawValue: "ean8")
    public static let upca = MetadataObjectType(rawValue: "upca")
    public static let upce = MetadataObjectType(rawValue: "upce")
    public static let isbn10 = MetadataObjectType(rawValue: "isbn10")
    public static let isbn13 = MetadataObjectType(rawValue: "isbn13")
    public static let code128 = MetadataObjectType(rawValue: "code128")
    public static let code93 = MetadataObjectType(rawValue: "code93")
    public static let code39 = MetadataObjectType(rawValue: "code39")
    public static let codabar = MetadataObjectType(rawValue: "codabar")
    public static let interleaved2of5 = MetadataObjectType(rawValue: "i25")
    public static let dataBar = MetadataObjectType(rawValue: "databar")
    public static let dataBarExpanded = MetadataObjectType(rawValue: "databar-exp")
    /// PDF417 (zxing-cpp, and ZBar where it was built with it).
    public static let pdf417 = MetadataObjectType(rawValue: "pdf417")

    /// Every machine-readable code type CaptureKit knows (ZBar may lack some at run time;
    /// `CaptureMetadataOutput.availableMetadataObjectTypes` says what is really there).
    public static let machineReadableCodeTypes: [MetadataObjectType] = [
        .qr, .microQR, .dataMatrix, .aztec, .ean13, .ean8, .upca, .upce, .isbn10, .isbn13, .code128, .code93, .code39, .codabar,
        .interleaved2of5, .dataBar, .dataBarExpanded, .pdf417,
    ]
}

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
