import CaptureVision

/// What a network stream said about itself when it opened (`cv::VideoCapture::get` of
/// `CAP_PROP_FRAME_WIDTH`/`HEIGHT`, `CAP_PROP_FPS`, `CAP_PROP_FOURCC`).
///
/// Threading: a value type; use it anywhere.
public struct NetworkStreamInfo: Sendable, Equatable {
    /// Frame size in pixels.
    public var dimensions: CaptureDevice.Dimensions
    /// The rate FFmpeg reports (from the stream's timestamps for RTSP; a guess for MJPEG over
    /// HTTP, which carries no times: `NetworkStreamSource` measures that one instead).
    public var reportedFramesPerSecond: Double
    /// The codec as `NetworkStreamReader.codec` spells it ("mjpe", "h264"), or "????" when unknown.
    public var codec: String

    /// Creates stream information (tests and test doubles).
    public init(dimensions: CaptureDevice.Dimensions, reportedFramesPerSecond: Double, codec: String) {
        self.dimensions = dimensions
        self.reportedFramesPerSecond = reportedFramesPerSecond
        self.codec = codec
    }
}

/// One open connection to a network camera: the seam between `NetworkStreamSource`'s state
/// machine and the network, so the machine can be tested with a scripted connection.
///
/// Threading: used by one thread at a time (the source's connection thread).
public protocol NetworkStreamConnection: AnyObject {
    /// What the stream reported when it opened.
    var info: NetworkStreamInfo { get }
    /// The next decoded frame (BGR, `info.dimensions`, with the camera's JPEG when the stream is
    /// MJPEG), blocking until it arrives; nil when the stream ended (server closed it, nothing
    /// arrived within the read timeout).
    func readFrame() throws(CaptureError) -> NetworkStreamFrame?
    /// Closes the connection. Safe to call more than once.
    func close()
}

/// Opens a connection to `url` within `timeouts`, or throws what went wrong (redacted).
public typealias NetworkStreamOpener = @Sendable (NetworkStreamURL, NetworkStreamTimeouts) throws(CaptureError) ->
    any NetworkStreamConnection

extension NetworkStreamReader: NetworkStreamConnection {
    public var info: NetworkStreamInfo {
        NetworkStreamInfo(
            dimensions: .init(width: width, height: height), reportedFramesPerSecond: reportedFramesPerSecond,
            codec: codec)
    }

    /// The opener that connects through this reader.
    public static let opener: NetworkStreamOpener = { url, timeouts throws(CaptureError) in
        try NetworkStreamReader(url: url, timeouts: timeouts)
    }
}
