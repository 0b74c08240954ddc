// JPEG through libjpeg-turbo with the calls OpenCV 4.6's JpegDecoder makes (grfmt_jpeg.cpp),
// in its order, so the pixels are cv::imread's and cv::imdecode's: the same source managers
// (stdio for files; for memory, one that suspends at the end of the bytes, so a truncated
// image repeats its last decoded row as OpenCV's does), APP1 markers kept for the EXIF block,
// RGB or gray output converted row by row (CMYK with OpenCV's formulas). See stills_internal.h.
#include "stills_internal.h"

#include <jpeglib.h>
#include <setjmp.h>
#include <string.h>

// OpenCV's limits on a decoded image (CV_IO_MAX_IMAGE_WIDTH/HEIGHT/PIXELS, their defaults).
#define MAX_SIDE (1u << 20)
#define MAX_PIXELS (1ull << 30)

typedef struct {
    struct jpeg_error_mgr pub;  // libjpeg's standard manager: warnings print as with OpenCV
    jmp_buf jump;
    char *message;
    size_t capacity;
} error_manager;

static void on_error(j_common_ptr cinfo) {
    error_manager *e = (error_manager *)cinfo->err;
    char text[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, text);
    snprintf(e->message, e->capacity, "libjpeg: %s", text);
    longjmp(e->jump, 1);
}

static void source_nothing(j_decompress_ptr cinfo) { (void)cinfo; }

// No more bytes: suspend (libjpeg's own memory source would insert an end marker instead).
static boolean source_fill(j_decompress_ptr cinfo) {
    (void)cinfo;
    return FALSE;
}

static void source_skip(j_decompress_ptr cinfo, long count) {
    struct jpeg_source_mgr *src = cinfo->src;
    if (count <= 0) return;
    size_t n = (size_t)count < src->bytes_in_buffer ? (size_t)count : src->bytes_in_buffer;
    src->next_input_byte += n;
    src->bytes_in_buffer -= n;
}

static void rgb_to_bgr(const uint8_t *rgb, uint8_t *bgr, int width) {
    for (int i = 0; i < width; i++, rgb += 3, bgr += 3) {
        bgr[0] = rgb[2];
        bgr[1] = rgb[1];
        bgr[2] = rgb[0];
    }
}

// Adobe's inverted CMYK, as OpenCV's icvCvt_CMYK2BGR_8u_C4C3R and icvCvt_CMYK2Gray_8u_C4C1R.
static void cmyk_to_bgr(const uint8_t *cmyk, uint8_t *bgr, int width) {
    for (int i = 0; i < width; i++, cmyk += 4, bgr += 3) {
        int k = cmyk[3];
        bgr[2] = (uint8_t)(k - ((255 - cmyk[0]) * k >> 8));
        bgr[1] = (uint8_t)(k - ((255 - cmyk[1]) * k >> 8));
        bgr[0] = (uint8_t)(k - ((255 - cmyk[2]) * k >> 8));
    }
}

static void cmyk_to_gray(const uint8_t *cmyk, uint8_t *gray, int width) {
    enum { SCALE = 14, R = (int)(0.299 * (1 << SCALE) + 0.5), G = (int)(0.587 * (1 << SCALE) + 0.5),
           B = (1 << SCALE) - R - G };
    for (int i = 0; i < width; i++, cmyk += 4) {
        int k = cmyk[3];
        int c = k - ((255 - cmyk[0]) * k >> 8), m = k - ((255 - cmyk[1]) * k >> 8), y = k - ((255 - cmyk[2]) * k >> 8);
        gray[i] = (uint8_t)((y * B + m * G + c * R + (1 << (SCALE - 1))) >> SCALE);
    }
}

int cvb_still_jpeg(FILE *file, const uint8_t *bytes, size_t length, int color, const cvb_still_sink *sink,
                   char *message, size_t capacity) {
    struct jpeg_decompress_struct cinfo;
    error_manager err;
    struct jpeg_source_mgr memory;
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.message = message;
    err.capacity = capacity;
    // Every row written: an error from here on (jpeg_finish_decompress on a truncated image)
    // does not fail the decode, as in OpenCV, which sets its result before that call.
    volatile int rows_written = 0;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return rows_written ? 0 : -1;
    }
    jpeg_create_decompress(&cinfo);
    if (file) {
        jpeg_stdio_src(&cinfo, file);
    } else {
        memory.init_source = source_nothing;
        memory.fill_input_buffer = source_fill;
        memory.skip_input_data = source_skip;
        memory.resync_to_restart = jpeg_resync_to_restart;
        memory.term_source = source_nothing;
        memory.next_input_byte = bytes;
        memory.bytes_in_buffer = length;
        cinfo.src = &memory;
    }
    jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
    if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
        // OpenCV goes on and fails in jpeg_calc_output_dimensions; the outcome is the same.
        snprintf(message, capacity, "libjpeg: the data ends inside the JPEG header");
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    cinfo.scale_num = 1;
    cinfo.scale_denom = 1;
    jpeg_calc_output_dimensions(&cinfo);
    unsigned width = cinfo.output_width, height = cinfo.output_height;
    if (width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE ||
        (unsigned long long)width * height > MAX_PIXELS) {
        snprintf(message, capacity, "the JPEG declares %ux%u pixels, outside OpenCV's limits", width, height);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    size_t stride = 0;
    uint8_t *pixels = sink->pixels(sink->context, (int)width, (int)height, color ? 3 : 1, &stride, message, capacity);
    if (!pixels) {
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }

    int four = cinfo.num_components == 4;  // CMYK or YCCK: libjpeg gives CMYK, converted here
    cinfo.out_color_space = four ? JCS_CMYK : color ? JCS_RGB : JCS_GRAYSCALE;
    cinfo.out_color_components = four ? 4 : color ? 3 : 1;

    // The EXIF block OpenCV parses: the first APP1 segment after its 6-byte "Exif\0\0" header
    // (whatever the segment holds).
    for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next) {
        if (m->marker != JPEG_APP0 + 1) continue;
        if (m->data_length > 6) sink->exif(sink->context, m->data + 6, m->data_length - 6);
        break;
    }

    jpeg_start_decompress(&cinfo);
    JSAMPARRAY row = (*cinfo.mem->alloc_sarray)((j_common_ptr)&cinfo, JPOOL_IMAGE, width * 4, 1);
    for (unsigned y = 0; y < height; y++) {
        // A suspended read leaves `row` as it was: the last decoded row repeats, as in OpenCV.
        jpeg_read_scanlines(&cinfo, row, 1);
        uint8_t *out = pixels + (size_t)y * stride;
        if (four) {
            if (color) cmyk_to_bgr(row[0], out, (int)width);
            else cmyk_to_gray(row[0], out, (int)width);
        } else if (color) {
            rgb_to_bgr(row[0], out, (int)width);
        } else {
            memcpy(out, row[0], width);
        }
    }
    rows_written = 1;
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return 0;
}
