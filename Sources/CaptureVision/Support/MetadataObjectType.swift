/// The kinds of metadata a `CaptureMetadataOutput` can report (`AVMetadataObject.ObjectType`).
public struct MetadataObjectType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Faces (OpenCV YuNet, Haar as fallback).
    public static let face = MetadataObjectType(rawValue: "face")
    /// Motion: what `CaptureMetadataOutput.motionDetection` reports (`MetadataMotionObject`).
    /// CaptureKit's own, AVFoundation has none; it is turned on by `motionDetection`, not chosen
    /// through `metadataObjectTypes`.
    public static let motion = MetadataObjectType(rawValue: "motion")
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
