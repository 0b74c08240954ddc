import CVBridge
import Foundation

/// Frames from a folder of images (or a single image) shown at a fixed rate, decoded by
/// `cv::imread` (`cvb_image_read`), which applies EXIF orientation.
///
/// Files are taken in natural order ("img2" before "img10"). Images keep their own size: the
/// format reports the first image's size, and a frame's `PixelBuffer` carries its real size.
/// An image that cannot be decoded mid-stream is skipped and reported through `onSkippedImage`.
///
/// Threading: `open`/`nextFrame`/`close` on the capture thread only (FrameSource's rule).
public final class ImageFolderSource: FrameSource, @unchecked Sendable {
    // @unchecked: `nextIndex` is touched only by the capture thread; the rest is immutable.

    /// Extensions read as images (lower-case).
    public static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "bmp", "tif", "tiff", "webp", "pgm", "ppm", "pbm"]

    /// The image files, in the order they are shown.
    public let files: [String]
    /// Frames per second.
    public let frameRate: Double
    /// Whether the sequence starts again after the last image (for a still image used as a camera).
    public let loops: Bool
    public let formats: [CaptureDevice.Format]
    public let isLive = false
    public let pacing: FramePacing
    /// Called on the capture thread for each image that could not be decoded.
    public let onSkippedImage: (@Sendable (CaptureError) -> Void)?

    private var nextIndex = 0
    private var frameDuration: MediaTime

    /// Lists the images at `path` (a folder, or one image file) and decodes the first to
    /// learn the frame size.
    ///
    /// - Throws: `.fileNotFound` when nothing is at `path`; `.noImagesInFolder` when the folder
    ///   holds no image files; `.unreadableImage` when the first image cannot be decoded.
    public init(
        path: String, frameRate: Double = 10, loops: Bool = false, pacing: FramePacing = .realTime,
        onSkippedImage: (@Sendable (CaptureError) -> Void)? = nil
    ) throws(CaptureError) {
        guard frameRate > 0 else {
            throw CaptureError(.invalidConfiguration, "an image folder's frame rate must be above 0 (got \(frameRate))")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CaptureError(.fileNotFound, "no file or folder at \(path): check the path", path: path, errno: ENOENT)
        }
        if isDirectory.boolValue {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            files = names
                .filter { Self.imageExtensions.contains(($0 as NSString).pathExtension.lowercased()) && !$0.hasPrefix(".") }
                .sorted { $0.localizedStandardCompare($1) == .orderedAscending }
                .map { (path as NSString).appendingPathComponent($0) }
            guard !files.isEmpty else {
                throw CaptureError(
                    .noImagesInFolder,
                    "\(path) holds no images (looked for \(Self.imageExtensions.sorted().joined(separator: ", ")))",
                    path: path)
            }
        } else {
            files = [path]
        }
        let first = try Self.decode(files[0])
        self.frameRate = frameRate
        self.loops = loops
        self.pacing = pacing
        self.onSkippedImage = onSkippedImage
        frameDuration = MediaTime.frameDuration(framesPerSecond: frameRate)
        formats = [
            CaptureDevice.Format(
                mediaSubType: "IMAG", pixelFormat: .bgr,
                dimensions: .init(width: first.width, height: first.height),
                videoSupportedFrameRateRanges: [.init(framesPerSecond: frameRate)])
        ]
    }

    /// Decodes one image file as BGR (`cvb_image_read`).
    public static func decode(_ path: String, as format: PixelFormat = .bgr) throws(CaptureError) -> PixelBuffer {
        var err = cvb_error()
        guard let mat = cvb_image_read(path, format.rawValue, &err) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw CaptureError(
                exists ? .unreadableImage : .fileNotFound,
                exists ? "\(path) is not an image OpenCV can decode" : "no image at \(path)", path: path)
        }
        return PixelBuffer(ownedMat: mat, pixelFormat: format, pool: nil)
    }

    public func open(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        nextIndex = 0
        self.frameDuration = frameDuration
    }

    public func nextFrame(isCancelled: @Sendable () -> Bool) throws(CaptureError) -> SourceFrame? {
        var failures = 0
        while !isCancelled() && failures < files.count {
            guard loops || nextIndex < files.count else { return nil }
            let index = nextIndex
            nextIndex += 1
            do {
                let buffer = try Self.decode(files[index % files.count])
                return SourceFrame(
                    pixelBuffer: buffer, presentationTimeStamp: frameDuration.multiplied(by: Int64(index)),
                    sequenceNumber: UInt64(index))
            } catch {
                onSkippedImage?(error)
                failures += 1
            }
        }
        return nil
    }

    public func close() {}
}
