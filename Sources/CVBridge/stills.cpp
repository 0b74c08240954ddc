// cvb_stills.h: the C decoders of stills_jpeg.c and stills_png.c, with OpenCV matrices (or the
// caller's memory) as their destination.
#include "bridge_internal.hpp"
#include "include/cvb_stills.h"
#include "stills_internal.h"

#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

using namespace cvb;

namespace {

/// What a decode writes into: a new matrix (`dst` NULL) or the caller's image.
struct Target {
    const cvb_image *dst = nullptr;
    uint64_t max_pixels = 0;
    cv::Mat mat;
    std::vector<uint8_t> exif;
    bool has_exif = false;
    bool size_differs = false;
};

uint8_t *pixels(void *context, int width, int height, int channels, size_t *stride, char *message,
                size_t capacity) noexcept {
    auto *t = static_cast<Target *>(context);
    if (t->dst) {
        if (t->dst->width != width || t->dst->height != height) {
            t->size_differs = true;
            std::snprintf(message, capacity,
                          "the encoded frame's size differs from the buffer's (%dx%d, not %dx%d)", width, height,
                          t->dst->width, t->dst->height);
            return nullptr;
        }
        *stride = (size_t)t->dst->stride;
        return t->dst->data;
    }
    if ((uint64_t)width * (uint64_t)height > t->max_pixels) {
        std::snprintf(message, capacity, "the image declares %dx%d pixels, over the limit of %llu", width, height,
                      (unsigned long long)t->max_pixels);
        return nullptr;
    }
    try {
        t->mat.create(height, width, channels == 3 ? CV_8UC3 : CV_8UC1);
    } catch (...) {
        std::snprintf(message, capacity, "out of memory for %dx%d pixels", width, height);
        return nullptr;
    }
    *stride = t->mat.step[0];
    return t->mat.data;
}

void exif(void *context, const uint8_t *bytes, size_t length) noexcept {
    auto *t = static_cast<Target *>(context);
    try {
        t->exif.assign(bytes, bytes + length);
        t->has_exif = true;
    } catch (...) {
        // Without memory for it the orientation is lost, as OpenCV's parser would lose it.
    }
}

int decode(FILE *file, const uint8_t *bytes, size_t length, cvb_still_codec codec, int32_t format, Target &t,
           cvb_error *err) {
    if (format != CVB_FORMAT_BGR && format != CVB_FORMAT_GRAY) {
        set_error(err, -1, "JPEG and PNG decode to BGR or GRAY only");
        return -1;
    }
    cvb_still_sink sink{pixels, exif, &t};
    char message[sizeof(err->message)] = "";
    int color = format == CVB_FORMAT_BGR;
    int status = codec == CVB_STILL_JPEG ? cvb_still_jpeg(file, bytes, length, color, &sink, message, sizeof message)
                 : codec == CVB_STILL_PNG
                     ? cvb_still_png(file, bytes, length, color, &sink, message, sizeof message)
                     : (std::snprintf(message, sizeof message, "unknown codec %d", (int)codec), -1);
    if (status != 0) set_error(err, t.size_differs ? CVB_ERROR_SIZE_DIFFERS : -1, message);
    return status;
}

cvb_mat *exif_matrix(const Target &t) {
    if (!t.has_exif) return nullptr;
    auto *m = new cvb_mat();
    m->mat = cv::Mat(t.exif, true).reshape(1, 1);
    return m;
}

} // namespace

extern "C" {

cvb_mat *cvb_still_read(const char *path, cvb_still_codec codec, int32_t format, uint64_t max_pixels, cvb_mat **exif,
                        cvb_error *err) {
    return guarded_ptr<cvb_mat>(err, [&]() -> cvb_mat * {
        if (exif) *exif = nullptr;
        FILE *file = std::fopen(path, "rb");
        if (!file) {
            set_error(err, errno, std::strerror(errno));
            return nullptr;
        }
        Target t;
        t.max_pixels = max_pixels;
        int status = decode(file, nullptr, 0, codec, format, t, err);
        std::fclose(file);
        if (status != 0) return nullptr;
        if (exif) *exif = exif_matrix(t);
        auto *m = new cvb_mat();
        m->mat = t.mat;
        m->format = format;
        return m;
    });
}

int cvb_still_decode_into(const uint8_t *bytes, size_t length, cvb_still_codec codec, cvb_image *dst, cvb_mat **exif,
                          cvb_error *err) {
    return guarded(err, [&] {
        if (exif) *exif = nullptr;
        Target t;
        t.dst = dst;
        if (decode(nullptr, bytes, length, codec, dst->format, t, err) != 0) return -1;
        if (exif) *exif = exif_matrix(t);
        return 0;
    });
}

} // extern "C"
