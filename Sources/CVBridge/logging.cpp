// Library log levels: a table from the shim's levels to FFmpeg's and OpenCV's.
#include "include/cvb_logging.h"

#include <opencv2/core/utils/logger.hpp>

#include <atomic>
#include <cstdarg>

extern "C" {
#include <libavutil/log.h>
}

namespace {
// OpenCV sets av_log's level itself when it first opens a video (to AV_LOG_ERROR), so the level
// chosen here is kept apart and applied by a callback OpenCV leaves alone.
std::atomic<int> ffmpeg_level{AV_LOG_ERROR};

void ffmpeg_callback(void *context, int level, const char *format, va_list args) {
    if (level > ffmpeg_level.load(std::memory_order_relaxed)) return;
    av_log_default_callback(context, level, format, args);
}
} // namespace

extern "C" int cvb_set_library_log_level(int level) {
    using cv::utils::logging::LogLevel;
    static const int ffmpeg[] = {AV_LOG_QUIET, AV_LOG_ERROR, AV_LOG_WARNING, AV_LOG_INFO, AV_LOG_DEBUG};
    static const LogLevel opencv[] = {LogLevel::LOG_LEVEL_SILENT, LogLevel::LOG_LEVEL_ERROR, LogLevel::LOG_LEVEL_WARNING,
                                      LogLevel::LOG_LEVEL_INFO, LogLevel::LOG_LEVEL_DEBUG};
    if (level < CVB_LIBRARY_LOG_SILENT || level > CVB_LIBRARY_LOG_DEBUG) return -1;
    ffmpeg_level.store(ffmpeg[level], std::memory_order_relaxed);
    av_log_set_level(ffmpeg[level]);
    av_log_set_callback(ffmpeg_callback);
    cv::utils::logging::setLogLevel(opencv[level]);
    return 0;
}
