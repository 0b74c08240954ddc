// Decoding into caller-owned memory. See include/cvb_imgcodecs.h.
#include "bridge_internal.hpp"

#include <opencv2/imgcodecs.hpp>

extern "C" int cvb_image_decode_into(const uint8_t *bytes, size_t length, cvb_image *dst, cvb_error *err) {
    return cvb::guarded(err, [&] {
        int flags = dst->format == CVB_FORMAT_GRAY ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR;
        cv::Mat buf(1, (int)length, CV_8UC1, (void *)bytes);
        cv::Mat target = cvb::as_mat(dst);
        uchar *memory = target.data;
        cv::imdecode(buf, flags, &target);
        // imdecode reallocates `target` when the encoded size differs: the caller's memory was
        // then not written, and the frame is not what the caller sized it for.
        if (target.empty() || target.data != memory) {
            cvb::set_error(err, -1, target.empty() ? "OpenCV could not decode the frame"
                                                   : "the encoded frame's size differs from the buffer's");
            return -1;
        }
        return 0;
    });
}
