// Decoding compressed camera frames into caller-owned memory (V4L2 MJPEG), so steady-state
// capture allocates nothing per frame.
#ifndef CVB_DECODE_H
#define CVB_DECODE_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Decodes an encoded image (`cv::imdecode` with a destination) into `dst`, which must be BGR
/// or GRAY and already sized like the encoded image. Returns 0 on success; -1 with `err` filled
/// when the bytes do not decode or decode to another size (nothing is then written to `dst`).
int cvb_image_decode_into(const uint8_t *bytes, size_t length, cvb_image *dst, cvb_error *err);

#ifdef __cplusplus
}
#endif
#endif
