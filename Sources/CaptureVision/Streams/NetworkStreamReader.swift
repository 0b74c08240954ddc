import CVBridge
import Foundation

/// One frame from a network stream: the BGR pixels and, for an MJPEG stream, the camera's own
/// JPEG they were decoded from.
///
/// Threading: a value type; use it anywhere.
public struct NetworkStreamFrame: Sendable {
    /// The frame, BGR, the stream's size.
    public var pixelBuffer: PixelBuffer
    /// The camera's JPEG, byte for byte, when `pixelBuffer` is exactly its decode; else nil.
    public var jpegData: Data?
    /// Frames that arrived just before this one and were dropped because they did not decode.
    public var damagedBefore: Int

    public init(pixelBuffer: PixelBuffer, jpegData: Data? = nil, damagedBefore: Int = 0) {
        self.pixelBuffer = pixelBuffer
        self.jpegData = jpegData
        self.damagedBefore = damagedBefore
    }
}

/// A network stream read through OpenCV's FFmpeg backend: the only Swift caller of the shim's
/// stream functions (`cvb_stream_open`, `cvb_stream_read`, `cvb_stream_set_raw`,
/// `cvb_stream_read_packet`, `cvb_video_reader_close`, which wrap `cv::VideoCapture::open(url,
/// CAP_FFMPEG, {CAP_PROP_OPEN_TIMEOUT_MSEC, CAP_PROP_READ_TIMEOUT_MSEC})`, `set(CAP_PROP_FORMAT, -1)`
/// and `cv::VideoCapture::read`).
///
/// An MJPEG stream (RTSP or HTTP) is read as undecoded packets, each a whole JPEG, which the
/// reader decodes itself (`cv::imdecode`, as for a V4L2 MJPEG camera) and keeps beside the
/// pixels, so a consumer that wants JPEG can send the camera's bytes. Other codecs are decoded
/// by FFmpeg. A packet that does not decode is dropped, as a damaged USB frame is; a run of
/// them fails the read.
///
/// Threading: not thread-safe; one thread opens, reads and closes it.
public final class NetworkStreamReader {
    /// Frame size in pixels, as the stream reported it when it opened.
    public let width: Int
    public let height: Int
    /// The rate FFmpeg reports (0 when it reports none).
    public let reportedFramesPerSecond: Double
    /// The codec as OpenCV reports it: the stream's four-character tag, else the first four
    /// letters of FFmpeg's codec name ("mjpe", "h264"); "????" when unknown.
    public let codec: String
    /// True when frames carry the camera's JPEG (an MJPEG stream the backend let us read raw).
    public let keepsCameraJPEG: Bool
    /// Consecutive undecodable packets after which a read fails rather than drops another one.
    static let damagedPacketLimit = 25
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
        var rawErr = cvb_error()
        keepsCameraJPEG = Self.isMJPEG(codec) && cvb_stream_set_raw(handle, &rawErr) == 1
    }

    /// Whether `codec` (as `codec` spells it) is Motion JPEG, whose packets are whole JPEGs.
    package static func isMJPEG(_ codec: String) -> Bool {
        ["mjpe", "mjpg", "avrn", "jpeg"].contains(codec.lowercased())
    }

    deinit { close() }

    /// The next frame, blocking up to about the read timeout; nil when the stream ended (closed
    /// by the server, nothing within the read timeout).
    ///
    /// - Throws: `.decodeFailed` when the frame size changed mid-stream, or (MJPEG) when
    ///   `damagedPacketLimit` packets in a row did not decode to the stream's size.
    public func readFrame() throws(CaptureError) -> NetworkStreamFrame? {
        guard let handle else { return nil }
        if keepsCameraJPEG { return try readPacket(handle) }
        let buffer = try pool.makeBuffer()
        var err = cvb_error()
        switch buffer.withBridgeImage({ cvb_stream_read(handle, &$0, &err) }) {
        case Int32(CVB_READ_FRAME): return NetworkStreamFrame(pixelBuffer: buffer)
        case Int32(CVB_READ_END): return nil
        default:
            throw CaptureError(
                .decodeFailed,
                "\(url.redacted) changed its frame size mid-stream (\(url.redact(err.text))); restart cvcam to use the new size",
                path: url.redacted)
        }
    }

    private func readPacket(_ handle: OpaquePointer) throws(CaptureError) -> NetworkStreamFrame? {
        var damaged = 0
        while true {
            var data: UnsafePointer<UInt8>?
            var length = 0
            var err = cvb_error()
            guard cvb_stream_read_packet(handle, &data, &length, &err) == Int32(CVB_READ_FRAME), let data else { return nil }
            let bytes = UnsafeRawBufferPointer(start: data, count: length)
            let buffer = try pool.makeBuffer()
            do throws(CaptureError) {
                try Imaging.decode(bytes, into: buffer, "decoding a JPEG from \(url.redacted)")
                // Copied: the packet's memory is reused by the next read.
                return NetworkStreamFrame(pixelBuffer: buffer, jpegData: Data(bytes), damagedBefore: damaged)
            } catch {
                damaged += 1
                guard damaged >= Self.damagedPacketLimit else { continue }
                throw CaptureError(
                    .decodeFailed,
                    "\(url.redacted) sent \(damaged) JPEG frames in a row that do not decode to \(width)x\(height) (\(url.redact(error.message))); if the camera changed its frame size, restart cvcam to use the new one",
                    path: url.redacted)
            }
        }
    }

    public func close() {
        if let handle { cvb_video_reader_close(handle) }
        handle = nil
    }
}
