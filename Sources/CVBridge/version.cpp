// cvb_version.h: the run-time versions of the libraries behind the shim.
#include "include/cvb_version.h"
#include "module_api.hpp"

#include <cstdio>
#include <opencv2/core.hpp>
#include <zbar.h>
#include <ZXVersion.h>

extern "C" int cvb_library_version(cvb_library library, char *buffer, size_t capacity) {
    if (buffer == nullptr || capacity == 0) return -1;
    switch (library) {
    case CVB_LIBRARY_OPENCV:
        std::snprintf(buffer, capacity, "%s", cv::getVersionString().c_str());
        return 0;
    case CVB_LIBRARY_ZBAR: {
        unsigned major = 0, minor = 0, patch = 0;
        zbar::zbar_version(&major, &minor, &patch);
        std::snprintf(buffer, capacity, "%u.%u.%u", major, minor, patch);
        return 0;
    }
    case CVB_LIBRARY_ZXING:
        std::snprintf(buffer, capacity, "%d.%d.%d", ZXING_VERSION_MAJOR, ZXING_VERSION_MINOR, ZXING_VERSION_PATCH);
        return 0;
    case CVB_LIBRARY_AVFORMAT: {
        // libavformat is the video module's: asking for its version loads it.
        cvb_error err;
        const cvb_video_table *video = cvb::video_module(&err);
        if (!video) return -1;
        unsigned v = video->avformat_version();
        std::snprintf(buffer, capacity, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
        return 0;
    }
    }
    return -1;
}
