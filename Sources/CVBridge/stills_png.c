// PNG through libpng with the calls OpenCV 4.6's PngDecoder makes (grfmt_png.cpp), in its
// order, so the pixels are cv::imread's and cv::imdecode's: the same transformations (16 bits
// stripped, alpha stripped, palettes and low-depth gray expanded, BGR order, or gray with
// png_set_rgb_to_gray(1, 0.299, 0.587)), and the eXIf chunk for the EXIF block. Warnings print
// as libpng prints them for OpenCV; an error's text goes into `message`. See stills_internal.h.
#include "stills_internal.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>

// OpenCV's limits on a decoded image (CV_IO_MAX_IMAGE_WIDTH/HEIGHT/PIXELS, their defaults).
#define MAX_SIDE (1u << 20)
#define MAX_PIXELS (1ull << 30)

typedef struct {
    char *message;
    size_t capacity;
} error_text;

static void on_error(png_structp png, png_const_charp text) {
    error_text *e = (error_text *)png_get_error_ptr(png);
    snprintf(e->message, e->capacity, "libpng: %s", text);
    png_longjmp(png, 1);
}

typedef struct {
    const uint8_t *bytes;
    size_t length;
    size_t position;
} memory_reader;

static void read_memory(png_structp png, png_bytep dst, png_size_t size) {
    memory_reader *r = (memory_reader *)png_get_io_ptr(png);
    if (size > r->length - r->position) png_error(png, "PNG input buffer is incomplete");
    memcpy(dst, r->bytes + r->position, size);
    r->position += size;
}

int cvb_still_png(FILE *file, const uint8_t *bytes, size_t length, int color, const cvb_still_sink *sink,
                  char *message, size_t capacity) {
    error_text errors = {message, capacity};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &errors, on_error, NULL);
    if (!png) {
        snprintf(message, capacity, "libpng: out of memory");
        return -1;
    }
    png_infop info = png_create_info_struct(png), end = png_create_info_struct(png);
    png_bytep *volatile rows = NULL;  // assigned after setjmp, freed on both paths
    memory_reader reader = {bytes, length, 0};
    if (!info || !end) {
        png_destroy_read_struct(&png, &info, &end);
        snprintf(message, capacity, "libpng: out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        free(rows);
        png_destroy_read_struct(&png, &info, &end);
        return -1;
    }
    if (file) png_init_io(png, file);
    else png_set_read_fn(png, &reader, read_memory);

    png_uint_32 width = 0, height = 0;
    int depth = 0, type = 0;
    png_read_info(png, info);
    png_get_IHDR(png, info, &width, &height, &depth, &type, NULL, NULL, NULL);
    if (width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE ||
        (unsigned long long)width * height > MAX_PIXELS || !(depth <= 8 || depth == 16)) {
        snprintf(message, capacity, "the PNG declares %ux%u pixels of %d bits, outside OpenCV's limits",
                 (unsigned)width, (unsigned)height, depth);
        png_destroy_read_struct(&png, &info, &end);
        return -1;
    }
    size_t stride = 0;
    uint8_t *pixels = sink->pixels(sink->context, (int)width, (int)height, color ? 3 : 1, &stride, message, capacity);
    if (!pixels) {
        png_destroy_read_struct(&png, &info, &end);
        return -1;
    }

    if (depth == 16) png_set_strip_16(png);
    else png_set_swap(png);  // OpenCV's call for little-endian hosts; no effect on 8-bit samples
    png_set_strip_alpha(png);
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if ((type & PNG_COLOR_MASK_COLOR) == 0 && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if ((type & PNG_COLOR_MASK_COLOR) && color) png_set_bgr(png);
    else if (color) png_set_gray_to_rgb(png);
    else png_set_rgb_to_gray(png, 1, 0.299, 0.587);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    // The transformations above always give 1 or 3 bytes a pixel; refuse rather than overrun.
    if (png_get_rowbytes(png, info) > (size_t)width * (color ? 3 : 1))
        png_error(png, "the transformed rows are wider than the image");

    rows = (png_bytep *)malloc(sizeof(png_bytep) * height);
    if (!rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < height; y++) rows[y] = pixels + (size_t)y * stride;
    png_read_image(png, rows);
    png_read_end(png, end);

    png_uint_32 exif_length = 0;
    png_bytep exif = NULL;
    // The eXIf chunk may come before the image data (info) or after it (end).
    if (png_get_valid(png, info, PNG_INFO_eXIf)) png_get_eXIf_1(png, info, &exif_length, &exif);
    else if (png_get_valid(png, end, PNG_INFO_eXIf)) png_get_eXIf_1(png, end, &exif_length, &exif);
    if (exif && exif_length > 0) sink->exif(sink->context, exif, exif_length);

    free(rows);
    png_destroy_read_struct(&png, &info, &end);
    return 0;
}
