import Foundation

/// Frames from a folder of images (or a single image) shown at a fixed rate, decoded as
/// `cv::imread` decodes them, EXIF orientation applied (`Imaging.read`: libjpeg-turbo and libpng
/// for JPEG and PNG, OpenCV's imgcodecs for the other formats).
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
    /// - Throws: `.fileNotFound` when nothing is at `path`; `.permissionDenied` when it cannot
    ///   be read; `.noImagesInFolder` when the folder holds no image files; `decode`'s errors
    ///   for the first image.
    public init(
        path: String, frameRate: Double = 10, loops: Bool = false, pacing: FramePacing = .realTime,
        onSkippedImage: (@Sendable (CaptureError) -> Void)? = nil
    ) throws(CaptureError) {
        guard frameRate > 0 else {
            throw CaptureError(.invalidConfiguration, "an image folder's frame rate must be above 0 (got \(frameRate))")
        }
        if InputFile.isFolder(try InputFile.status(path, code: .unreadableImage)) {
            // Listed by bytes: Foundation's listing turns a non-UTF-8 name into one that opens nothing.
            // A folder that cannot be read says so (with errno), not "holds no images".
            guard let names = FilePathBytes.contentsOfDirectory(path) else {
                throw InputFile.openError(path, errno: errno, code: .unreadableImage)
            }
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

    /// The most pixels a decoded image may have unless a caller says otherwise: 100 megapixels
    /// (300 MB as BGR), or `CVCAM_MAX_IMAGE_PIXELS` from the environment. Checked against the
    /// header before decoding, so a small file declaring a huge image cannot exhaust memory.
    public static let maximumPixels: Int = {
        if let text = ProcessInfo.processInfo.environment["CVCAM_MAX_IMAGE_PIXELS"], let n = Int(text), n > 0 { return n }
        return 100_000_000
    }()

    /// Decodes one image file as BGR (`Imaging.read`), after checking it is a regular file
    /// this user can read whose header (`ImageHeader`) declares at most `maximumPixels` pixels.
    /// A file whose size cannot be read from its header is not decoded: nothing else would bound
    /// what OpenCV allocates for it.
    ///
    /// - Throws: `.fileNotFound`, `.permissionDenied` (with errno), `.imageTooLarge`, or
    ///   `.unreadableImage` when it is not a regular file, its header gives no size, or it does
    ///   not decode.
    public static func decode(
        _ path: String, as format: PixelFormat = .bgr, maximumPixels: Int = ImageFolderSource.maximumPixels
    ) throws(CaptureError) -> PixelBuffer {
        try InputFile.withRegularFile(path, kind: "an image", code: .unreadableImage) { (fd) throws(CaptureError) in
            guard let size = ImageHeader.dimensions(fd) else {
                throw CaptureError(
                    .unreadableImage,
                    "\(path) is not an image whose size cvcam can read from its header (\(ImageHeader.formatNames)), "
                        + "so it is not decoded", path: path)
            }
            let (pixels, overflow) = size.width.multipliedReportingOverflow(by: size.height)
            if overflow || pixels > maximumPixels {
                throw CaptureError(
                    .imageTooLarge,
                    "\(path) declares \(size.width)x\(size.height) pixels, over the limit of \(maximumPixels) pixels "
                        + "on decoded images: set CVCAM_MAX_IMAGE_PIXELS to raise it", path: path)
            }
        }
        return try Imaging.read(path, as: format, maximumPixels: maximumPixels, "\(path) is not an image cvcam can decode")
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
