// CVBridge: a plain C ABI over OpenCV, ZBar and zxing-cpp for CaptureKit.
//
// Rules for everything in this module:
// - marshalling only: no thresholds, no retries, no choices. Policy lives in CaptureKit.
// - no C++ type crosses this header; images cross as `cvb_image` views or opaque `cvb_mat` handles.
// - every fallible call returns 0 on success (or a documented status) and fills a `cvb_error`.
// - thread-safety: functions are reentrant; a handle (reader, writer, detector) must be used by
//   one thread at a time.
#ifndef CVBRIDGE_H
#define CVBRIDGE_H

#include "cvb_image.h"
#include "cvb_video.h"
#include "cvb_faces.h"

#include "cvb_decode.h"

#include "cvb_photo.h"

#include "cvb_codes.h"
#include "cvb_zxing.h"

#include "cvb_version.h"

#endif
