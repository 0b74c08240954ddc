/// Writes frames to a video file through OpenCV (`cv::VideoWriter` via CaptureVision's
/// `VideoWriter`).
///
/// Used by the demo-clip generator, tests and the movie output. Threading: one thread at a time.
public final class VideoFileWriter {
    /// Where OpenCV's writer runs (CVBridge's `CVB_BACKEND_*` values).
    public enum Backend: Int32, Sendable {
        case any = 0, ffmpeg = 1, gstreamer = 2
    }

    /// The file (or GStreamer pipeline) being written.
    public let path: String
    /// Frame size every written frame must have.
    public let dimensions: CaptureDevice.Dimensions
    /// Frames written so far.
    public private(set) var frameCount = 0

    private var writer: VideoWriter?

    /// Opens a writer. `fourCC` names the codec ("MJPG" for MJPEG-in-AVI, "mp4v", "XVID").
    ///
    /// - Throws: `.writeFailed` when OpenCV cannot open a writer for that path and codec.
    public init(
        path: String, fourCC: String = "MJPG", frameRate: Double, dimensions: CaptureDevice.Dimensions,
        isColor: Bool = true, backend: Backend = .ffmpeg
    ) throws(CaptureError) {
        self.path = path
        self.dimensions = dimensions
        writer = try VideoWriter(
            path: path, backend: backend.rawValue, fourCC: fourCC, frameRate: frameRate, width: dimensions.width,
            height: dimensions.height, isColor: isColor,
            "cannot write \(fourCC) video to \(path) (check the folder exists and is writable)")
    }

    deinit { close() }

    /// Appends a frame (BGR for colour writers, gray otherwise) of the writer's size.
    public func write(_ buffer: PixelBuffer) throws(CaptureError) {
        guard let writer else { throw CaptureError(.writeFailed, "the writer for \(path) is closed", path: path) }
        guard buffer.width == dimensions.width, buffer.height == dimensions.height else {
            throw CaptureError(
                .writeFailed, "frame is \(buffer.width)x\(buffer.height) but \(path) is \(dimensions)", path: path)
        }
        try writer.write(buffer, "writing a frame to \(path) failed")
        frameCount += 1
    }

    /// Finishes the file. Safe to call more than once.
    public func close() {
        writer?.close()
        writer = nil
    }
}
