// Faces: OpenCV's YuNet (`cv::FaceDetectorYN`) and Haar cascades (`cv::CascadeClassifier`),
// plus the plain image measurements CaptureKit's face policy uses. Marshalling only: every
// threshold, scale and decision is a parameter chosen by CaptureKit.
#ifndef CVB_FACES_H
#define CVB_FACES_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A YuNet face detector: YuNet 2022mar through `cv::FaceDetectorYN`, the 2023 models (YuNet-n,
/// YuNet-s) through `cv::dnn::Net` with the decode OpenCV 4.8's `FaceDetectorYN` uses. One thread
/// at a time per handle.
typedef struct cvb_yunet cvb_yunet;
/// A Haar cascade classifier (`cv::CascadeClassifier`). One thread at a time per handle.
typedef struct cvb_cascade cvb_cascade;

/// Floats per YuNet detection row: x, y, w, h, then right eye, left eye, nose tip, right and
/// left mouth corner as (x, y) pairs, then the score.
enum { CVB_YUNET_ROW = 15 };

/// Loads a YuNet ONNX model (`cv::dnn::readNetFromONNX`). A 2023 model (outputs `cls_8` …
/// `kps_32`) runs as that network; any other goes to `cv::FaceDetectorYN::create(model, "",
/// {width, height}, score_threshold, nms_threshold, top_k)`. Both report candidates scoring at
/// least `score_threshold` after `cv::dnn::NMSBoxes` at `nms_threshold`, the best `top_k`.
/// Returns NULL and fills `err` when the model cannot be read or parsed.
cvb_yunet *cvb_yunet_create(const char *model_path, int32_t width, int32_t height, float score_threshold,
                            float nms_threshold, int32_t top_k, cvb_error *err);
/// Frees the detector; NULL is ignored.
void cvb_yunet_release(cvb_yunet *detector);
/// 1 when the detector runs a 2023 model, else 0.
int32_t cvb_yunet_is_2023(const cvb_yunet *detector);
/// Runs the detector on a BGR image (2022mar: `setInputSize` to the image's size when it
/// differs, then `detect`; 2023: the image padded with black to multiples of 32 at the bottom
/// and right, `blobFromImage`, `forward`, decode, `NMSBoxes`). Writes up to `capacity` rows of CVB_YUNET_ROW floats to `rows` (pixels of `image`)
/// and the number of faces found to `count` (which may exceed `capacity`). Returns 0 or -1.
int cvb_yunet_detect(cvb_yunet *detector, const cvb_image *image, float *rows, int32_t capacity,
                     int32_t *count, cvb_error *err);

/// Loads a cascade file (`cv::CascadeClassifier::load`). Returns NULL and fills `err` when the
/// file is missing or not a cascade.
cvb_cascade *cvb_cascade_create(const char *path, cvb_error *err);
/// Frees the classifier; NULL is ignored.
void cvb_cascade_release(cvb_cascade *cascade);
/// `cv::CascadeClassifier::detectMultiScale` (the overload that reports neighbour counts) on a
/// BGR or GRAY image (BGR is converted to gray first). Writes up to `capacity` rectangles as
/// x, y, w, h to `rects`, their neighbour counts to `neighbours`, and the total to `count`.
/// `max_width`/`max_height` 0 means no limit.
int cvb_cascade_detect(cvb_cascade *cascade, const cvb_image *image, double scale_factor, int32_t min_neighbours,
                       int32_t min_width, int32_t min_height, int32_t max_width, int32_t max_height,
                       int32_t *rects, int32_t *neighbours, int32_t capacity, int32_t *count, cvb_error *err);

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

#ifdef __cplusplus
}
#endif
#endif
