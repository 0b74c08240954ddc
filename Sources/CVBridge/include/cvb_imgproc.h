// OpenCV's core and imgproc operations on `cvb_image` views: conversions, transforms, warps,
// drawing, filters, thresholds and measurements. Marshalling only: every interpolation, kernel,
// threshold and rectangle is a parameter the Swift caller chose.
#ifndef CVB_IMGPROC_H
#define CVB_IMGPROC_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/// The 3×3 perspective transform taking the four `from` points onto the four `to` points
/// (`cv::getPerspectiveTransform`), row-major into `matrix`.
int32_t cvb_perspective_transform(const float from[8], const float to[8], double matrix[9], cvb_error *err);

/// Border handling of `cvb_image_warp_perspective`.
enum {
    CVB_BORDER_CONSTANT = 0,    ///< fill outside pixels with `border_value` (cv::BORDER_CONSTANT)
    CVB_BORDER_TRANSPARENT = 1, ///< leave `dst` untouched where `src` does not land (cv::BORDER_TRANSPARENT)
    CVB_BORDER_REPLICATE = 2,   ///< repeat the edge pixels (cv::BORDER_REPLICATE)
};

/// Warps `src` into `dst` with a forward 3×3 `matrix` (`cv::warpPerspective`). `dst` is
/// preallocated (its size is the output size) with `src`'s format (GRAY, BGR or BGRA).
int32_t cvb_image_warp_perspective(const cvb_image *src, cvb_image *dst, const double matrix[9],
                                   int32_t interpolation, int32_t border, uint8_t border_value,
                                   cvb_error *err);

/// Gaussian blur (`cv::GaussianBlur`, kernel size derived from `sigma`). In place when
/// `src` and `dst` are the same view.
int32_t cvb_image_gaussian_blur(const cvb_image *src, cvb_image *dst, double sigma, cvb_error *err);

/// `dst = saturate(src * alpha + beta)` per channel (`cv::Mat::convertTo`): contrast, brightness,
/// and inversion (alpha -1, beta 255). In place allowed.
int32_t cvb_image_scale(const cvb_image *src, cvb_image *dst, double alpha, double beta, cvb_error *err);

/// Adds seeded Gaussian noise with zero mean and `stddev` (`cv::RNG::fill` + `cv::add`, saturating).
int32_t cvb_image_add_noise(cvb_image *dst, uint64_t seed, double stddev, cvb_error *err);

/// Unsharp mask: `dst = src * (1 + amount) - blur(src, sigma) * amount` (`cv::GaussianBlur`,
/// `cv::addWeighted`). GRAY only.
int32_t cvb_image_unsharp(const cvb_image *src, cvb_image *dst, double sigma, double amount, cvb_error *err);

/// Threshold kinds of `cvb_image_threshold`.
enum {
    CVB_THRESHOLD_FIXED = 0,    ///< `cv::threshold` at `value`
    CVB_THRESHOLD_OTSU = 1,     ///< `cv::threshold` with THRESH_OTSU (value ignored)
};
/// Binarises a GRAY image to 0/255 (`cv::threshold`, THRESH_BINARY). In place allowed.
int32_t cvb_image_threshold(const cvb_image *src, cvb_image *dst, int32_t kind, double value, cvb_error *err);

/// The mean of the `block`×`block` window around each pixel of a GRAY image (`cv::boxFilter`,
/// normalised, BORDER_REPLICATE). `block` is odd and ≥ 3.
int32_t cvb_image_local_mean(const cvb_image *src, cvb_image *dst, int32_t block, cvb_error *err);

/// `cvb_image_local_mean` (`window`, BORDER_REPLICATE) of a copy of a GRAY image in which flat
/// blocks lighter than the texture near them count as that texture: the image is cut into
/// `block`×`block` blocks; a block whose darkest and lightest pixels differ by at most
/// `min_range` levels is flat, and when its darkest pixel lies above the level of the textured
/// blocks within a window's reach of it (the blocks `window / 2` pixels reach; each block's
/// level the midpoint of its darkest and lightest pixels, averaged over their pixels), its
/// pixels count as that level. Otherwise, and with no flat block, the result is
/// `cvb_image_local_mean`'s. `window` is odd and ≥ 3; `block` 2–256.
int32_t cvb_image_textured_mean(const cvb_image *src, cvb_image *dst, int32_t block, int32_t window, int32_t min_range,
                                cvb_error *err);

/// 255 where `src > saturate(mean - offset)`, else 0 (`cv::subtract`, `cv::compare` CMP_GT):
/// `cv::adaptiveThreshold`'s MEAN_C comparison against a mean from `cvb_image_local_mean`, so
/// one mean serves several offsets. GRAY images of one size; `offset` ≥ 0.
int32_t cvb_image_above_mean(const cvb_image *src, const cvb_image *mean, cvb_image *dst, double offset,
                             cvb_error *err);

/// Mean absolute Laplacian-like gradient per cell of a `cols`×`rows` grid over a GRAY image
/// (`cv::Sobel` x and y, `cv::abs`, `cv::resize` INTER_AREA to the grid): a coarse map of
/// where an image has fine detail. `cells` holds `cols * rows` floats, row-major.
int32_t cvb_image_detail_grid(const cvb_image *src, int32_t cols, int32_t rows, float *cells, cvb_error *err);

/// Copies the rectangle (x, y, w, h) of `src` scaled to `dst`'s size into `dst` (`cv::resize`
/// with `interpolation`). The rectangle must lie inside `src`; formats must match.
int cvb_image_crop_resize(const cvb_image *src, int32_t x, int32_t y, int32_t w, int32_t h, cvb_image *dst,
                          int32_t interpolation, cvb_error *err);

/// Mean and standard deviation of the luma of the rectangle (x, y, w, h) of `src`, clipped to
/// the image, after shrinking it to at most `sample` × `sample` pixels (`cv::resize`, INTER_AREA
/// averaging, or INTER_NEAREST picking pixels when `nearest` is non-zero; then `cv::meanStdDev`);
/// `sample` 0 measures at full resolution. BGR, BGRA or GRAY. An empty rectangle gives mean 0
/// and deviation 0.
int cvb_image_region_stats(const cvb_image *src, int32_t x, int32_t y, int32_t w, int32_t h, int32_t sample,
                           int32_t nearest, double *mean, double *stddev, cvb_error *err);

/// Rotates `src` by `degrees` (counter-clockwise as OpenCV counts, positive = anticlockwise on
/// screen) about its centre into `dst` of the same size and format, filling uncovered pixels by
/// replicating the border (`cv::getRotationMatrix2D` + `cv::warpAffine`, INTER_LINEAR).
int cvb_image_rotate_degrees(const cvb_image *src, cvb_image *dst, double degrees, cvb_error *err);

/// Samples a rotated, scaled square of `src` into `dst`: the point (centre_x, centre_y) lands
/// on `dst`'s centre, the content turned by `degrees` (positive = anticlockwise on screen) and
/// scaled by `scale` (`cv::getRotationMatrix2D` with the translation moved to `dst`'s centre,
/// `cv::warpAffine`, INTER_LINEAR, border replicated). Formats must match.
int cvb_image_warp_rotated(const cvb_image *src, double centre_x, double centre_y, double degrees, double scale,
                           cvb_image *dst, cvb_error *err);

/// Variance of the Laplacian of a rectangle of `src` (`cv::cvtColor` to gray when needed,
/// `cv::Laplacian` with CV_64F and a 3x3 aperture, `cv::meanStdDev`), a common focus measure:
/// sharper images have larger values. The rectangle is clipped to the image; an empty
/// rectangle is an error. BGR, BGRA and GRAY only.
int cvb_image_laplacian_variance(const cvb_image *src, int32_t x, int32_t y, int32_t width, int32_t height,
                                 double *variance, cvb_error *err);

#ifdef __cplusplus
}
#endif
#endif
