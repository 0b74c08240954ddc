// Photos and snapshots: image measurements the photo output and the snapshot trigger need.
#ifndef CVB_PHOTO_H
#define CVB_PHOTO_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

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
