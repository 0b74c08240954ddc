// zxing-cpp's reader (`ZXing::ReadBarcodes`): the second code decoder. Marshalling only: which
// formats, which hints, which images (inverted, warped) and how results merge with ZBar's are
// decided in CaptureKit.
#ifndef CVB_ZXING_H
#define CVB_ZXING_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A zxing-cpp reader: the hints of the last read and its results, which stay readable until
/// the next read. One thread at a time.
typedef struct cvb_zxing_reader cvb_zxing_reader;

/// `ZXing::Binarizer` values.
enum {
    CVB_ZXING_BINARIZER_LOCAL_AVERAGE = 0,
    CVB_ZXING_BINARIZER_GLOBAL_HISTOGRAM = 1,
    CVB_ZXING_BINARIZER_FIXED_THRESHOLD = 2,
    CVB_ZXING_BINARIZER_BOOL_CAST = 3,
};

/// The `ZXing::DecodeHints` a read uses. `formats` is a mask of `ZXing::BarcodeFormat` bits
/// (QRCode 1<<13, MicroQRCode 1<<16, DataMatrix 1<<7, Aztec 1<<0, PDF417 1<<12, …); 0 = all.
typedef struct {
    uint32_t formats;
    int32_t try_harder;           ///< `setTryHarder`
    int32_t try_rotate;           ///< `setTryRotate`
    int32_t try_downscale;        ///< `setTryDownscale`
    int32_t binarizer;            ///< `setBinarizer`, a CVB_ZXING_BINARIZER_* value
    int32_t is_pure;              ///< `setIsPure`: the image is one unrotated code on a clean background
    int32_t max_number_of_symbols;///< `setMaxNumberOfSymbols` (0: zxing-cpp's default)
    int32_t return_codabar_start_end; ///< `setReturnCodabarStartEnd`: Codabar text with its start/stop characters
} cvb_zxing_hints;

/// zxing-cpp's library defaults (`ZXing::DecodeHints()`), for `cvb_zxing_read`.
cvb_zxing_hints cvb_zxing_default_hints(void);

/// Creates a reader. Returns NULL and fills `err` when it cannot be allocated.
cvb_zxing_reader *cvb_zxing_reader_create(cvb_error *err);
/// Destroys a reader and its last results; NULL is ignored.
void cvb_zxing_reader_destroy(cvb_zxing_reader *reader);

/// Reads an 8-bit GRAY image (`ZXing::ImageView(ImageFormat::Lum)`, `ZXing::ReadBarcodes`) and
/// keeps the valid results. Returns how many, or -1 with `err` filled.
///
/// zxing-cpp 1.4 aborts the process (a failed assertion in `Result::operator==`) when one read
/// finds the same linear code twice (two identical labels, or one seen in two downscaled
/// layers) and on most GS1 DataBar symbols. The caller must read linear formats with
/// `max_number_of_symbols` 1 and leave DataBar and DataBar Expanded out; this shim only
/// marshals.
int32_t cvb_zxing_read(cvb_zxing_reader *reader, const cvb_image *gray, const cvb_zxing_hints *hints,
                       cvb_error *err);

/// What zxing-cpp reports about one result of the last read (`ZXing::Result`).
typedef struct {
    uint32_t format;          ///< `format()`, one `ZXing::BarcodeFormat` bit
    int32_t has_eci;          ///< `hasECI()`: the symbol declares its character set(s)
    int32_t content_type;     ///< `contentType()`: 0 Text, 1 Binary, 2 Mixed, 3 GS1, 4 ISO15434, 5 UnknownECI
    int32_t orientation;      ///< `orientation()`, degrees
    int32_t is_mirrored;      ///< `isMirrored()`
    int32_t bytes_length;     ///< length of `bytes()`: the payload without any character-set conversion
    int32_t bytes_eci_length; ///< length of `bytesECI()`: the payload with ECI designators as `\nnnnnn`
    int32_t text_length;      ///< length of `text()` (UTF-8, zxing-cpp's own character-set choice)
    int32_t num_bits;         ///< `numBits()`: bits of the error-corrected data stream the decoder read (Aztec: after unstuffing)
    int32_t xs[4], ys[4];     ///< `position()`: top-left, top-right, bottom-right, bottom-left (in the code's frame)
    char symbology[8];        ///< `symbologyIdentifier()`, e.g. "]Q1", NUL-terminated
} cvb_zxing_result;

/// Copies result `index` (0-based) of the last read: its facts into `info`, and up to each
/// capacity of `bytes()`, `bytesECI()` and `text()` (any pointer may be NULL when its capacity
/// is 0). Returns 0, or -1 when `index` is out of range.
int32_t cvb_zxing_result_get(const cvb_zxing_reader *reader, int32_t index, cvb_zxing_result *info,
                             uint8_t *bytes, int32_t bytes_capacity, uint8_t *bytes_eci,
                             int32_t bytes_eci_capacity, char *text, int32_t text_capacity);

#ifdef __cplusplus
}
#endif
#endif
