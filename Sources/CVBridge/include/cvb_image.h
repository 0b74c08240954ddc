// The types every call shares: pixel formats, views of pixel memory (`cvb_image`), errors
// (`cvb_error`) and OpenCV-owned matrices (`cv::Mat` as `cvb_mat`).
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

/// `cvb_error.code` when a call needs one of the shim's modules (the shared objects holding the
/// OpenCV parts that are loaded on first use, see cvb_module_load) and it is missing, cannot be
/// loaded, or is from another build. The message names the file and where it was looked for.
enum { CVB_ERROR_MODULE_UNAVAILABLE = -100001 };

/// The shim's modules: shared objects beside the program (or in ../lib/cvcam from its folder)
/// that hold the calls needing OpenCV's heavy libraries, loaded on the first call that needs one.
typedef enum {
    CVB_MODULE_VIDEO = 0,      ///< libCVBridgeVideo.so: videoio, libavformat (cvb_video.h)
    CVB_MODULE_OBJDETECT = 1,  ///< libCVBridgeObjdetect.so: objdetect, dnn (cvb_objdetect.h)
    CVB_MODULE_IMGCODECS = 2,  ///< libCVBridgeImgcodecs.so: imgcodecs (cvb_imgcodecs.h)
} cvb_module;

/// Loads `module` now rather than on its first call (`dlopen`). Returns 0, or -1 with `err`
/// filled (CVB_ERROR_MODULE_UNAVAILABLE). A failure is remembered: later calls report it again.
int cvb_module_load(cvb_module module, cvb_error *err);

/// An OpenCV matrix owned by the bridge (`cv::Mat`). Release with `cvb_mat_release`.
typedef struct cvb_mat cvb_mat;

/// Bytes needed for an image of this size and format with tightly packed rows.
size_t cvb_image_byte_count(int32_t width, int32_t height, int32_t format);

/// Allocates a matrix (`cv::Mat::create`). Returns NULL and fills `err` on failure.
cvb_mat *cvb_mat_create(int32_t width, int32_t height, int32_t format, cvb_error *err);
/// Frees a matrix; NULL is ignored.
void cvb_mat_release(cvb_mat *mat);
/// A view of the matrix's pixels, valid while the matrix lives, in the layout the matrix was
/// made with (`cvb_mat_create`'s format; BGR or GRAY for decoded images and QR symbols; GRAY
/// for encoded bytes), so an NV12 matrix reports its frame height, not its row count.
cvb_image cvb_mat_image(const cvb_mat *mat);

#ifdef __cplusplus
}
#endif
#endif
