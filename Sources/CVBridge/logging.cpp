// Library log levels: a table from the shim's levels to OpenCV's; FFmpeg's half lives in the
// video module (libCVBridgeVideo.so), which gets the level now or when it loads.
#include "include/cvb_logging.h"
#include "module_api.hpp"

#include <opencv2/core/utils/logger.hpp>

extern "C" int cvb_set_library_log_level(int level) {
    using cv::utils::logging::LogLevel;
    static const LogLevel opencv[] = {LogLevel::LOG_LEVEL_SILENT, LogLevel::LOG_LEVEL_ERROR, LogLevel::LOG_LEVEL_WARNING,
                                      LogLevel::LOG_LEVEL_INFO, LogLevel::LOG_LEVEL_DEBUG};
    if (level < CVB_LIBRARY_LOG_SILENT || level > CVB_LIBRARY_LOG_DEBUG) return -1;
    cvb::set_ffmpeg_log_level(level);
    cv::utils::logging::setLogLevel(opencv[level]);
    return 0;
}
