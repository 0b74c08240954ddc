// The region operations the face detector uses (cvb_imgproc.h): crops, statistics, rotations.
#include "bridge_internal.hpp"

#include <opencv2/imgproc.hpp>

using namespace cvb;

extern "C" {

int cvb_image_crop_resize(const cvb_image *src, int32_t x, int32_t y, int32_t w, int32_t h, cvb_image *dst,
                          int32_t interpolation, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat s = as_mat(src), d = as_mat(dst);
        cv::Rect r(x, y, w, h);
        if (src->format != dst->format || w <= 0 || h <= 0 || (r & cv::Rect(0, 0, s.cols, s.rows)) != r) {
            set_error(err, -1, "crop needs matching formats and a rectangle inside the source");
            return -1;
        }
        cv::Mat region = s(r);
        if (region.size() == d.size()) {
            region.copyTo(d);
        } else {
            cv::resize(region, d, d.size(), 0, 0, interpolation);
        }
        if (d.data != dst->data) {
            set_error(err, -1, "destination buffer has the wrong layout");
            return -1;
        }
        return 0;
    });
}

int cvb_image_region_stats(const cvb_image *src, int32_t x, int32_t y, int32_t w, int32_t h, int32_t sample,
                           int32_t nearest, double *mean, double *stddev, cvb_error *err) {
    return guarded(err, [&] {
        *mean = 0;
        *stddev = 0;
        cv::Mat m = as_mat(src);
        cv::Rect r = cv::Rect(x, y, w, h) & cv::Rect(0, 0, m.cols, m.rows);
        if (r.area() <= 0) return 0;
        cv::Mat region = m(r);
        if (sample > 0 && (region.cols > sample || region.rows > sample)) {
            cv::Mat small;
            cv::resize(region, small, cv::Size(std::min(sample, region.cols), std::min(sample, region.rows)), 0, 0,
                       nearest ? cv::INTER_NEAREST : cv::INTER_AREA);
            region = small;
        }
        cvb_image view = as_image(region, src->format);
        cv::Mat g = gray_of(&view);
        cv::Scalar mu, sigma;
        cv::meanStdDev(g, mu, sigma);
        *mean = mu[0];
        *stddev = sigma[0];
        return 0;
    });
}

int cvb_image_rotate_degrees(const cvb_image *src, cvb_image *dst, double degrees, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat s = as_mat(src), d = as_mat(dst);
        if (src->format != dst->format || s.size() != d.size()) {
            set_error(err, -1, "rotation needs a destination of the same size and format");
            return -1;
        }
        cv::Point2f centre(s.cols / 2.0f, s.rows / 2.0f);
        cv::Mat rotation = cv::getRotationMatrix2D(centre, degrees, 1.0);
        cv::warpAffine(s, d, rotation, d.size(), cv::INTER_LINEAR, cv::BORDER_REPLICATE);
        return 0;
    });
}

int cvb_image_warp_rotated(const cvb_image *src, double centre_x, double centre_y, double degrees, double scale,
                           cvb_image *dst, cvb_error *err) {
    return guarded(err, [&] {
        if (src->format != dst->format) {
            set_error(err, -1, "warp needs matching formats");
            return -1;
        }
        cv::Mat s = as_mat(src), d = as_mat(dst);
        cv::Mat m = cv::getRotationMatrix2D(cv::Point2f((float)centre_x, (float)centre_y), degrees, scale);
        m.at<double>(0, 2) += d.cols / 2.0 - centre_x;
        m.at<double>(1, 2) += d.rows / 2.0 - centre_y;
        cv::warpAffine(s, d, m, d.size(), cv::INTER_LINEAR, cv::BORDER_REPLICATE);
        return 0;
    });
}

} // extern "C"
