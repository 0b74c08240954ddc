// OpenCV's imgcodecs: image files and encoded buffers (`cv::imread`, `cv::imencode`,
// `cv::imdecode`). Marshalling only: formats and qualities are the caller's. These run in the
// imgcodecs module (libCVBridgeImgcodecs.so), loaded on the first call; when it cannot be
// loaded they fail with CVB_ERROR_MODULE_UNAVAILABLE. JPEG and PNG decode without it: cvb_stills.h.
#ifndef CVB_IMGCODECS_H
#define CVB_IMGCODECS_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Decodes an image file (`cv::imread`, which applies EXIF orientation).
/// `format` is CVB_FORMAT_BGR or CVB_FORMAT_GRAY. Returns NULL and fills `err` when
/// the file cannot be read or is not an image OpenCV can decode.
cvb_mat *cvb_image_read(const char *path, int32_t format, cvb_error *err);

/// Encodes an image (`cv::imencode`). `extension` is ".jpg" or ".png"; `params` are OpenCV
/// IMWRITE_* key, value pairs laid out flat; `param_count` counts int32 values (twice the number
/// of pairs; an odd count is refused). `params` may be NULL when `param_count` is 0. The encoded bytes are returned as
/// a 1-row matrix: read them with `cvb_mat_image(...).data`, length `cvb_mat_byte_length`.
cvb_mat *cvb_image_encode(const cvb_image *src, const char *extension,
                          const int32_t *params, int32_t param_count, cvb_error *err);
/// Total bytes of a matrix's pixel data (for encoded buffers).
size_t cvb_mat_byte_length(const cvb_mat *mat);

/// Decodes an encoded image (`cv::imdecode` with a destination) into `dst`, which must be BGR
/// or GRAY and already sized like the encoded image. Returns 0 on success; -1 with `err` filled
/// when the bytes are no image, are damaged beyond decoding, or decode to another size (`dst`
/// then holds nothing meaningful: a decode that failed midway may have written part of it).
int cvb_image_decode_into(const uint8_t *bytes, size_t length, cvb_image *dst, cvb_error *err);

#ifdef __cplusplus
}
#endif
#endif
