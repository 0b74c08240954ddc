// ZBar's image scanner (cvb_zbar.h) and the filters the code detector uses (cvb_imgproc.h);
// OpenCV's QR localiser is in the objdetect module. No policy.
#include "bridge_internal.hpp"

#include <opencv2/imgproc.hpp>
#include <zbar.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace cvb;
using namespace zbar;

struct cvb_code_scanner {
    zbar_image_scanner_t *scanner = nullptr;
    zbar_image_t *image = nullptr;  // the last scanned image; owns the symbol set
    std::vector<uint8_t> packed;    // Y800 pixels handed to ZBar (kept alive with `image`)
    std::vector<const zbar_symbol_t *> symbols;

    void drop_image() {
        if (image) zbar_image_destroy(image);
        image = nullptr;
        symbols.clear();
    }
    ~cvb_code_scanner() {
        drop_image();
        if (scanner) zbar_image_scanner_destroy(scanner);
    }
};

static bool is_gray(const cvb_image *img) { return img && img->data && img->format == CVB_FORMAT_GRAY; }

extern "C" {

cvb_code_scanner *cvb_code_scanner_create(cvb_error *err) {
    return guarded_ptr<cvb_code_scanner>(err, [&]() -> cvb_code_scanner * {
        auto *s = new cvb_code_scanner();
        s->scanner = zbar_image_scanner_create();
        if (!s->scanner) {
            delete s;
            set_error(err, -1, "ZBar could not create an image scanner (out of memory?)");
            return nullptr;
        }
        return s;
    });
}

void cvb_code_scanner_destroy(cvb_code_scanner *scanner) { delete scanner; }

int32_t cvb_code_scanner_set_config(cvb_code_scanner *scanner, int32_t symbology, int32_t config, int32_t value) {
    return zbar_image_scanner_set_config(scanner->scanner, (zbar_symbol_type_t)symbology, (zbar_config_t)config,
                                         value);
}

int32_t cvb_code_scanner_get_config(cvb_code_scanner *scanner, int32_t symbology, int32_t config, int32_t *value) {
    int v = 0;
    int status = zbar_image_scanner_get_config(scanner->scanner, (zbar_symbol_type_t)symbology,
                                               (zbar_config_t)config, &v);
    if (value) *value = v;
    return status;
}

int32_t cvb_code_scanner_scan(cvb_code_scanner *scanner, const cvb_image *gray, cvb_error *err) {
    return guarded(err, [&]() -> int {
        scanner->drop_image();
        if (!is_gray(gray) || gray->width <= 0 || gray->height <= 0) {
            set_error(err, -1, "ZBar scans 8-bit gray images only");
            return -1;
        }
        const size_t w = (size_t)gray->width, h = (size_t)gray->height;
        const uint8_t *pixels = gray->data;
        if ((size_t)gray->stride != w) {
            scanner->packed.resize(w * h);
            for (size_t y = 0; y < h; y++)
                std::memcpy(scanner->packed.data() + y * w, gray->data + y * (size_t)gray->stride, w);
            pixels = scanner->packed.data();
        }
        zbar_image_t *image = zbar_image_create();
        if (!image) {
            set_error(err, -1, "ZBar could not create an image (out of memory?)");
            return -1;
        }
        zbar_image_set_format(image, zbar_fourcc('Y', '8', '0', '0'));
        zbar_image_set_size(image, (unsigned)w, (unsigned)h);
        zbar_image_set_data(image, pixels, w * h, nullptr);
        scanner->image = image;
        int n = zbar_scan_image(scanner->scanner, image);
        if (n < 0) {
            scanner->drop_image();
            set_error(err, n, "ZBar could not scan the image");
            return -1;
        }
        for (const zbar_symbol_t *s = zbar_image_first_symbol(image); s; s = zbar_symbol_next(s))
            scanner->symbols.push_back(s);
        return (int)scanner->symbols.size();
    });
}

int32_t cvb_code_scanner_symbol(const cvb_code_scanner *scanner, int32_t index, cvb_code_symbol *info,
                                uint8_t *data, int32_t data_capacity, int32_t *xs, int32_t *ys,
                                int32_t point_capacity) {
    if (index < 0 || (size_t)index >= scanner->symbols.size()) return -1;
    const zbar_symbol_t *s = scanner->symbols[(size_t)index];
    cvb_code_symbol out;
    out.type = (int32_t)zbar_symbol_get_type(s);
    out.quality = zbar_symbol_get_quality(s);
    out.orientation = (int32_t)zbar_symbol_get_orientation(s);
    out.modifiers = (int32_t)zbar_symbol_get_modifiers(s);
    out.data_length = (int32_t)zbar_symbol_get_data_length(s);
    out.point_count = (int32_t)zbar_symbol_get_loc_size(s);
    if (info) *info = out;
    if (data && data_capacity > 0)
        std::memcpy(data, zbar_symbol_get_data(s), (size_t)std::min(data_capacity, out.data_length));
    if (xs && ys) {
        int32_t n = std::min(point_capacity, out.point_count);
        for (int32_t i = 0; i < n; i++) {
            xs[i] = zbar_symbol_get_loc_x(s, (unsigned)i);
            ys[i] = zbar_symbol_get_loc_y(s, (unsigned)i);
        }
    }
    return 0;
}

const int32_t cvb_zbar_qrcode = ZBAR_QRCODE, cvb_zbar_ean13 = ZBAR_EAN13, cvb_zbar_ean8 = ZBAR_EAN8,
              cvb_zbar_upca = ZBAR_UPCA, cvb_zbar_upce = ZBAR_UPCE, cvb_zbar_isbn10 = ZBAR_ISBN10,
              cvb_zbar_isbn13 = ZBAR_ISBN13, cvb_zbar_code128 = ZBAR_CODE128, cvb_zbar_code93 = ZBAR_CODE93,
              cvb_zbar_code39 = ZBAR_CODE39, cvb_zbar_codabar = ZBAR_CODABAR, cvb_zbar_i25 = ZBAR_I25,
              cvb_zbar_databar = ZBAR_DATABAR, cvb_zbar_databar_exp = ZBAR_DATABAR_EXP,
              cvb_zbar_pdf417 = ZBAR_PDF417;
const int32_t cvb_zbar_cfg_enable = ZBAR_CFG_ENABLE, cvb_zbar_cfg_binary = ZBAR_CFG_BINARY,
              cvb_zbar_cfg_test_inverted = ZBAR_CFG_TEST_INVERTED, cvb_zbar_cfg_x_density = ZBAR_CFG_X_DENSITY,
              cvb_zbar_cfg_y_density = ZBAR_CFG_Y_DENSITY;

int32_t cvb_perspective_transform(const float from[8], const float to[8], double matrix[9], cvb_error *err) {
    return guarded(err, [&] {
        cv::Point2f a[4], b[4];
        for (int i = 0; i < 4; i++) {
            a[i] = cv::Point2f(from[i * 2], from[i * 2 + 1]);
            b[i] = cv::Point2f(to[i * 2], to[i * 2 + 1]);
        }
        cv::Mat m = cv::getPerspectiveTransform(a, b);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) matrix[r * 3 + c] = m.at<double>(r, c);
        return 0;
    });
}

int32_t cvb_image_warp_perspective(const cvb_image *src, cvb_image *dst, const double matrix[9],
                                   int32_t interpolation, int32_t border, uint8_t border_value,
                                   cvb_error *err) {
    return guarded(err, [&] {
        if (src->format != dst->format || cv_type(src->format) < 0 || src->format == CVB_FORMAT_YUYV ||
            src->format == CVB_FORMAT_NV12) {
            set_error(err, -1, "perspective warps need matching GRAY, BGR or BGRA images");
            return -1;
        }
        cv::Mat m(3, 3, CV_64F, (void *)matrix);
        cv::Mat d = as_mat(dst);
        int mode = border == CVB_BORDER_TRANSPARENT ? cv::BORDER_TRANSPARENT
                   : border == CVB_BORDER_REPLICATE ? cv::BORDER_REPLICATE
                                                    : cv::BORDER_CONSTANT;
        cv::warpPerspective(as_mat(src), d, m, d.size(), interpolation, mode, cv::Scalar::all(border_value));
        return 0;
    });
}

int32_t cvb_image_gaussian_blur(const cvb_image *src, cvb_image *dst, double sigma, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat d = as_mat(dst);
        cv::GaussianBlur(as_mat(src), d, cv::Size(0, 0), sigma);
        return 0;
    });
}

int32_t cvb_image_scale(const cvb_image *src, cvb_image *dst, double alpha, double beta, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat d = as_mat(dst);
        as_mat(src).convertTo(d, -1, alpha, beta);
        return 0;
    });
}

int32_t cvb_image_add_noise(cvb_image *dst, uint64_t seed, double stddev, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat d = as_mat(dst);
        cv::Mat noise(d.size(), CV_MAKETYPE(CV_16S, d.channels()));
        cv::RNG rng(seed);
        rng.fill(noise, cv::RNG::NORMAL, cv::Scalar::all(0), cv::Scalar::all(stddev));
        cv::Mat wide;
        d.convertTo(wide, noise.type());
        wide += noise;
        wide.convertTo(d, d.type());
        return 0;
    });
}

int32_t cvb_image_unsharp(const cvb_image *src, cvb_image *dst, double sigma, double amount, cvb_error *err) {
    return guarded(err, [&] {
        if (!is_gray(src) || !is_gray(dst)) {
            set_error(err, -1, "unsharp masking takes GRAY images");
            return -1;
        }
        cv::Mat s = as_mat(src), d = as_mat(dst), blurred;
        cv::GaussianBlur(s, blurred, cv::Size(0, 0), sigma);
        cv::addWeighted(s, 1.0 + amount, blurred, -amount, 0, d);
        return 0;
    });
}

int32_t cvb_image_threshold(const cvb_image *src, cvb_image *dst, int32_t kind, double value, cvb_error *err) {
    return guarded(err, [&] {
        if (!is_gray(src) || !is_gray(dst)) {
            set_error(err, -1, "thresholds take GRAY images");
            return -1;
        }
        cv::Mat s = as_mat(src), d = as_mat(dst);
        switch (kind) {
        case CVB_THRESHOLD_FIXED: cv::threshold(s, d, value, 255, cv::THRESH_BINARY); break;
        case CVB_THRESHOLD_OTSU: cv::threshold(s, d, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU); break;
        default: set_error(err, -1, "unknown threshold kind"); return -1;
        }
        return 0;
    });
}

int32_t cvb_image_local_mean(const cvb_image *src, cvb_image *dst, int32_t block, cvb_error *err) {
    return guarded(err, [&] {
        if (!is_gray(src) || !is_gray(dst)) {
            set_error(err, -1, "local means take GRAY images");
            return -1;
        }
        cv::Mat s = as_mat(src), d = as_mat(dst);
        cv::boxFilter(s, d, s.type(), cv::Size(block, block), cv::Point(-1, -1), true,
                      cv::BORDER_REPLICATE | cv::BORDER_ISOLATED);
        return 0;
    });
}

int32_t cvb_image_textured_mean(const cvb_image *src, cvb_image *dst, int32_t block, int32_t window, int32_t min_range,
                                cvb_error *err) {
    return guarded(err, [&] {
        if (!is_gray(src) || !is_gray(dst) || block < 2 || block > 256 || window < 3 || window % 2 == 0) {
            set_error(err, -1, "textured means take GRAY images, a block of 2 to 256 pixels and an odd window of 3 or more");
            return -1;
        }
        cv::Mat s = as_mat(src), d = as_mat(dst);
        if (d.size() != s.size()) {
            set_error(err, -1, "image and mean differ in size");
            return -1;
        }
        const int w = s.cols, h = s.rows, nbx = (w + block - 1) / block, nby = (h + block - 1) / block;
        // Each block's darkest and lightest levels: its rows folded column by column first (the
        // compiler vectorises that loop), then its columns. A textured block's level is their
        // midpoint, weighted by its pixels.
        std::vector<uint8_t> colMin(w), colMax(w);
        std::vector<uint8_t> flat(size_t(nbx) * nby), blockMin(size_t(nbx) * nby);
        std::vector<double> sum(size_t(nbx) * nby);
        std::vector<int> count(size_t(nbx) * nby);
        bool anyFlat = false, anyTextured = false;
        for (int by = 0; by < nby; ++by) {
            const int y0 = by * block, y1 = std::min(y0 + block, h);
            std::copy_n(s.ptr<uint8_t>(y0), w, colMin.data());
            std::copy_n(s.ptr<uint8_t>(y0), w, colMax.data());
            for (int y = y0 + 1; y < y1; ++y) {
                const uint8_t *row = s.ptr<uint8_t>(y);
                uint8_t *lo = colMin.data(), *hi = colMax.data();
                for (int x = 0; x < w; ++x) {
                    const uint8_t v = row[x];
                    lo[x] = v < lo[x] ? v : lo[x];
                    hi[x] = v > hi[x] ? v : hi[x];
                }
            }
            for (int bx = 0; bx < nbx; ++bx) {
                const int x0 = bx * block, x1 = std::min(x0 + block, w);
                int lo = 255, hi = 0;
                for (int x = x0; x < x1; ++x) {
                    lo = std::min(lo, int(colMin[x]));
                    hi = std::max(hi, int(colMax[x]));
                }
                const size_t i = size_t(by) * nbx + bx;
                const int pixels = (x1 - x0) * (y1 - y0);
                flat[i] = hi - lo <= min_range;
                blockMin[i] = uint8_t(lo);
                anyFlat = anyFlat || flat[i];
                anyTextured = anyTextured || !flat[i];
                sum[i] = flat[i] ? 0 : 0.5 * (lo + hi) * pixels;
                count[i] = flat[i] ? 0 : pixels;
            }
        }
        const int border = cv::BORDER_REPLICATE | cv::BORDER_ISOLATED;
        if (!anyFlat || !anyTextured) {
            cv::boxFilter(s, d, s.type(), cv::Size(window, window), cv::Point(-1, -1), true, border);
            return 0;
        }
        // Summed-area tables over the block grid: textured levels and textured pixels.
        const int gw = nbx + 1;
        std::vector<int> countArea(size_t(gw) * (nby + 1), 0);
        std::vector<double> sumArea(size_t(gw) * (nby + 1), 0);
        for (int by = 0; by < nby; ++by) {
            for (int bx = 0; bx < nbx; ++bx) {
                const size_t i = size_t(by) * nbx + bx, a = size_t(by + 1) * gw + bx + 1;
                countArea[a] = count[i] + countArea[a - 1] + countArea[a - gw] - countArea[a - gw - 1];
                sumArea[a] = sum[i] + sumArea[a - 1] + sumArea[a - gw] - sumArea[a - gw - 1];
            }
        }
        // A flat block lighter than the texture within a window's reach of it counts as that
        // texture's level. Darker flat blocks, and blocks with no texture in reach, count as they are.
        cv::Mat limited;
        const int reach = (window / 2 + block - 1) / block;
        for (int by = 0; by < nby; ++by) {
            const int gy0 = std::max(0, by - reach), gy1 = std::min(nby, by + reach + 1);
            for (int bx = 0; bx < nbx; ++bx) {
                const size_t i = size_t(by) * nbx + bx;
                if (!flat[i]) continue;
                const int gx0 = std::max(0, bx - reach), gx1 = std::min(nbx, bx + reach + 1);
                auto area = [&](const auto &t) {
                    return t[size_t(gy1) * gw + gx1] - t[size_t(gy0) * gw + gx1] - t[size_t(gy1) * gw + gx0]
                        + t[size_t(gy0) * gw + gx0];
                };
                const int n = area(countArea);
                if (n == 0) continue;
                const uint8_t level = cv::saturate_cast<uint8_t>(area(sumArea) / n);
                if (blockMin[i] <= level) continue;
                if (limited.empty()) limited = s.clone();
                const int x0 = bx * block, x1 = std::min(x0 + block, w);
                for (int y = by * block; y < std::min(by * block + block, h); ++y) {
                    std::fill(limited.ptr<uint8_t>(y) + x0, limited.ptr<uint8_t>(y) + x1, level);
                }
            }
        }
        if (limited.empty()) limited = s;
        cv::boxFilter(limited, d, s.type(), cv::Size(window, window), cv::Point(-1, -1), true, border);
        return 0;
    });
}

int32_t cvb_image_above_mean(const cvb_image *src, const cvb_image *mean, cvb_image *dst, double offset,
                             cvb_error *err) {
    return guarded(err, [&] {
        if (!is_gray(src) || !is_gray(mean) || !is_gray(dst)) {
            set_error(err, -1, "comparisons take GRAY images");
            return -1;
        }
        cv::Mat s = as_mat(src), m = as_mat(mean), d = as_mat(dst);
        if (m.size() != s.size() || d.size() != s.size()) {
            set_error(err, -1, "image, mean and result differ in size");
            return -1;
        }
        // adaptiveThreshold's comparison, at about half its cost: OpenCV 4.6 compares through a
        // lookup table, cv::compare is SIMD (mean - offset saturates at 0 here). `dst` holds
        // mean - offset: no temporary image (element-wise, so in place is safe).
        if (offset > 0) {
            cv::subtract(m, cv::Scalar(offset), d);
            cv::compare(s, d, d, cv::CMP_GT);
        } else {
            cv::compare(s, m, d, cv::CMP_GT);
        }
        return 0;
    });
}

int32_t cvb_image_detail_grid(const cvb_image *src, int32_t cols, int32_t rows, float *cells, cvb_error *err) {
    return guarded(err, [&] {
        if (!is_gray(src) || cols <= 0 || rows <= 0) {
            set_error(err, -1, "the detail grid takes a GRAY image and a positive grid size");
            return -1;
        }
        cv::Mat s = as_mat(src), gx, gy, mag;
        cv::Sobel(s, gx, CV_16S, 1, 0);
        cv::Sobel(s, gy, CV_16S, 0, 1);
        gx = cv::abs(gx);
        gy = cv::abs(gy);
        cv::Mat sum;
        cv::add(gx, gy, sum, cv::noArray(), CV_32F);
        cv::Mat grid(rows, cols, CV_32F, cells);
        cv::resize(sum, grid, grid.size(), 0, 0, cv::INTER_AREA);
        return 0;
    });
}

} // extern "C"
