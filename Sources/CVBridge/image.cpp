// Matrices (cvb_image.h), conversions and drawing (cvb_imgproc.h) over OpenCV's core and
// imgproc; the codecs are in the imgcodecs module, QR drawing in the objdetect module.
#include "bridge_internal.hpp"

#include <opencv2/imgproc.hpp>

using namespace cvb;

extern "C" {

size_t cvb_image_byte_count(int32_t width, int32_t height, int32_t format) {
    size_t pixels = (size_t)width * (size_t)height;
    switch (format) {
    case CVB_FORMAT_BGR: return pixels * 3;
    case CVB_FORMAT_GRAY: return pixels;
    case CVB_FORMAT_YUYV: return pixels * 2;
    case CVB_FORMAT_NV12: return pixels * 3 / 2;
    case CVB_FORMAT_BGRA: return pixels * 4;
    default: return 0;
    }
}

cvb_mat *cvb_mat_create(int32_t width, int32_t height, int32_t format, cvb_error *err) {
    return guarded_ptr<cvb_mat>(err, [&]() -> cvb_mat * {
        int type = cv_type(format);
        if (type < 0 || width <= 0 || height <= 0) {
            set_error(err, -1, "invalid size or pixel format");
            return nullptr;
        }
        auto *m = new cvb_mat();
        int rows = format == CVB_FORMAT_NV12 ? height * 3 / 2 : height;
        m->mat.create(rows, width, type);
        m->format = format;
        return m;
    });
}

void cvb_mat_release(cvb_mat *mat) { delete mat; }

cvb_image cvb_mat_image(const cvb_mat *mat) { return as_image(mat->mat, mat->format); }

size_t cvb_mat_byte_length(const cvb_mat *mat) { return mat->mat.total() * mat->mat.elemSize(); }

static int conversion_code(int from, int to) {
    if (to == CVB_FORMAT_BGR) {
        switch (from) {
        case CVB_FORMAT_GRAY: return cv::COLOR_GRAY2BGR;
        case CVB_FORMAT_BGRA: return cv::COLOR_BGRA2BGR;
        case CVB_FORMAT_YUYV: return cv::COLOR_YUV2BGR_YUYV;
        case CVB_FORMAT_NV12: return cv::COLOR_YUV2BGR_NV12;
        }
    } else if (to == CVB_FORMAT_GRAY) {
        switch (from) {
        case CVB_FORMAT_BGR: return cv::COLOR_BGR2GRAY;
        case CVB_FORMAT_BGRA: return cv::COLOR_BGRA2GRAY;
        case CVB_FORMAT_YUYV: return cv::COLOR_YUV2GRAY_YUYV;
        case CVB_FORMAT_NV12: return cv::COLOR_YUV2GRAY_NV12;
        }
    } else if (to == CVB_FORMAT_BGRA && from == CVB_FORMAT_BGR) {
        return cv::COLOR_BGR2BGRA;
    }
    return -1;
}

int cvb_image_convert(const cvb_image *src, cvb_image *dst, cvb_error *err) {
    return guarded(err, [&] {
        if (src->width != dst->width || src->height != dst->height) {
            set_error(err, -1, "source and destination sizes differ");
            return -1;
        }
        cv::Mat s = as_mat(src), d = as_mat(dst);
        if (src->format == dst->format) {
            s.copyTo(d);
            return 0;
        }
        int code = conversion_code(src->format, dst->format);
        if (code < 0) {
            set_error(err, -1, "unsupported pixel format conversion");
            return -1;
        }
        cv::cvtColor(s, d, code);
        if (d.data != dst->data) {
            set_error(err, -1, "destination buffer has the wrong layout");
            return -1;
        }
        return 0;
    });
}

int cvb_image_rotate_mirror(const cvb_image *src, cvb_image *dst, int32_t degrees, int32_t mirror,
                            cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat s = as_mat(src), d = as_mat(dst);
        bool quarter = degrees == 90 || degrees == 270;
        if (src->format != dst->format || src->format == CVB_FORMAT_YUYV || src->format == CVB_FORMAT_NV12 ||
            (quarter ? (d.cols != s.rows || d.rows != s.cols) : (d.cols != s.cols || d.rows != s.rows))) {
            set_error(err, -1, "rotation needs matching BGR/BGRA/GRAY buffers of the rotated size");
            return -1;
        }
        switch (degrees) {
        case 0: s.copyTo(d); break;
        case 90: cv::rotate(s, d, cv::ROTATE_90_CLOCKWISE); break;
        case 180: cv::rotate(s, d, cv::ROTATE_180); break;
        case 270: cv::rotate(s, d, cv::ROTATE_90_COUNTERCLOCKWISE); break;
        default: set_error(err, -1, "rotation must be 0, 90, 180 or 270 degrees"); return -1;
        }
        if (mirror) cv::flip(d, d, 1);
        return 0;
    });
}

int cvb_image_resize(const cvb_image *src, cvb_image *dst, int32_t interpolation, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat s = as_mat(src), d = as_mat(dst);
        cv::resize(s, d, d.size(), 0, 0, interpolation);
        if (d.data != dst->data) {
            set_error(err, -1, "destination buffer has the wrong layout");
            return -1;
        }
        return 0;
    });
}

int cvb_image_fill(cvb_image *dst, uint8_t b, uint8_t g, uint8_t r, cvb_error *err) {
    return guarded(err, [&] {
        as_mat(dst).setTo(cv::Scalar(b, g, r, 255));
        return 0;
    });
}

int cvb_image_fill_rect(cvb_image *dst, int32_t x, int32_t y, int32_t w, int32_t h, uint8_t b, uint8_t g,
                        uint8_t r, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat d = as_mat(dst);
        cv::Rect rect = cv::Rect(x, y, w, h) & cv::Rect(0, 0, d.cols, d.rows);
        if (rect.area() > 0) d(rect).setTo(cv::Scalar(b, g, r, 255));
        return 0;
    });
}

int cvb_image_fill_noise(cvb_image *dst, uint64_t seed, double mean, double stddev, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat d = as_mat(dst);
        cv::RNG rng(seed);
        rng.fill(d, cv::RNG::NORMAL, cv::Scalar::all(mean), cv::Scalar::all(stddev));
        return 0;
    });
}

int cvb_image_blit(cvb_image *dst, const cvb_image *src, int32_t x, int32_t y, int32_t w, int32_t h,
                   int32_t interpolation, cvb_error *err) {
    return guarded(err, [&] {
        if (dst->format != src->format) {
            set_error(err, -1, "blit needs matching pixel formats");
            return -1;
        }
        if (w <= 0 || h <= 0) return 0;
        cv::Mat d = as_mat(dst), s = as_mat(src);
        cv::Rect target(x, y, w, h);
        cv::Rect visible = target & cv::Rect(0, 0, d.cols, d.rows);
        if (visible.area() <= 0) return 0;
        cv::Mat scaled;
        if (s.cols == w && s.rows == h) {
            scaled = s;
        } else {
            cv::resize(s, scaled, cv::Size(w, h), 0, 0, interpolation);
        }
        cv::Rect from(visible.x - x, visible.y - y, visible.width, visible.height);
        scaled(from).copyTo(d(visible));
        return 0;
    });
}

} // extern "C"
