// JPEG and PNG decoding straight through libjpeg-turbo and libpng (stills_jpeg.c, stills_png.c),
// for cvb_stills.h. Plain C: both libraries report errors with longjmp, which must not cross
// C++ frames. Internal: not part of the C ABI.
#ifndef CVB_STILLS_INTERNAL_H
#define CVB_STILLS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Where a decoder puts what it reads; the callbacks must not throw or longjmp.
typedef struct {
    /// Called once, after the header: memory for `height` rows of `width` pixels of `channels`
    /// bytes (3 = BGR, 1 = GRAY), `*stride` bytes apart; NULL refuses (the size is wrong or
    /// too large, or memory ran out) with a reason written to `message`.
    uint8_t *(*pixels)(void *context, int width, int height, int channels, size_t *stride, char *message,
                       size_t capacity);
    /// Called at most once: the bytes OpenCV would read the EXIF orientation from.
    void (*exif)(void *context, const uint8_t *bytes, size_t length);
    void *context;
} cvb_still_sink;

/// Decodes a JPEG from `file` (when not NULL) or `bytes`, as BGR (`color`) or GRAY, making the
/// libjpeg calls OpenCV 4.6's JpegDecoder makes, in its order. Returns 0, or -1 with `message`.
int cvb_still_jpeg(FILE *file, const uint8_t *bytes, size_t length, int color, const cvb_still_sink *sink,
                   char *message, size_t capacity);

/// The same for PNG with libpng and OpenCV 4.6's PngDecoder.
int cvb_still_png(FILE *file, const uint8_t *bytes, size_t length, int color, const cvb_still_sink *sink,
                  char *message, size_t capacity);

#ifdef __cplusplus
}
#endif
#endif
