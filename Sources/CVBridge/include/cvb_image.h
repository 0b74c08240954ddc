// Images: views over pixel memory, OpenCV-owned matrices, conversions, drawing, codecs.
#ifndef CVB_IMAGE_H
#define CVB_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Pixel layouts that cross the bridge. Values are stable (CaptureKit stores them).
typedef enum {
    CVB_FORMAT_BGR = 0,   ///< 8-bit B,G,R interleaved (OpenCV's CV_8UC3)
    CVB_FORMAT_GRAY = 1,  ///< 8-bit luma (CV_8UC1)
    CVB_FORMAT_YUYV = 2,  ///< packed 4:2:2, Y0 U Y1 V (V4L2_PIX_FMT_YUYV)
    CVB_FORMAT_NV12 = 3,  ///< planar Y then interleaved UV, 4:2:0 (V4L2_PIX_FMT_NV12); stride is the Y stride
    CVB_FORMAT_BGRA = 4,  ///< 8-bit B,G,R,A (CV_8UC4)
} cvb_pixel_format;

/// A view of pixel memory owned by someone else. `stride` is bytes per row.
typedef struct {
    uint8_t *data;
    int32_t width;
    int32_t height;
    int32_t stride;
    int32_t format; ///< a cvb_pixel_format
} cvb_image;

/// Error text filled by a failing call (OpenCV's exception message, ZBar's error, or errno text).
typedef struct {
    int32_t code;       ///< library status or errno; 0 when not applicable
    char message[512];
} cvb_error;

/// An OpenCV matrix owned by the bridge (`cv::Mat`). Release with `cvb_mat_release`.
typedef struct cvb_mat cvb_mat;

/// Bytes needed for an image of this size and format with tightly packed rows.
size_t cvb_image_byte_count(int32_t width, int32_t height, int32_t format);

/// Allocates a matrix (`cv::Mat::create`). Returns NULL and fills `err` on failure.
cvb_mat *cvb_mat_create(int32_t width, int32_t height, int32_t format, cvb_error *err);
/// Frees a matrix; NULL is ignored.
void cvb_mat_release(cvb_mat *mat);
/// A view of the matrix's pixels, valid while the matrix lives.
cvb_image cvb_mat_image(const cvb_mat *mat);

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

/// Converts between formats (`cv::cvtColor`). `dst` must be preallocated with `src`'s size.
/// Supported: BGR/BGRA/GRAY/YUYV/NV12 → BGR or GRAY, BGR → BGRA, and same-format copy.
int cvb_image_convert(const cvb_image *src, cvb_image *dst, cvb_error *err);

/// Rotates clockwise by 0/90/180/270 degrees, then mirrors left-right when `mirror` is
/// non-zero (`cv::rotate`, `cv::flip`). `dst` must be preallocated with the rotated size.
/// BGR, BGRA and GRAY only.
int cvb_image_rotate_mirror(const cvb_image *src, cvb_image *dst, int32_t degrees, int32_t mirror,
                            cvb_error *err);

/// Interpolation of resizes and warps (cv::InterpolationFlags values); the caller chooses.
enum {
    CVB_INTER_NEAREST = 0,
    CVB_INTER_LINEAR = 1,
    CVB_INTER_CUBIC = 2,
    CVB_INTER_AREA = 3,
};

/// Resizes `src` into `dst`'s size with `interpolation` (`cv::resize`).
int cvb_image_resize(const cvb_image *src, cvb_image *dst, int32_t interpolation, cvb_error *err);

/// Fills the whole image with one colour (`cv::Mat::setTo`).
int cvb_image_fill(cvb_image *dst, uint8_t b, uint8_t g, uint8_t r, cvb_error *err);
/// Fills a rectangle, clipped to the image (`cv::rectangle`, filled).
int cvb_image_fill_rect(cvb_image *dst, int32_t x, int32_t y, int32_t w, int32_t h,
                        uint8_t b, uint8_t g, uint8_t r, cvb_error *err);
/// Fills with Gaussian noise from a seeded generator (`cv::RNG(seed).fill`, NORMAL).
int cvb_image_fill_noise(cvb_image *dst, uint64_t seed, double mean, double stddev, cvb_error *err);
/// Draws `src` scaled to w×h (with `interpolation`) with its top-left at (x, y) in `dst`,
/// clipped to `dst` (`cv::resize` + `cv::Mat::copyTo`). Formats must match.
int cvb_image_blit(cvb_image *dst, const cvb_image *src, int32_t x, int32_t y, int32_t w, int32_t h,
                   int32_t interpolation, cvb_error *err);

/// Encodes bytes as a QR symbol (`cv::QRCodeEncoder`): one module per pixel, with the quiet zone
/// OpenCV adds, as a GRAY matrix. `version` 0 lets the encoder choose; `correction` is
/// 0=L, 1=M, 2=Q, 3=H.
cvb_mat *cvb_qr_encode(const uint8_t *bytes, size_t length, int32_t version, int32_t correction,
                       cvb_error *err);

#ifdef __cplusplus
}
#endif
#endif
