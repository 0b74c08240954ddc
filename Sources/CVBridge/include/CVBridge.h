// CVBridge: a plain C ABI over OpenCV, ZBar and zxing-cpp for CaptureKit.
//
// Rules for everything in this module:
// - marshalling only: no thresholds, no retries, no choices. Policy lives in Swift.
// - no C++ type crosses this header; images cross as `cvb_image` views or opaque `cvb_mat` handles.
// - every fallible call returns 0 on success (or a documented status) and fills a `cvb_error`.
// - thread-safety: functions are reentrant; a handle (reader, writer, detector) must be used by
//   one thread at a time.
#ifndef CVBRIDGE_H
#define CVBRIDGE_H

// One header per library part wrapped. The calls of cvb_imgcodecs.h, cvb_objdetect.h and
// cvb_video.h run in modules loaded on first use (cvb_image.h, cvb_module_load).
#include "cvb_image.h"      // shared types: pixel formats, image views, errors, matrices
#include "cvb_imgproc.h"    // OpenCV core + imgproc
#include "cvb_stills.h"     // libjpeg-turbo and libpng (JPEG and PNG without imgcodecs)
#include "cvb_imgcodecs.h"  // OpenCV imgcodecs
#include "cvb_objdetect.h"  // OpenCV objdetect + dnn (faces, QR locate/encode)
#include "cvb_video.h"      // OpenCV videoio + libavformat
#include "cvb_zbar.h"       // ZBar
#include "cvb_zxing.h"      // zxing-cpp
#include "cvb_logging.h"    // OpenCV's and FFmpeg's own log output
#include "cvb_version.h"    // the libraries' run-time versions (cvcam doctor)


#endif
