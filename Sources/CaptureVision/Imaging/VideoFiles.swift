import CVBridge

/// What a video container says about its stream, as read (`cvb_video_info`): unchecked numbers,
/// 0 or NaN when unknown. CaptureKit's `VideoContainerInfo` range-checks them.
///
/// Threading: a value type; use from any thread.
package struct VideoStreamInfo: Sendable, Equatable {
    package var width = 0.0
    package var height = 0.0
    package var fps = 0.0
    package var frameCount = 0.0
    package var fourcc: UInt32 = 0
    package var startSeconds = Double.nan
    package var durationSeconds = Double.nan
    package var declaredFrames = 0.0

    /// All unknown.
    package init() {}

    /// The shim's report, field by field.
    package init(_ raw: cvb_video_info) {
        width = raw.width
        height = raw.height
        fps = raw.fps
        frameCount = raw.frame_count
        fourcc = raw.fourcc
        startSeconds = raw.start_seconds
        durationSeconds = raw.duration_seconds
        declaredFrames = raw.declared_frames
    }
}

/// An open video file decoding to BGR (`cv::VideoCapture` through `cvb_video_reader_*`).
///
/// Threading: one thread at a time (the capture thread).
package final class VideoReader {
    /// The file being read.
    package let path: String
    /// What the container declared when the file was opened.
    package let info: VideoStreamInfo
    private var reader: OpaquePointer?

    /// Opens `path` (`cvb_video_reader_open`).
    ///
    /// - Throws: `code` with `what` and OpenCV's message when the file cannot be opened.
    package init(path: String, _ code: CaptureError.Code, _ what: @autoclosure () -> String) throws(CaptureError) {
        var raw = cvb_video_info()
        var err = cvb_error()
        guard let reader = FilePathBytes.withCString(path, { cvb_video_reader_open($0, &raw, &err) }) else {
            throw CaptureError(code, what(), bridge: err, path: path)
        }
        self.path = path
        self.reader = reader
        info = VideoStreamInfo(raw)
    }

    deinit { close() }

    /// What one read gave.
    package enum Read {
        /// A frame was decoded; its position in the container, in milliseconds.
        case frame(positionMilliseconds: Double)
        /// No frame is left.
        case end
    }

    /// Decodes the next frame into `buffer` (BGR, the stream's size) (`cvb_video_reader_read`).
    ///
    /// - Throws: `.decodeFailed` with `what` and OpenCV's message when decoding fails mid-stream.
    package func read(into buffer: PixelBuffer, _ what: @autoclosure () -> String) throws(CaptureError) -> Read {
        guard let reader else { return .end }
        var positionMs = 0.0
        var index: Int64 = 0
        var err = cvb_error()
        switch buffer.withBridgeImage({ cvb_video_reader_read(reader, &$0, &positionMs, &index, &err) }) {
        case Int32(CVB_READ_FRAME): return .frame(positionMilliseconds: positionMs)
        case Int32(CVB_READ_END): return .end
        default: throw CaptureError(.decodeFailed, what(), bridge: err, path: path)
        }
    }

    /// Closes the file (`cvb_video_reader_close`). Safe to call more than once.
    package func close() {
        if let reader { cvb_video_reader_close(reader) }
        reader = nil
    }
}

/// An open video writer (`cv::VideoWriter` through `cvb_video_writer_*`).
///
/// Threading: one thread at a time.
package final class VideoWriter {
    /// The file (or GStreamer pipeline) being written.
    package let path: String
    private var writer: OpaquePointer?

    /// Opens a writer (`cvb_video_writer_open`). `backend` is a `CVB_BACKEND_*` value: 0 any,
    /// 1 FFmpeg, 2 GStreamer; `fourCC` names the codec ("MJPG").
    ///
    /// - Throws: `.writeFailed` with `what` and OpenCV's message.
    package init(
        path: String, backend: Int32, fourCC: String, frameRate: Double, width: Int, height: Int, isColor: Bool,
        _ what: @autoclosure () -> String
    ) throws(CaptureError) {
        self.path = path
        var err = cvb_error()
        guard
            let w = FilePathBytes.withCString(path, {
                cvb_video_writer_open($0, backend, fourCC, frameRate, Int32(width), Int32(height), isColor ? 1 : 0, &err)
            })
        else { throw CaptureError(.writeFailed, what(), bridge: err, path: path) }
        writer = w
    }

    deinit { close() }

    /// Appends a frame (`cvb_video_writer_write`).
    ///
    /// - Throws: `.writeFailed` with `what` and OpenCV's message.
    package func write(_ buffer: PixelBuffer, _ what: @autoclosure () -> String) throws(CaptureError) {
        guard let writer else { throw CaptureError(.writeFailed, "\(what()): the writer is closed", path: path) }
        try bridgeCall(.writeFailed, what(), path: path) { err in buffer.withBridgeImage { cvb_video_writer_write(writer, &$0, &err) } }
    }

    /// Finishes the file (`cvb_video_writer_close`). Safe to call more than once.
    package func close() {
        if let writer { cvb_video_writer_close(writer) }
        writer = nil
    }
}

/// A codec's four-character code as text ("MJPG"), or in hex when it is not printable.
package func fourCCText(_ code: UInt32) -> String {
    guard code != 0 else { return "????" }
    let bytes = (0..<4).map { UInt8((code >> (8 * $0)) & 0xff) }
    let text = String(decoding: bytes, as: UTF8.self)
    return text.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "\0" }) ? text : String(code, radix: 16)
}
