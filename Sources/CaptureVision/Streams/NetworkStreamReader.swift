import CVBridge

/// A network stream read through OpenCV's FFmpeg backend: the only Swift caller of the shim's
/// stream functions (`cvb_stream_open`, `cvb_stream_read`, `cvb_video_reader_close`, which wrap
/// `cv::VideoCapture::open(url, CAP_FFMPEG, {CAP_PROP_OPEN_TIMEOUT_MSEC, CAP_PROP_READ_TIMEOUT_MSEC})`
/// and `cv::VideoCapture::read`).
///
/// Threading: not thread-safe; one thread opens, reads and closes it.
public final class NetworkStreamReader {
    /// Frame size in pixels, as the stream reported it when it opened.
    public let width: Int
    public let height: Int
    /// The rate FFmpeg reports (0 when it reports none).
    public let reportedFramesPerSecond: Double
    /// The codec as a four-character code ("MJPG", "H264"), or "????" when unknown.
    public let codec: String
    private var handle: OpaquePointer?
    private let pool: PixelBufferPool
    private let url: NetworkStreamURL

    /// Connects to `url`, blocking up to about `timeouts.connect` seconds.
    ///
    /// - Throws: `.streamUnreachable` when FFmpeg cannot open it (refused, timed out, wrong
    ///   credentials, not a stream); `.cannotOpenVideo` when it reports no usable frame size.
    public init(url: NetworkStreamURL, timeouts: NetworkStreamTimeouts) throws(CaptureError) {
        self.url = url
        var raw = cvb_stream_info()
        var err = cvb_error()
        guard
            let handle = cvb_stream_open(
                url.connectionString, timeouts.connectMilliseconds, timeouts.readMilliseconds, &raw, &err)
        else {
            throw CaptureError(
                .streamUnreachable,
                "cannot open \(url.redacted): \(url.redact(err.text)) (refused, no answer within \(timeouts.connect) s, wrong credentials or not a video stream; FFmpeg's own line says which): check that the camera is on, the address and port, the credentials (URL or CVCAM_STREAM_USER/CVCAM_STREAM_PASSWORD), or raise --connect-timeout",
                path: url.redacted)
        }
        let width = raw.width.isFinite ? Int(raw.width) : 0
        let height = raw.height.isFinite ? Int(raw.height) : 0
        guard (1...16384).contains(width), (1...16384).contains(height) else {
            cvb_video_reader_close(handle)
            throw CaptureError(
                .cannotOpenVideo, "\(url.redacted) reports no usable frame size (\(raw.width)x\(raw.height))",
                path: url.redacted)
        }
        self.handle = handle
        self.width = width
        self.height = height
        reportedFramesPerSecond = raw.fps.isFinite ? raw.fps : 0
        codec = fourCCText(raw.fourcc)
        pool = PixelBufferPool(width: width, height: height, pixelFormat: .bgr)
    }

    deinit { close() }

    public func readFrame() throws(CaptureError) -> PixelBuffer? {
        guard let handle else { return nil }
        let buffer = try pool.makeBuffer()
        var err = cvb_error()
        switch buffer.withBridgeImage({ cvb_stream_read(handle, &$0, &err) }) {
        case Int32(CVB_READ_FRAME): return buffer
        case Int32(CVB_READ_END): return nil
        default:
            throw CaptureError(
                .decodeFailed,
                "\(url.redacted) changed its frame size mid-stream (\(url.redact(err.text))); restart cvcam to use the new size",
                path: url.redacted)
        }
    }

    public func close() {
        if let handle { cvb_video_reader_close(handle) }
        handle = nil
    }
}
