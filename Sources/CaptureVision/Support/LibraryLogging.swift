import CVBridge

/// How much the libraries behind CaptureKit (FFmpeg, which reads video files, and OpenCV) print
/// on stderr by themselves. Their messages bypass swift-log, so an app sets their level here,
/// once, from its own log level.
///
/// The corresponding C call is `cvb_set_library_log_level` (`av_log_set_level` and
/// `cv::utils::logging::setLogLevel`). Threading: thread-safe; the level is process-wide.
public enum LibraryLogging {
    /// The least severe library message that is printed, quietest first.
    public enum Level: Int32, Sendable, CaseIterable {
        case silent = 0, error, warning, info, debug
    }

    /// Sets FFmpeg's and OpenCV's level to `level`.
    public static func setLevel(_ level: Level) {
        // Every case is in the shim's range, so the call cannot fail.
        _ = cvb_set_library_log_level(level.rawValue)
    }
}
