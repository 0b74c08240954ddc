// Internal helpers shared by the CVBridge translation units. Not part of the C ABI.
#pragma once

#include "include/CVBridge.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

/// A matrix and the pixel layout it holds: the element type alone cannot tell NV12 (one 8-bit
/// channel, height × 3/2 rows) from GRAY, so the layout travels with the matrix.
struct cvb_mat {
    cv::Mat mat;
    int32_t format = CVB_FORMAT_GRAY;
};

namespace cvb {

inline void set_error(cvb_error *err, int code, const char *message) {
    if (!err) return;
    err->code = code;
    std::snprintf(err->message, sizeof(err->message), "%s", message ? message : "unknown error");
}

inline int cv_type(int32_t format) {
    switch (format) {
    case CVB_FORMAT_BGR: return CV_8UC3;
    case CVB_FORMAT_GRAY: return CV_8UC1;
    case CVB_FORMAT_YUYV: return CV_8UC2;
    case CVB_FORMAT_NV12: return CV_8UC1; // Y plane rows, the UV rows follow
    case CVB_FORMAT_BGRA: return CV_8UC4;
    default: return -1;
    }
}

inline int format_of(const cv::Mat &m) {
    switch (m.type()) {
    case CV_8UC3: return CVB_FORMAT_BGR;
    case CV_8UC1: return CVB_FORMAT_GRAY;
    case CV_8UC4: return CVB_FORMAT_BGRA;
    default: return -1;
    }
}

/// A cv::Mat header over a cvb_image (no copy). NV12 views are height*3/2 rows of GRAY.
inline cv::Mat as_mat(const cvb_image *img) {
    int type = cv_type(img->format);
    int rows = img->format == CVB_FORMAT_NV12 ? img->height * 3 / 2 : img->height;
    return cv::Mat(rows, img->width, type, img->data, (size_t)img->stride);
}

inline cvb_image as_image(const cv::Mat &m, int32_t format) {
    cvb_image img;
    img.data = m.data;
    img.width = m.cols;
    img.height = format == CVB_FORMAT_NV12 ? m.rows * 2 / 3 : m.rows;
    img.stride = (int32_t)m.step[0];
    img.format = format;
    return img;
}

/// `image` as one gray channel: a view of GRAY, a conversion of BGR and BGRA; throws otherwise.
inline cv::Mat gray_of(const cvb_image *image) {
    cv::Mat m = as_mat(image);
    switch (image->format) {
    case CVB_FORMAT_GRAY: return m;
    case CVB_FORMAT_BGR: {
        cv::Mat g;
        cv::cvtColor(m, g, cv::COLOR_BGR2GRAY);
        return g;
    }
    case CVB_FORMAT_BGRA: {
        cv::Mat g;
        cv::cvtColor(m, g, cv::COLOR_BGRA2GRAY);
        return g;
    }
    default: throw std::runtime_error("this call needs a BGR, BGRA or GRAY image");
    }
}

/// Runs `body`, turning any C++ exception into a filled cvb_error and status -1.
template <typename F> int guarded(cvb_error *err, F body) {
    try {
        return body();
    } catch (const cv::Exception &e) {
        set_error(err, e.code, e.what());
    } catch (const std::exception &e) {
        set_error(err, -1, e.what());
    } catch (...) {
        set_error(err, -1, "unknown C++ exception");
    }
    return -1;
}

template <typename T, typename F> T *guarded_ptr(cvb_error *err, F body) {
    T *result = nullptr;
    guarded(err, [&] {
        result = body();
        return 0;
    });
    return result;
}

} // namespace cvb
