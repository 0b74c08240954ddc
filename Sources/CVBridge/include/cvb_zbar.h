// ZBar's image scanner (`zbar_image_scanner_t`) and its constants. Marshalling only: which
// symbologies, which passes and when to retry are decided in Swift (CaptureVision).
#ifndef CVB_ZBAR_H
#define CVB_ZBAR_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif
