// Machine-readable codes: ZBar's image scanner, OpenCV's QR localiser, and the image
// operations CaptureKit's code detector and its test corpus use. Marshalling only: which
// symbologies, which passes, which thresholds and when to retry are decided in CaptureKit.
#ifndef CVB_CODES_H
#define CVB_CODES_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - ZBar image scanner

/// A ZBar image scanner (`zbar_image_scanner_t`) plus the image it scanned last, whose
/// symbols stay readable until the next scan. One thread at a time.
typedef struct cvb_code_scanner cvb_code_scanner;

/// Creates a scanner (`zbar_image_scanner_create`) with ZBar's default configuration.
/// Returns NULL and fills `err` when ZBar cannot allocate one.
cvb_code_scanner *cvb_code_scanner_create(cvb_error *err);
/// Destroys a scanner and its last results (`zbar_image_scanner_destroy`); NULL is ignored.
void cvb_code_scanner_destroy(cvb_code_scanner *scanner);

/// Sets one configuration value (`zbar_image_scanner_set_config`). `symbology` is a
/// `zbar_symbol_type_t` (0 = all), `config` a `zbar_config_t`. Returns ZBar's status
/// (0 = accepted); ZBar rejects symbologies it was built without.
int32_t cvb_code_scanner_set_config(cvb_code_scanner *scanner, int32_t symbology, int32_t config,
                                    int32_t value);
/// Reads one configuration value (`zbar_image_scanner_get_config`). Returns ZBar's status.
int32_t cvb_code_scanner_get_config(cvb_code_scanner *scanner, int32_t symbology, int32_t config,
                                    int32_t *value);

/// Scans an 8-bit GRAY image (`zbar_image_create`, `zbar_image_set_format('Y800')`,
/// `zbar_image_set_size`, `zbar_image_set_data`, `zbar_scan_image`). Rows with padding are
/// packed into the scanner's own buffer first (ZBar wants stride == width). Returns the
/// number of symbols found, or -1 with `err` filled.
int32_t cvb_code_scanner_scan(cvb_code_scanner *scanner, const cvb_image *gray, cvb_error *err);

/// What ZBar reports about one symbol of the last scan.
typedef struct {
    int32_t type;         ///< `zbar_symbol_get_type` (a zbar_symbol_type_t)
    int32_t quality;      ///< `zbar_symbol_get_quality`
    int32_t orientation;  ///< `zbar_symbol_get_orientation` (-1 unknown, 0 up, 1 right, 2 down, 3 left)
    int32_t modifiers;    ///< `zbar_symbol_get_modifiers` bit mask (GS1, AIM)
    int32_t data_length;  ///< `zbar_symbol_get_data_length`, in bytes
    int32_t point_count;  ///< `zbar_symbol_get_loc_size`
} cvb_code_symbol;

/// Copies symbol `index` (0-based, in ZBar's order) of the last scan: its facts into `info`,
/// up to `data_capacity` bytes of `zbar_symbol_get_data` into `data`, and up to
/// `point_capacity` polygon points (`zbar_symbol_get_loc_x/_y`) into `xs`/`ys` (any pointer
/// may be NULL when its capacity is 0). Returns 0, or -1 when `index` is out of range.
int32_t cvb_code_scanner_symbol(const cvb_code_scanner *scanner, int32_t index, cvb_code_symbol *info,
                                uint8_t *data, int32_t data_capacity, int32_t *xs, int32_t *ys,
                                int32_t point_capacity);

/// ZBar's symbology numbers (`zbar_symbol_type_t`) and configuration keys (`zbar_config_t`),
/// exported from zbar.h so that Swift copies no value by hand.
extern const int32_t cvb_zbar_qrcode, cvb_zbar_ean13, cvb_zbar_ean8, cvb_zbar_upca, cvb_zbar_upce,
    cvb_zbar_isbn10, cvb_zbar_isbn13, cvb_zbar_code128, cvb_zbar_code93, cvb_zbar_code39,
    cvb_zbar_codabar, cvb_zbar_i25, cvb_zbar_databar, cvb_zbar_databar_exp, cvb_zbar_pdf417;
extern const int32_t cvb_zbar_cfg_enable, cvb_zbar_cfg_binary, cvb_zbar_cfg_test_inverted,
    cvb_zbar_cfg_x_density, cvb_zbar_cfg_y_density;

// MARK: - OpenCV QR localisation (Debian's OpenCV is built without QUIRC: no decoding here)

/// Finds QR-like quadrilaterals (`cv::QRCodeDetector::detectMulti`, or `detect` when `multi`
/// is 0) in a GRAY or BGR image. Writes up to `capacity` quads, 8 floats each (x0,y0 … x3,y3
/// in OpenCV's order), into `quads` and returns how many were found (may exceed `capacity`),
/// or -1 with `err` filled.
int32_t cvb_qr_locate(const cvb_image *src, int32_t multi, float *quads, int32_t capacity, cvb_error *err);

// MARK: - Image operations (also used to synthesise the code test corpus)

/// The 3×3 perspective transform taking the four `from` points onto the four `to` points
/// (`cv::getPerspectiveTransform`), row-major into `matrix`.
int32_t cvb_perspective_transform(const float from[8], const float to[8], double matrix[9], cvb_error *err);

/// Border handling of `cvb_image_warp_perspective`.
enum {
    CVB_BORDER_CONSTANT = 0,    ///< fill outside pixels with `border_value` (cv::BORDER_CONSTANT)
    CVB_BORDER_TRANSPARENT = 1, ///< leave `dst` untouched where `src` does not land (cv::BORDER_TRANSPARENT)
    CVB_BORDER_REPLICATE = 2,   ///< repeat the edge pixels (cv::BORDER_REPLICATE)
};

/// Warps `src` into `dst` with a forward 3×3 `matrix` (`cv::warpPerspective`). `dst` is
/// preallocated (its size is the output size) with `src`'s format (GRAY, BGR or BGRA).
int32_t cvb_image_warp_perspective(const cvb_image *src, cvb_image *dst, const double matrix[9],
                                   int32_t interpolation, int32_t border, uint8_t border_value,
                                   cvb_error *err);


/// Gaussian blur (`cv::GaussianBlur`, kernel size derived from `sigma`). In place when
/// `src` and `dst` are the same view.
int32_t cvb_image_gaussian_blur(const cvb_image *src, cvb_image *dst, double sigma, cvb_error *err);

/// `dst = saturate(src * alpha + beta)` per channel (`cv::Mat::convertTo`): contrast, brightness,
/// and inversion (alpha -1, beta 255). In place allowed.
int32_t cvb_image_scale(const cvb_image *src, cvb_image *dst, double alpha, double beta, cvb_error *err);

/// Adds seeded Gaussian noise with zero mean and `stddev` (`cv::RNG::fill` + `cv::add`, saturating).
int32_t cvb_image_add_noise(cvb_image *dst, uint64_t seed, double stddev, cvb_error *err);

/// Unsharp mask: `dst = src * (1 + amount) - blur(src, sigma) * amount` (`cv::GaussianBlur`,
/// `cv::addWeighted`). GRAY only.
int32_t cvb_image_unsharp(const cvb_image *src, cvb_image *dst, double sigma, double amount, cvb_error *err);

/// Threshold kinds of `cvb_image_threshold`.
enum {
    CVB_THRESHOLD_FIXED = 0,    ///< `cv::threshold` at `value`
    CVB_THRESHOLD_OTSU = 1,     ///< `cv::threshold` with THRESH_OTSU (value ignored)
};
/// Binarises a GRAY image to 0/255 (`cv::threshold`, THRESH_BINARY). In place allowed.
int32_t cvb_image_threshold(const cvb_image *src, cvb_image *dst, int32_t kind, double value, cvb_error *err);

/// The mean of the `block`×`block` window around each pixel of a GRAY image (`cv::boxFilter`,
/// normalised, BORDER_REPLICATE). `block` is odd and ≥ 3.
int32_t cvb_image_local_mean(const cvb_image *src, cvb_image *dst, int32_t block, cvb_error *err);

/// 255 where `src > saturate(mean - offset)`, else 0 (`cv::subtract`, `cv::compare` CMP_GT):
/// `cv::adaptiveThreshold`'s MEAN_C comparison against a mean from `cvb_image_local_mean`, so
/// one mean serves several offsets. GRAY images of one size; `offset` ≥ 0.
int32_t cvb_image_above_mean(const cvb_image *src, const cvb_image *mean, cvb_image *dst, double offset,
                             cvb_error *err);

/// Mean absolute Laplacian-like gradient per cell of a `cols`×`rows` grid over a GRAY image
/// (`cv::Sobel` x and y, `cv::abs`, `cv::resize` INTER_AREA to the grid): a coarse map of
/// where an image has fine detail. `cells` holds `cols * rows` floats, row-major.
int32_t cvb_image_detail_grid(const cvb_image *src, int32_t cols, int32_t rows, float *cells, cvb_error *err);

#ifdef __cplusplus
}
#endif
#endif
