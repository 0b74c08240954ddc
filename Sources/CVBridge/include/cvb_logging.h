// How much FFmpeg (libavutil's av_log) and OpenCV (cv::utils::logging) print on stderr by
// themselves. The caller chooses the level; this only translates it for each library.
#ifndef CVB_LOGGING_H
#define CVB_LOGGING_H

#ifdef __cplusplus
extern "C" {
#endif

/// Levels for the libraries' own messages, quietest first; each includes the ones before it.
enum {
    CVB_LIBRARY_LOG_SILENT = 0,
    CVB_LIBRARY_LOG_ERROR = 1,
    CVB_LIBRARY_LOG_WARNING = 2,
    CVB_LIBRARY_LOG_INFO = 3,
    CVB_LIBRARY_LOG_DEBUG = 4,
};

/// Sets FFmpeg's level (`av_log_set_level`: AV_LOG_QUIET, _ERROR, _WARNING, _INFO, _DEBUG; kept
/// by an `av_log_set_callback` filter, since OpenCV resets av_log's level) and OpenCV's (`cv::utils::logging::setLogLevel`: LOG_LEVEL_SILENT, _ERROR, _WARNING, _INFO,
/// _DEBUG) to `level`. FFmpeg's level is applied when the video module loads, if it is not loaded
/// yet (this call does not load it). Process-wide; safe to call from any thread. Returns 0, or -1 for a level
/// outside the enum (nothing is changed then).
int cvb_set_library_log_level(int level);

#ifdef __cplusplus
}
#endif
#endif
