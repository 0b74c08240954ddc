// Pixels for the emulated camera: the JPEG files of a folder (sorted by name), or a colour-bar
// pattern when there are none, scaled to a mode's size and encoded in its format (YUYV: BT.601,
// limited range; MJPEG: libjpeg-turbo). Knows nothing of the device; frames.c keeps what it renders
// and shows each image for FRAMES_PER_IMAGE frames.
#include "emulator_internal.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h> // after stdio.h: it uses FILE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_NAMES 64

static void colour_bars(uint8_t *rgb, uint32_t w, uint32_t h) {
    static const uint8_t bars[8][3] = {{192, 192, 192}, {192, 192, 0}, {0, 192, 192}, {0, 192, 0},
                                       {192, 0, 192},   {192, 0, 0},   {0, 0, 192},   {16, 16, 16}};
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) memcpy(rgb + (y * w + x) * 3, bars[x * 8 / w], 3);
}

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf escape;
} jpeg_failure;

// libjpeg's default handler exits the process; a corrupt fixture must only be skipped.
static void jpeg_escape(j_common_ptr cinfo) { longjmp(((jpeg_failure *)cinfo->err)->escape, 1); }

// Decodes a JPEG file and scales it (nearest neighbour) to w×h RGB. Returns 0 on success.
static int load_jpeg(const char *path, uint8_t *rgb, uint32_t w, uint32_t h) {
    FILE *file = fopen(path, "rb");
    if (!file) return -1;
    struct jpeg_decompress_struct cinfo;
    jpeg_failure jerr;
    cinfo.err = jpeg_std_error(&jerr.base);
    jerr.base.error_exit = jpeg_escape;
    uint8_t *volatile src = NULL;
    if (setjmp(jerr.escape)) {
        jpeg_destroy_decompress(&cinfo);
        fclose(file);
        free(src);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, file);
    if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
        jpeg_destroy_decompress(&cinfo);
        fclose(file);
        return -1;
    }
    cinfo.out_color_space = JCS_RGB;
    jpeg_start_decompress(&cinfo);
    uint32_t sw = cinfo.output_width, sh = cinfo.output_height;
    src = malloc((size_t)sw * sh * 3);
    while (cinfo.output_scanline < sh) {
        uint8_t *row = src + (size_t)cinfo.output_scanline * sw * 3;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    fclose(file);
    for (uint32_t y = 0; y < h; y++) {
        uint32_t sy = (uint32_t)(((uint64_t)y * 2 + 1) * sh / (2 * h));
        for (uint32_t x = 0; x < w; x++) {
            uint32_t sx = (uint32_t)(((uint64_t)x * 2 + 1) * sw / (2 * w));
            memcpy(rgb + ((size_t)y * w + x) * 3, src + ((size_t)sy * sw + sx) * 3, 3);
        }
    }
    free(src);
    return 0;
}

static uint8_t clamp8(double v) { return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)(v + 0.5); }

uint8_t *emu_encode_yuyv(const uint8_t *rgb, uint32_t w, uint32_t h, uint32_t *length) {
    uint8_t *out = malloc((size_t)w * h * 2);
    for (size_t i = 0; i < (size_t)w * h; i += 2) {
        const uint8_t *p = rgb + i * 3, *q = p + 3;
        double y0 = 16 + (65.481 * p[0] + 128.553 * p[1] + 24.966 * p[2]) / 255;
        double y1 = 16 + (65.481 * q[0] + 128.553 * q[1] + 24.966 * q[2]) / 255;
        double r = (p[0] + q[0]) / 2.0, g = (p[1] + q[1]) / 2.0, b = (p[2] + q[2]) / 2.0;
        double u = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255;
        double v = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255;
        out[i * 2] = clamp8(y0);
        out[i * 2 + 1] = clamp8(u);
        out[i * 2 + 2] = clamp8(y1);
        out[i * 2 + 3] = clamp8(v);
    }
    *length = w * h * 2;
    return out;
}

uint8_t *emu_encode_jpeg(const uint8_t *rgb, uint32_t w, uint32_t h, uint32_t *length) {
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    unsigned char *out = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&cinfo, &out, &size);
    cinfo.image_width = w;
    cinfo.image_height = h;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 85, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < h) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)cinfo.next_scanline * w * 3);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *length = (uint32_t)size;
    return out;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int emu_render_frames(const emu_mode *mode, const char *folder, uint8_t **frames, uint32_t *lengths, int max) {
    uint32_t w = mode->width, h = mode->height;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    char *names[MAX_NAMES];
    int name_count = 0;
    DIR *dir = folder ? opendir(folder) : NULL;
    if (dir) {
        struct dirent *entry;
        while ((entry = readdir(dir)) && name_count < MAX_NAMES) {
            size_t n = strlen(entry->d_name);
            if (n > 4 && (strcasecmp(entry->d_name + n - 4, ".jpg") == 0)) names[name_count++] = strdup(entry->d_name);
        }
        closedir(dir);
        qsort(names, name_count, sizeof names[0], compare_names);
    }
    int count = 0;
    for (int i = 0; i < name_count; i++) {
        if (count < max) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", folder, names[i]);
            if (load_jpeg(path, rgb, w, h) == 0) {
                frames[count] = mode->format->encode(rgb, w, h, &lengths[count]);
                count++;
            }
        }
        free(names[i]);
    }
    if (count == 0) {
        colour_bars(rgb, w, h);
        frames[0] = mode->format->encode(rgb, w, h, &lengths[0]);
        count = 1;
    }
    free(rgb);
    return count;
}
