// The focus measure for photos and snapshots (cvb_imgproc.h).
#include "bridge_internal.hpp"

#include <opencv2/imgproc.hpp>

using namespace cvb;

extern "C" {

int cvb_image_laplacian_variance(const cvb_image *src, int32_t x, int32_t y, int32_t width, int32_t height,
                                 double *variance, cvb_error *err) {
    return guarded(err, [&] {
        if (src->format != CVB_FORMAT_BGR && src->format != CVB_FORMAT_BGRA && src->format != CVB_FORMAT_GRAY) {
            set_error(err, -1, "the focus measure takes BGR, BGRA or GRAY images");
            return -1;
        }
        cv::Rect roi = cv::Rect(x, y, width, height) & cv::Rect(0, 0, src->width, src->height);
        if (roi.empty()) {
            set_error(err, -1, "the rectangle lies outside the image");
            return -1;
        }
        cv::Mat region = as_mat(src)(roi);
        cv::Mat gray;
        if (src->format == CVB_FORMAT_BGR) cv::cvtColor(region, gray, cv::COLOR_BGR2GRAY);
        else if (src->format == CVB_FORMAT_BGRA) cv::cvtColor(region, gray, cv::COLOR_BGRA2GRAY);
        else gray = region;
        cv::Mat lap;
        cv::Laplacian(gray, lap, CV_64F, 3);
        cv::Scalar mean, stddev;
        cv::meanStdDev(lap, mean, stddev);
        *variance = stddev[0] * stddev[0];
        return 0;
    });
}

} // extern "C"
