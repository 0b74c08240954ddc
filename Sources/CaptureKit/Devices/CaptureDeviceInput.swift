import Synchronization

/// Something a session takes frames from (`AVCaptureInput`).
///
/// Threading: thread-safe; immutable apart from session bookkeeping.
public class CaptureInput: @unchecked Sendable {
    // @unchecked: the only mutable state, `owner`, is behind a Mutex. Subclassable only
    // inside CaptureKit (the class is public, not open).

    /// Identifies an input for the life of the process; frames and metadata carry it.
    public struct ID: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt64
        /// Creates an identifier (tests and test doubles; inputs number themselves).
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public var description: String { "input-\(rawValue)" }
    }

    private static let counter = Mutex<UInt64>(0)

    /// This input's identifier.
    public let id: ID
    let owner = Mutex<ObjectIdentifier?>(nil)

    init() {
        id = ID(rawValue: Self.counter.withLock { $0 += 1; return $0 })
    }
}

/// An input that takes frames from a `CaptureDevice` (`AVCaptureDeviceInput`).
public final class CaptureDeviceInput: CaptureInput, @unchecked Sendable {
    /// The device.
    public let device: CaptureDevice

    /// Creates an input for `device` (`AVCaptureDeviceInput(device:)`).
    public init(device: CaptureDevice) throws(CaptureError) {
        self.device = device
        super.init()
    }
}

extension CaptureDevice {
    /// A device that plays a video file (`DeviceType.videoFile`).
    ///
    /// - Throws: `.fileNotFound` or `.cannotOpenVideo` (see `VideoFileSource`).
    public convenience init(videoFileAtPath path: String, pacing: FramePacing = .realTime) throws(CaptureError) {
        let source = try VideoFileSource(path: path, pacing: pacing)
        try self.init(
            uniqueID: "file:" + path, localizedName: "Video file \(path)", deviceType: .videoFile, source: source)
    }

    /// A device that shows a folder of images, or one image, at `frameRate` (`DeviceType.imageFolder`).
    ///
    /// - Throws: `.fileNotFound`, `.noImagesInFolder` or `.unreadableImage` (see `ImageFolderSource`).
    public convenience init(
        imagesAtPath path: String, frameRate: Double = 10, loops: Bool = false, pacing: FramePacing = .realTime,
        onSkippedImage: (@Sendable (CaptureError) -> Void)? = nil
    ) throws(CaptureError) {
        let source = try ImageFolderSource(
            path: path, frameRate: frameRate, loops: loops, pacing: pacing, onSkippedImage: onSkippedImage)
        try self.init(
            uniqueID: "images:" + path, localizedName: "Images \(path)", deviceType: .imageFolder, source: source)
    }

    /// A synthetic camera rendering `scene` (`DeviceType.synthetic`).
    public convenience init(syntheticScene scene: SyntheticScene, pacing: FramePacing = .realTime) throws(CaptureError) {
        let source = try SyntheticCameraSource(scene: scene, pacing: pacing)
        try self.init(
            uniqueID: "synthetic:\(scene.size)@\(scene.frameRate)", localizedName: "Synthetic camera \(scene.size)",
            deviceType: .synthetic, source: source)
    }
}
