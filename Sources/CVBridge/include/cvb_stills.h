// JPEG and PNG straight through libjpeg-turbo and libpng: still images without OpenCV's
// imgcodecs (whose other formats bring GDAL, GDCM, OpenEXR and more into the process). The
// library calls are those OpenCV 4.6's JPEG and PNG decoders make, in their order, so the
// pixels are the ones cv::imread and cv::imdecode give (BGR or GRAY, 8 bits); unlike them,
// these apply no EXIF orientation but hand back the bytes OpenCV reads it from.
#ifndef CVB_STILLS_H
#define CVB_STILLS_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The codec to decode with; choosing it (from the file's first bytes) is the caller's.
typedef enum {
    CVB_STILL_JPEG = 0,  ///< libjpeg-turbo, as OpenCV's JpegDecoder
    CVB_STILL_PNG = 1,   ///< libpng, as OpenCV's PngDecoder
} cvb_still_codec;

/// `cvb_error.code` of `cvb_still_decode_into` when the image is not the destination's size.
enum { CVB_ERROR_SIZE_DIFFERS = -100002 };

/// Decodes the file at `path` as BGR or GRAY (`format`) into a new matrix. Refuses, before
/// allocating, an image over `max_pixels` pixels or over OpenCV's limits (2^20 a side, 2^30
/// pixels). When `exif` is not NULL it receives the EXIF block OpenCV reads the orientation
/// from (a JPEG's first APP1 segment after its 6-byte header, a PNG's eXIf chunk) as a 1-row
/// byte matrix, or NULL when there is none. Returns NULL and fills `err` when the file cannot
/// be opened or decoded (libjpeg's or libpng's message). libjpeg's and libpng's warnings
/// print on stderr, as they do under OpenCV.
cvb_mat *cvb_still_read(const char *path, cvb_still_codec codec, int32_t format, uint64_t max_pixels,
                        cvb_mat **exif, cvb_error *err);

/// Decodes encoded bytes into `dst` (BGR or GRAY, already the image's size), with `exif` as in
/// `cvb_still_read`. Returns 0; -1 with `err` filled when the bytes do not decode, and with
/// code CVB_ERROR_SIZE_DIFFERS, before anything is written, when the image's size is not
/// `dst`'s. A damaged image that decodes in part keeps its decoded rows (the last one repeated
/// below them, as OpenCV does).
int cvb_still_decode_into(const uint8_t *bytes, size_t length, cvb_still_codec codec, cvb_image *dst,
                          cvb_mat **exif, cvb_error *err);

#ifdef __cplusplus
}
#endif
#endif
