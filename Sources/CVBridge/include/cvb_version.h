// Versions of the libraries CVBridge calls, as they report themselves at run time (the shared
// library actually loaded, not the headers it was built against — except zxing-cpp 1.4, which
// has no run-time version call). For `cvcam doctor`.
#ifndef CVB_VERSION_H
#define CVB_VERSION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Which library `cvb_library_version` describes.
typedef enum {
    CVB_LIBRARY_OPENCV = 0,    // cv::getVersionString()
    CVB_LIBRARY_ZBAR = 1,      // zbar_version()
    CVB_LIBRARY_ZXING = 2,     // ZXVersion.h (build time)
    CVB_LIBRARY_AVFORMAT = 3,  // avformat_version(), from the video module (loads it)
} cvb_library;

/// Writes the version of `library` as text ("4.6.0") into `buffer` (NUL-terminated, truncated
/// to `capacity`). Returns 0, or -1 for an unknown library or when the module holding it cannot
/// be loaded (cvb_module_load says why).
int cvb_library_version(cvb_library library, char *buffer, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif
