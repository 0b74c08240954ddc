import Foundation
import Synchronization

/// How a photo is encoded.
public enum PhotoCodec: Hashable, Sendable {
    /// JPEG through OpenCV (`cv::imencode`, libjpeg-turbo) at `quality` 0…100, with EXIF.
    case jpeg(quality: Int)
    /// Lossless PNG through OpenCV (`cv::imencode`). PNG carries no EXIF here: the connection's
    /// rotation and mirroring are applied to the pixels instead, and the annotation (faces) goes
    /// to a JSON sidecar next to the file.
    case png

    /// The file extension, without the dot.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        }
    }
}

/// Flash modes (`AVCaptureDevice.FlashMode`). `.on` works on V4L2 cameras with a flash
/// (`CapturePhotoOutput.supportedFlashModes`); `.auto` is never offered, since V4L2 cannot say
/// when the scene is dark. An unsupported mode ends the capture with `.unsupported`.
public enum PhotoFlashMode: String, Hashable, Sendable {
    case off, on, auto
}

/// Why a photo was taken and which faces it shows; stored with the photo (EXIF UserComment as
/// JSON for JPEG, a `.json` sidecar for PNG). Coordinates are in device space; faces use the same
/// JSON shape as cvcam's `face` events (`MetadataRecord.Face`).
///
/// JSON: `{"schema": 2, "reason", "time", "faces": [{"faceID", "box": {x, y, w, h}, "score",
/// "roll", "yaw", "landmarks"}], "details"}`. Schema 2 replaced version 1's `frameTime`,
/// `bounds: [[x, y], [w, h]]`, `confidence`, `rollAngle` and `yawAngle`.
///
/// Value type; thread-safe.
public struct PhotoAnnotation: Codable, Hashable, Sendable {
    /// One face in the photo.
    public typealias Face = MetadataRecord.Face

    /// The version of the JSON shape, written as `schema`.
    public static let schemaVersion = 2

    /// Why the photo was taken ("newFace", "interval", "user", …).
    public var reason: String
    /// Presentation time of the frame, in seconds on the input's clock (JSON: `time`).
    public var frameTime: Double
    /// The faces in the frame.
    public var faces: [Face]
    /// Extra facts about the choice (sharpness, frames considered, …).
    public var details: [String: Double]

    /// Creates an annotation.
    public init(reason: String, frameTime: Double, faces: [MetadataFaceObject], details: [String: Double] = [:]) {
        self.reason = reason
        self.frameTime = frameTime
        self.faces = faces.map(Face.init)
        self.details = details
    }

    private enum CodingKeys: String, CodingKey { case schema, reason, time, faces, details }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let schema = try c.decode(Int.self, forKey: .schema)
        guard schema == Self.schemaVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .schema, in: c, debugDescription: "photo record schema \(schema), expected \(Self.schemaVersion)")
        }
        reason = try c.decode(String.self, forKey: .reason)
        frameTime = try c.decode(Double.self, forKey: .time)
        faces = try c.decode([Face].self, forKey: .faces)
        details = try c.decode([String: Double].self, forKey: .details)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.schemaVersion, forKey: .schema)
        try c.encode(reason, forKey: .reason)
        try c.encode(frameTime, forKey: .time)
        try c.encode(faces, forKey: .faces)
        try c.encode(details, forKey: .details)
    }

    /// The JSON text stored with the photo (sorted keys, ASCII).
    public func jsonText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        // Escape anything outside ASCII so EXIF's ASCII UserComment holds it unchanged.
        return String(decoding: data, as: UTF8.self).unicodeScalars.map {
            $0.isASCII ? String($0) : String(format: "\\u%04x", $0.value)
        }.joined()
    }
}

/// What to capture (`AVCapturePhotoSettings`). Each value gets a `uniqueID` for the process;
/// a settings value may be used for one capture only (a second use throws
/// `.photoSettingsReused`): make a new one per photo.
///
/// Value type; thread-safe.
public struct CapturePhotoSettings: Sendable {
    private static let counter = Mutex<Int64>(0)

    /// Unique for the process; every callback of the capture names it.
    public let uniqueID: Int64
    /// JPEG (default, quality 90) or PNG.
    public var codec: PhotoCodec = .jpeg(quality: 90)
    /// The largest size wanted. Nil (the default, as in AVFoundation) gets the active format's
    /// size. A smaller size scales the frame down (aspect kept). A larger one, on a live camera
    /// offering a larger frame size, gets the largest offered size within it, switching the
    /// camera's format for the shot (slower: see `CapturePhotoOutput`); other sources give
    /// their one size. Ask for the output's `maxPhotoDimensions` for the best the device has.
    /// `CaptureResolvedPhotoSettings.photoDimensions` says what will be delivered.
    public var maxPhotoDimensions: CaptureDevice.Dimensions?
    /// Flash: `.off` (default), or `.on` where `CapturePhotoOutput.supportedFlashModes` has it.
    public var flashMode: PhotoFlashMode = .off
    /// When set, each photo also comes with a preview scaled to fit this size (aspect kept).
    public var previewThumbnailSize: CaptureDevice.Dimensions?
    /// Exposure biases in EV for a bracketed capture (`AVCapturePhotoBracketSettings`), e.g.
    /// `[-1, 0, 1]`; empty for a single photo. Needs a device whose source adopts
    /// `ExposureBracketingSource`; otherwise the capture ends with `.unsupported`.
    public var exposureBrackets: [Float] = []
    /// When set, each photo's `fileDataRepresentation()` is written there atomically
    /// (`AtomicFile`); brackets add "-1", "-2", … before the extension. A failed write is the
    /// photo's error; capture goes on.
    public var fileURL: URL?
    /// Whether the photo may replace an existing file at `fileURL` (otherwise the capture fails
    /// with `.writeFailed` and the old file stays).
    public var replacesExistingFile = true
    /// Stored with the photo (faces, reason); see `PhotoAnnotation`.
    public var annotation: PhotoAnnotation?

    /// Creates settings with a fresh `uniqueID`.
    public init(
        codec: PhotoCodec = .jpeg(quality: 90), maxPhotoDimensions: CaptureDevice.Dimensions? = nil,
        flashMode: PhotoFlashMode = .off, previewThumbnailSize: CaptureDevice.Dimensions? = nil,
        exposureBrackets: [Float] = [], fileURL: URL? = nil, annotation: PhotoAnnotation? = nil
    ) {
        uniqueID = Self.counter.withLock { $0 += 1; return $0 }
        self.codec = codec
        self.maxPhotoDimensions = maxPhotoDimensions
        self.flashMode = flashMode
        self.previewThumbnailSize = previewThumbnailSize
        self.exposureBrackets = exposureBrackets
        self.fileURL = fileURL
        self.annotation = annotation
    }

    /// Photos this capture delivers: one per bracket, or one.
    public var expectedPhotoCount: Int { max(1, exposureBrackets.count) }
}

/// The settings as the output will carry them out (`AVCaptureResolvedPhotoSettings`).
///
/// Value type; thread-safe.
public struct CaptureResolvedPhotoSettings: Hashable, Sendable {
    /// The `uniqueID` of the settings this capture was asked with.
    public let uniqueID: Int64
    /// Size of the delivered photos (sensor orientation): the active format's frame, scaled
    /// down, or a larger still format's.
    public let photoDimensions: CaptureDevice.Dimensions
    /// Size of the preview thumbnail, when asked for.
    public let previewDimensions: CaptureDevice.Dimensions?
    /// Photos to expect in `didFinishProcessingPhoto`.
    public let expectedPhotoCount: Int
    /// Whether the flash fires for this capture (`flashMode` `.on` on a camera with a flash).
    public let isFlashEnabled: Bool
}

/// One photo (`AVCapturePhoto`). Immutable; thread-safe.
public final class CapturePhoto: Sendable {
    /// The settings this photo was captured with.
    public let resolvedSettings: CaptureResolvedPhotoSettings
    /// 1-based index among the capture's photos (brackets).
    public let photoCount: Int
    /// Presentation time of the frame on the input's clock.
    public let timestamp: MediaTime
    /// The exposure bias this photo was taken at, for brackets.
    public let exposureTargetBias: Float?
    /// The frame as the camera delivered it (sensor orientation, BGR; scaled down when the
    /// settings asked for a smaller `maxPhotoDimensions`, from a still format when they asked
    /// for a larger one); nil when the capture failed before a frame was taken.
    public let pixelBuffer: PixelBuffer?
    /// The preview thumbnail (BGR), when the settings asked for one.
    public let previewPixelBuffer: PixelBuffer?
    /// What the photo records about itself (faces, reason).
    public let annotation: PhotoAnnotation?
    /// Where the photo was written, when the settings asked for a file and writing succeeded.
    public let fileURL: URL?
    private let encoded: Data?

    init(
        resolvedSettings: CaptureResolvedPhotoSettings, photoCount: Int, timestamp: MediaTime,
        exposureTargetBias: Float?, pixelBuffer: PixelBuffer?, previewPixelBuffer: PixelBuffer?,
        annotation: PhotoAnnotation?, fileURL: URL?, encoded: Data?
    ) {
        self.resolvedSettings = resolvedSettings
        self.photoCount = photoCount
        self.timestamp = timestamp
        self.exposureTargetBias = exposureTargetBias
        self.pixelBuffer = pixelBuffer
        self.previewPixelBuffer = previewPixelBuffer
        self.annotation = annotation
        self.fileURL = fileURL
        self.encoded = encoded
    }

    /// The encoded file (`fileDataRepresentation()`): JPEG with EXIF, or PNG. Nil when the
    /// capture failed before encoding.
    public func fileDataRepresentation() -> Data? { encoded }
}

/// Encodes photos: the one place frames become JPEG/PNG files (used by `CapturePhotoOutput`
/// and `SnapshotStore`).
///
/// Threading: thread-safe (a stateless namespace).
enum PhotoEncoder {
    /// Encodes `frame` (BGR, sensor orientation).
    ///
    /// JPEG keeps the sensor pixels and records `rotation`/`mirrored` as EXIF Orientation; PNG
    /// applies them to the pixels. Pixels are encoded by `ImageFile.encode` (`cv::imencode`).
    static func encode(
        _ frame: PixelBuffer, codec: PhotoCodec, rotation: Int32, mirrored: Bool, device: CaptureDevice?,
        captureDate: Date, annotation: PhotoAnnotation?, converter: FrameConverter
    ) throws(CaptureError) -> Data {
        switch codec {
        case .jpeg(let quality):
            let jpeg = Data(try ImageFile.encode(frame, as: .jpeg(quality: quality)))
            let exif = PhotoExif(
                make: device.map(make(of:)) ?? "cvcam", model: device.map(model(of:)) ?? "unknown",
                orientation: PhotoExif.orientation(rotation: rotation, mirrored: mirrored),
                dateTimeOriginal: captureDate, pixelWidth: frame.width, pixelHeight: frame.height,
                userComment: annotation?.jsonText())
            guard let withExif = exif.inserted(into: jpeg) else {
                throw CaptureError(.conversionFailed, "OpenCV's JPEG encoder returned data without a JPEG header")
            }
            return withExif
        case .png:
            let sample = SampleBuffer(
                pixelBuffer: frame, presentationTimeStamp: .zero, duration: .zero, sequenceNumber: 0,
                inputID: CaptureInput.ID(rawValue: 0))
            let upright = try converter.convert(sample, to: .bgr, rotation: rotation, mirrored: mirrored)
            return Data(try ImageFile.encode(upright.pixelBuffer, as: .png))
        }
    }

    /// EXIF Model: the camera's name; for files and folders only the last path component, so a
    /// shared photo does not reveal where on the local disk its input was.
    static func model(of device: CaptureDevice) -> String {
        switch device.deviceType {
        case .videoFile, .imageFolder:
            let path = device.uniqueID.split(separator: ":", maxSplits: 1).last.map(String.init) ?? ""
            return (device.deviceType == .videoFile ? "Video file " : "Images ") + (path as NSString).lastPathComponent
        default: return device.localizedName
        }
    }

    /// EXIF Make: the driver or backend behind the device.
    static func make(of device: CaptureDevice) -> String {
        switch device.deviceType {
        case .external: "V4L2"
        case .videoFile: "cvcam video file"
        case .imageFolder: "cvcam image folder"
        case .synthetic: "cvcam synthetic camera"
        }
    }

    /// A BGR copy of `frame` scaled to fit in `size`, aspect kept (`Imaging.resize`).
    static func thumbnail(of frame: PixelBuffer, fitting size: CaptureDevice.Dimensions) throws(CaptureError) -> PixelBuffer {
        let target = fitted(CaptureDevice.Dimensions(width: frame.width, height: frame.height), in: size)
        let out = try PixelBuffer(width: target.width, height: target.height, pixelFormat: .bgr)
        try Imaging.resize(frame, into: out, "scaling the preview thumbnail failed")
        return out
    }

    /// `size` shrunk to fit in `box`, aspect kept, at least 1x1.
    static func fitted(_ size: CaptureDevice.Dimensions, in box: CaptureDevice.Dimensions) -> CaptureDevice.Dimensions {
        let scale = min(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height))
        return CaptureDevice.Dimensions(
            width: max(1, Int((Double(size.width) * scale).rounded())),
            height: max(1, Int((Double(size.height) * scale).rounded())))
    }
}
