// cvb_zxing.h: zxing-cpp's ReadBarcodes. No policy.
#define ZX_USE_UTF8 1  // Result::text() as UTF-8 (zxing-cpp 1.4's transition switch)
#include "bridge_internal.hpp"
#include "include/cvb_zxing.h"

#include <ReadBarcode.h>

#include <algorithm>
#include <cstring>
#include <vector>

using namespace cvb;

struct cvb_zxing_reader {
    ZXing::Results results;
};

extern "C" {

cvb_zxing_hints cvb_zxing_default_hints(void) {
    const ZXing::DecodeHints d;
    cvb_zxing_hints h;
    h.formats = 0;  // DecodeHints' default: no format named, every format read
    h.try_harder = d.tryHarder();
    h.try_rotate = d.tryRotate();
    h.try_downscale = d.tryDownscale();
    h.binarizer = static_cast<int32_t>(d.binarizer());
    h.is_pure = d.isPure();
    h.max_number_of_symbols = d.maxNumberOfSymbols();
    h.return_codabar_start_end = d.returnCodabarStartEnd();
    return h;
}

cvb_zxing_reader *cvb_zxing_reader_create(cvb_error *err) {
    return guarded_ptr<cvb_zxing_reader>(err, [&] { return new cvb_zxing_reader(); });
}

void cvb_zxing_reader_destroy(cvb_zxing_reader *reader) { delete reader; }

int32_t cvb_zxing_read(cvb_zxing_reader *reader, const cvb_image *gray, const cvb_zxing_hints *hints,
                       cvb_error *err) {
    return guarded(err, [&] {
        reader->results.clear();
        if (!gray || !gray->data || gray->format != CVB_FORMAT_GRAY || gray->width <= 0 || gray->height <= 0) {
            set_error(err, -1, "zxing-cpp reads GRAY images");
            return -1;
        }
        if (hints->binarizer < 0 || hints->binarizer > CVB_ZXING_BINARIZER_BOOL_CAST) {
            set_error(err, -1, "unknown zxing-cpp binarizer");
            return -1;
        }
        ZXing::DecodeHints h;
        ZXing::BarcodeFormats formats;
        for (int bit = 0; bit < 32; bit++)
            if (hints->formats & (1u << bit)) formats |= static_cast<ZXing::BarcodeFormat>(1u << bit);
        h.setFormats(formats);
        h.setTryHarder(hints->try_harder != 0);
        h.setTryRotate(hints->try_rotate != 0);
        h.setTryDownscale(hints->try_downscale != 0);
        h.setBinarizer(static_cast<ZXing::Binarizer>(hints->binarizer));
        h.setIsPure(hints->is_pure != 0);
        h.setReturnCodabarStartEnd(hints->return_codabar_start_end != 0);
        if (hints->max_number_of_symbols > 0)
            h.setMaxNumberOfSymbols(static_cast<uint8_t>(std::min(hints->max_number_of_symbols, 255)));
        ZXing::ImageView view(gray->data, gray->width, gray->height, ZXing::ImageFormat::Lum, gray->stride);
        for (auto &r : ZXing::ReadBarcodes(view, h))
            if (r.isValid()) reader->results.push_back(std::move(r));
        return static_cast<int32_t>(reader->results.size());
    });
}

int32_t cvb_zxing_result_get(const cvb_zxing_reader *reader, int32_t index, cvb_zxing_result *info,
                             uint8_t *bytes, int32_t bytes_capacity, uint8_t *bytes_eci,
                             int32_t bytes_eci_capacity, char *text, int32_t text_capacity) {
    cvb_error ignored;
    return guarded(&ignored, [&] {
        if (index < 0 || static_cast<size_t>(index) >= reader->results.size()) return -1;
        const ZXing::Result &r = reader->results[index];
        const ZXing::ByteArray &raw = r.bytes();
        ZXing::ByteArray eci = r.bytesECI();
        std::string utf8 = r.text();
        std::string si = r.symbologyIdentifier();
        info->format = static_cast<uint32_t>(r.format());
        info->has_eci = r.hasECI();
        info->content_type = static_cast<int32_t>(r.contentType());
        info->orientation = r.orientation();
        info->is_mirrored = r.isMirrored();
        info->bytes_length = static_cast<int32_t>(raw.size());
        info->bytes_eci_length = static_cast<int32_t>(eci.size());
        info->text_length = static_cast<int32_t>(utf8.size());
        // Deprecated in 1.4 (no replacement there) but still filled from the decoder's result.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        info->num_bits = r.numBits();
#pragma GCC diagnostic pop
        const ZXing::Position &p = r.position();
        for (int i = 0; i < 4; i++) {
            info->xs[i] = p[i].x;
            info->ys[i] = p[i].y;
        }
        std::memset(info->symbology, 0, sizeof(info->symbology));
        std::memcpy(info->symbology, si.data(), std::min(si.size(), sizeof(info->symbology) - 1));
        if (bytes && bytes_capacity > 0)
            std::memcpy(bytes, raw.data(), std::min<size_t>(raw.size(), bytes_capacity));
        if (bytes_eci && bytes_eci_capacity > 0)
            std::memcpy(bytes_eci, eci.data(), std::min<size_t>(eci.size(), bytes_eci_capacity));
        if (text && text_capacity > 0) std::memcpy(text, utf8.data(), std::min<size_t>(utf8.size(), text_capacity));
        return 0;
    });
}

} // extern "C"
