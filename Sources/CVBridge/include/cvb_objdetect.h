// OpenCV's objdetect and dnn: faces (YuNet through `cv::FaceDetectorYN` or `cv::dnn::Net`, Haar
// cascades) and QR codes (`cv::QRCodeDetector` to locate, `cv::QRCodeEncoder` to draw; Debian's
// OpenCV has no QUIRC, so no decoding here). Marshalling only: thresholds, sizes and which
// network runs are the Swift caller's. These run in the objdetect module
// (libCVBridgeObjdetect.so: objdetect and dnn), loaded on the first call; when it cannot be
// loaded they fail with CVB_ERROR_MODULE_UNAVAILABLE.
#ifndef CVB_OBJDETECT_H
#define CVB_OBJDETECT_H

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
/// Runs the detector on a BGR image with the network input `input_width` × `input_height`, which
/// the caller chooses and which must hold the image (2022mar: `setInputSize` when it differs from
/// the last, then `detect`, which needs the image at the input size; 2023: the image padded with
/// black at the bottom and right to the input size, `blobFromImage`, `forward`, decode,
/// `NMSBoxes`). Writes up to `capacity` rows of CVB_YUNET_ROW floats to `rows` (pixels of `image`)
/// and the number of faces found to `count` (which may exceed `capacity`). Returns 0 or -1.
int cvb_yunet_detect(cvb_yunet *detector, const cvb_image *image, int32_t input_width, int32_t input_height,
                     float *rows, int32_t capacity, int32_t *count, cvb_error *err);

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

/// Finds QR-like quadrilaterals (`cv::QRCodeDetector::detectMulti`, or `detect` when `multi`
/// is 0) in a GRAY or BGR image. Writes up to `capacity` quads, 8 floats each (x0,y0 … x3,y3
/// in OpenCV's order), into `quads` and returns how many were found (may exceed `capacity`),
/// or -1 with `err` filled.
int32_t cvb_qr_locate(const cvb_image *src, int32_t multi, float *quads, int32_t capacity, cvb_error *err);

/// Encodes bytes as a QR symbol (`cv::QRCodeEncoder`): one module per pixel, with the quiet zone
/// OpenCV adds, as a GRAY matrix. `version` 0 lets the encoder choose; `correction` is
/// 0=L, 1=M, 2=Q, 3=H.
cvb_mat *cvb_qr_encode(const uint8_t *bytes, size_t length, int32_t version, int32_t correction,
                       cvb_error *err);

#ifdef __cplusplus
}
#endif
#endif
