import CVBridge

/// Writes frames to a video file through OpenCV (`cv::VideoWriter` via `cvb_video_writer_*`).
///
/// Used by the demo-clip generator, tests and the movie output. Threading: one thread at a time.
public final class VideoFileWriter {
    /// Where OpenCV's writer runs.
    public enum Backend: Int32, Sendable {
        case any = 0, ffmpeg = 1, gstreamer = 2
    }

    /// The file (or GStreamer pipeline) being written.
    public let path: String
    /// Frame size every written frame must have.
    public let dimensions: CaptureDevice.Dimensions
    /// Frames written so far.
    public private(set) var frameCount = 0

    private var writer: OpaquePointer?

    /// Opens a writer. `fourCC` names the codec ("MJPG" for MJPEG-in-AVI, "mp4v", "XVID").
    ///
    /// - Throws: `.writeFailed` when OpenCV cannot open a writer for that path and codec.
    public init(
        path: String, fourCC: String = "MJPG", frameRate: Double, dimensions: CaptureDevice.Dimensions,
        isColor: Bool = true, backend: Backend = .ffmpeg
    ) throws(CaptureError) {
        self.path = path
        self.dimensions = dimensions
        var err = cvb_error()
        guard
            let w = FilePathBytes.withCString(path, {
                cvb_video_writer_open(
                    $0, backend.rawValue, fourCC, frameRate, Int32(dimensions.width), Int32(dimensions.height),
                    isColor ? 1 : 0, &err)
            })
        else {
            throw CaptureError(
                .writeFailed, "cannot write \(fourCC) video to \(path): \(err.text); check the folder exists and is writable",
                path: path)
        }
        writer = w
    }

    deinit { close() }

    /// Appends a frame (BGR for colour writers, gray otherwise) of the writer's size.
    public func write(_ buffer: PixelBuffer) throws(CaptureError) {
        guard let writer else { throw CaptureError(.writeFailed, "the writer for \(path) is closed", path: path) }
        guard buffer.width == dimensions.width, buffer.height == dimensions.height else {
            throw CaptureError(
                .writeFailed, "frame is \(buffer.width)x\(buffer.height) but \(path) is \(dimensions)", path: path)
        }
        var err = cvb_error()
        guard buffer.withBridgeImage({ cvb_video_writer_write(writer, &$0, &err) }) == 0 else {
            throw CaptureError(.writeFailed, "writing a frame to \(path) failed: \(err.text)", path: path)
        }
        frameCount += 1
    }

    /// Finishes the file. Safe to call more than once.
    public func close() {
        if let writer { cvb_video_writer_close(writer) }
        writer = nil
    }
}
