// An emulated V4L2 camera, loaded with LD_PRELOAD, so the real V4L2 backend (libv4l2 and the
// kernel ioctl interface) runs unchanged without hardware.
//
// It presents /dev/video-emulated0 (a UVC-like webcam: YUYV and MJPEG at 640x480 and 1280x720,
// discrete frame intervals, camera controls with auto modes) and /dev/video-emulated1 (a
// metadata-only node, as UVC cameras expose, which discovery must skip). Calls on any other
// path or descriptor pass straight through to libc.
//
// What it interposes: open/open64/openat/openat64/__open_2/__open64_2, close, ioctl, poll,
// access, select, the stat family (the nodes are character devices 81:200 and 81:201, as tools such as
// v4l2-ctl check), the sysfs uevent file of those numbers, and syscall() (libv4l2 issues raw
// SYS_openat/SYS_ioctl/SYS_close/SYS_mmap syscalls).
// An emulated descriptor is a real memfd, so fstat, mmap and munmap work on it unmodified:
// buffers live in the memfd at the offsets QUERYBUF reports, and the emulator writes frames
// into its own mapping of the same memory.
//
// ioctls: QUERYCAP, ENUM_FMT/FRAMESIZES/FRAMEINTERVALS, G/S/TRY_FMT, G/S_PARM, REQBUFS,
// QUERYBUF, QBUF, DQBUF, STREAMON/OFF, QUERYCTRL, QUERY_EXT_CTRL, QUERYMENU, G/S_CTRL and
// G/S/TRY_EXT_CTRLS; anything else fails with ENOTTY, as drivers do. `v4l2-ctl --all
// --list-formats-ext` and `v4l2-ctl --stream-mmap` work against it.
//
// Frames are made at start of streaming from the JPEG files in $V4L2_EMULATOR_IMAGES (sorted
// by name; each shown for 15 frames), or a colour-bar pattern when unset: scaled to the format's
// size, converted to YUYV (BT.601, limited range) or encoded as JPEG with libjpeg-turbo.
// Timing follows the monotonic clock: frame k of a stream is due at start + (k+1) * interval;
// when no buffer is queued at a frame's time the frame is lost and the sequence number jumps,
// as with a real driver.
//
// Faults are read from a control file at every open: $V4L2_EMULATOR_CONTROL, or
// /tmp/v4l2-emulator-<pid>.control. Lines:
//   busy             open fails with EBUSY
//   eacces           open and access() fail with EACCES
//   unplug-after N   after N frames the device disappears: DQBUF/QBUF/ioctls fail with ENODEV,
//                    poll reports POLLERR|POLLHUP, opens fail with ENOENT until the line goes
//   slow MS          every frame arrives MS milliseconds apart, whatever the interval
//   extra-controls   the camera also has do_white_balance, auto_focus_start, an LED (flash and
//                    torch: flash_led_mode) and a flash strobe button (flash_strobe)
//   control-log      every control write that succeeds is appended to "<control file>.log" as
//                    "<CLOCK_MONOTONIC µs> <id, hex> <value>" (buttons log 1), so tests can see what
//                    a capture did to the camera and when, on the clock of the frames' timestamps
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <jpeglib.h> // after stdio.h: it uses FILE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "v4l2_emulator.h"

#define NODE_CAPTURE "/dev/video-emulated0"
#define NODE_META "/dev/video-emulated1"
#define MAX_FDS 64
#define MAX_BUFFERS 32
#define MAX_IMAGES 4
#define FRAMES_PER_IMAGE 15

int v4l2_emulator_loaded(void) { return 1; }

// MARK: real functions

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real___open_2)(const char *, int);
static int (*real___open64_2)(const char *, int);
static int (*real_close)(int);
static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_access)(const char *, int);
static long (*real_syscall)(long, ...);
static int (*real_stat)(const char *, struct stat *);
static int (*real_lstat)(const char *, struct stat *);
static int (*real_fstat)(int, struct stat *);
static int (*real_fstatat)(int, const char *, struct stat *, int);
static int (*real_stat64)(const char *, struct stat64 *);
static int (*real_fstat64)(int, struct stat64 *);

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static void resolve(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_openat64 = dlsym(RTLD_NEXT, "openat64");
    real___open_2 = dlsym(RTLD_NEXT, "__open_2");
    real___open64_2 = dlsym(RTLD_NEXT, "__open64_2");
    real_close = dlsym(RTLD_NEXT, "close");
    real_ioctl = dlsym(RTLD_NEXT, "ioctl");
    real_poll = dlsym(RTLD_NEXT, "poll");
    real_access = dlsym(RTLD_NEXT, "access");
    real_syscall = dlsym(RTLD_NEXT, "syscall");
    real_stat = dlsym(RTLD_NEXT, "stat");
    real_lstat = dlsym(RTLD_NEXT, "lstat");
    real_fstat = dlsym(RTLD_NEXT, "fstat");
    real_fstatat = dlsym(RTLD_NEXT, "fstatat");
    real_stat64 = dlsym(RTLD_NEXT, "stat64");
    real_fstat64 = dlsym(RTLD_NEXT, "fstat64");
}
#define REAL(name) (pthread_once(&resolve_once, resolve), real_##name)

// MARK: device model

typedef struct {
    uint32_t fourcc;
    uint32_t width, height;
    uint32_t intervals[2]; // frames per second, fastest first
} emu_mode;

static const emu_mode modes[] = {
    {V4L2_PIX_FMT_YUYV, 640, 480, {30, 15}},
    {V4L2_PIX_FMT_YUYV, 1280, 720, {10, 5}},
    {V4L2_PIX_FMT_MJPEG, 640, 480, {30, 15}},
    {V4L2_PIX_FMT_MJPEG, 1280, 720, {30, 15}},
};
#define MODE_COUNT (sizeof(modes) / sizeof(modes[0]))

typedef struct {
    uint32_t id;
    uint32_t type;
    const char *name;
    int32_t min, max, step, def;
    int extra; // present only with the `extra-controls` line in the control file
} emu_control;

static const emu_control controls[] = {
    {V4L2_CID_BRIGHTNESS, V4L2_CTRL_TYPE_INTEGER, "Brightness", -64, 64, 1, 0},
    {V4L2_CID_CONTRAST, V4L2_CTRL_TYPE_INTEGER, "Contrast", 0, 100, 1, 50},
    {V4L2_CID_SATURATION, V4L2_CTRL_TYPE_INTEGER, "Saturation", 0, 100, 1, 64},
    {V4L2_CID_AUTO_WHITE_BALANCE, V4L2_CTRL_TYPE_BOOLEAN, "White Balance, Automatic", 0, 1, 1, 1},
    {V4L2_CID_GAIN, V4L2_CTRL_TYPE_INTEGER, "Gain", 0, 255, 1, 32},
    {V4L2_CID_POWER_LINE_FREQUENCY, V4L2_CTRL_TYPE_MENU, "Power Line Frequency", 0, 2, 1, 1},
    {V4L2_CID_WHITE_BALANCE_TEMPERATURE, V4L2_CTRL_TYPE_INTEGER, "White Balance Temperature", 2800, 6500, 10, 4600},
    {V4L2_CID_SHARPNESS, V4L2_CTRL_TYPE_INTEGER, "Sharpness", 0, 7, 1, 3},
    {V4L2_CID_EXPOSURE_AUTO, V4L2_CTRL_TYPE_MENU, "Auto Exposure", 1, 3, 1, 3},
    {V4L2_CID_EXPOSURE_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, "Exposure Time, Absolute", 3, 2047, 1, 166},
    {V4L2_CID_FOCUS_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, "Focus, Absolute", 0, 250, 5, 0},
    {V4L2_CID_FOCUS_AUTO, V4L2_CTRL_TYPE_BOOLEAN, "Focus, Automatic Continuous", 0, 1, 1, 1},
    {V4L2_CID_ZOOM_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, "Zoom, Absolute", 100, 500, 1, 100},
    {V4L2_CID_AUTO_EXPOSURE_BIAS, V4L2_CTRL_TYPE_INTEGER_MENU, "Auto Exposure, Bias", 0, 8, 1, 4},
    {V4L2_CID_DO_WHITE_BALANCE, V4L2_CTRL_TYPE_BUTTON, "Do White Balance", 0, 0, 0, 0, 1},
    {V4L2_CID_AUTO_FOCUS_START, V4L2_CTRL_TYPE_BUTTON, "Auto Focus, Start", 0, 0, 0, 0, 1},
    {V4L2_CID_FLASH_LED_MODE, V4L2_CTRL_TYPE_MENU, "LED Mode", 0, 2, 1, 0, 1},
    {V4L2_CID_FLASH_STROBE, V4L2_CTRL_TYPE_BUTTON, "Strobe", 0, 0, 0, 0, 1},
};
#define CONTROL_COUNT (sizeof(controls) / sizeof(controls[0]))
static const int64_t exposure_bias_menu[9] = {-2000, -1500, -1000, -500, 0, 500, 1000, 1500, 2000};

enum { BUF_USER, BUF_QUEUED, BUF_DONE };

typedef struct {
    int state;
    uint32_t sequence;
    uint32_t bytesused;
    struct timeval timestamp;
} emu_buffer;

typedef struct {
    pthread_mutex_t lock;
    int initialised;
    // Settings, kept across opens like a driver's.
    int mode;         // index into modes
    uint32_t fps;     // current rate
    int32_t values[CONTROL_COUNT];
    // Streaming, owned by one descriptor.
    int owner;        // fd that holds buffers, -1 when none
    int streaming;
    uint32_t buffer_count;
    uint32_t buffer_size; // page aligned
    emu_buffer buffers[MAX_BUFFERS];
    uint8_t *memory;      // the emulator's mapping of the owner's memfd
    uint64_t stream_start_ns;
    uint64_t next_slot;
    uint64_t frames_delivered;
    // Frames per mode, rendered at the first STREAMON in that mode and kept (a photo's switch
    // to a still size and back must not pay for rendering twice).
    uint8_t *images[MODE_COUNT][MAX_IMAGES];
    uint32_t image_lengths[MODE_COUNT][MAX_IMAGES];
    int image_count[MODE_COUNT];
    // Faults.
    int unplug_after; // -1: none
    int unplugged;
    int extras;       // the optional controls are present
    uint32_t slow_ms;
    int log_controls; // append control writes to the log file
} emu_device;

static emu_device device = {.lock = PTHREAD_MUTEX_INITIALIZER, .owner = -1, .unplug_after = -1};

typedef struct {
    int fd;
    int node; // 0 capture, 1 metadata
    int nonblocking;
} emu_fd;
static emu_fd fds[MAX_FDS];
static pthread_mutex_t fds_lock = PTHREAD_MUTEX_INITIALIZER;

static void init_device_locked(void) {
    if (device.initialised) return;
    device.initialised = 1;
    device.mode = 0;
    device.fps = modes[0].intervals[0];
    for (size_t i = 0; i < CONTROL_COUNT; i++) device.values[i] = controls[i].def;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int node_for_path(const char *path) {
    if (!path) return -1;
    if (strcmp(path, NODE_CAPTURE) == 0) return 0;
    if (strcmp(path, NODE_META) == 0) return 1;
    return -1;
}

static emu_fd *lookup(int fd) {
    if (fd < 0) return NULL;
    emu_fd *found = NULL;
    pthread_mutex_lock(&fds_lock);
    for (int i = 0; i < MAX_FDS; i++)
        if (fds[i].fd == fd + 1) { found = &fds[i]; break; } // stored +1 so zeroed slots are free
    pthread_mutex_unlock(&fds_lock);
    return found;
}

// MARK: faults

typedef struct {
    int busy, eacces, unplug_after, slow_ms, extras, log_controls;
} emu_faults;

static void control_file_path(char *path, size_t size) {
    const char *configured = getenv("V4L2_EMULATOR_CONTROL");
    if (configured) snprintf(path, size, "%s", configured);
    else snprintf(path, size, "/tmp/v4l2-emulator-%d.control", (int)getpid());
}

static emu_faults read_faults(void) {
    emu_faults f = {0, 0, -1, 0, 0, 0};
    char path[256];
    control_file_path(path, sizeof path);
    int fd = REAL(open)(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return f;
    char text[512];
    ssize_t n = read(fd, text, sizeof text - 1);
    REAL(close)(fd);
    if (n <= 0) return f;
    text[n] = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int value;
        if (strcmp(line, "busy") == 0) f.busy = 1;
        else if (strcmp(line, "eacces") == 0) f.eacces = 1;
        else if (strcmp(line, "extra-controls") == 0) f.extras = 1;
        else if (strcmp(line, "control-log") == 0) f.log_controls = 1;
        else if (sscanf(line, "unplug-after %d", &value) == 1) f.unplug_after = value;
        else if (sscanf(line, "slow %d", &value) == 1) f.slow_ms = value;
    }
    return f;
}

// MARK: images

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

static void rgb_to_yuyv(const uint8_t *rgb, uint8_t *out, uint32_t w, uint32_t h) {
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
}

static uint8_t *rgb_to_jpeg(const uint8_t *rgb, uint32_t w, uint32_t h, uint32_t *length) {
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

static uint32_t frame_bytes(int mode) { return modes[mode].width * modes[mode].height * 2; }

// Renders the frames for the current mode (called with the lock held, at STREAMON).
static void prepare_images_locked(void) {
    int mode = device.mode;
    if (device.image_count[mode] > 0) return;
    const emu_mode *m = &modes[mode];
    uint8_t *rgb = malloc((size_t)m->width * m->height * 3);
    char *names[64];
    int name_count = 0;
    const char *folder = getenv("V4L2_EMULATOR_IMAGES");
    DIR *dir = folder ? opendir(folder) : NULL;
    if (dir) {
        struct dirent *entry;
        while ((entry = readdir(dir)) && name_count < 64) {
            size_t n = strlen(entry->d_name);
            if (n > 4 && (strcasecmp(entry->d_name + n - 4, ".jpg") == 0)) names[name_count++] = strdup(entry->d_name);
        }
        closedir(dir);
        qsort(names, name_count, sizeof names[0], compare_names);
    }
    for (int i = 0; i < name_count; i++) {
        if (device.image_count[mode] < MAX_IMAGES) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", folder, names[i]);
            if (load_jpeg(path, rgb, m->width, m->height) == 0) {
                int k = device.image_count[mode]++;
                if (m->fourcc == V4L2_PIX_FMT_YUYV) {
                    device.images[mode][k] = malloc(frame_bytes(mode));
                    rgb_to_yuyv(rgb, device.images[mode][k], m->width, m->height);
                    device.image_lengths[mode][k] = frame_bytes(mode);
                } else {
                    device.images[mode][k] = rgb_to_jpeg(rgb, m->width, m->height, &device.image_lengths[mode][k]);
                }
            }
        }
        free(names[i]);
    }
    if (device.image_count[mode] == 0) {
        colour_bars(rgb, m->width, m->height);
        if (m->fourcc == V4L2_PIX_FMT_YUYV) {
            device.images[mode][0] = malloc(frame_bytes(mode));
            rgb_to_yuyv(rgb, device.images[mode][0], m->width, m->height);
            device.image_lengths[mode][0] = frame_bytes(mode);
        } else {
            device.images[mode][0] = rgb_to_jpeg(rgb, m->width, m->height, &device.image_lengths[mode][0]);
        }
        device.image_count[mode] = 1;
    }
    free(rgb);
}

// MARK: streaming

static uint64_t interval_ns(void) {
    if (device.slow_ms) return (uint64_t)device.slow_ms * 1000000ull;
    return 1000000000ull / device.fps;
}

// Moves the clock forward: every frame whose time has come fills the oldest queued buffer,
// or is lost when none is queued.
static void advance_locked(void) {
    if (!device.streaming || device.unplugged) return;
    uint64_t now = now_ns();
    uint64_t step = interval_ns();
    while (device.stream_start_ns + (device.next_slot + 1) * step <= now) {
        uint64_t slot = device.next_slot++;
        if (device.unplug_after >= 0 && device.frames_delivered >= (uint64_t)device.unplug_after) {
            device.unplugged = 1;
            return;
        }
        int chosen = -1;
        // Oldest queued: buffers are queued in order, so the lowest sequence of queue time; keep
        // it simple with a queue order counter stored in `sequence` while queued.
        uint32_t oldest = UINT32_MAX;
        for (uint32_t i = 0; i < device.buffer_count; i++)
            if (device.buffers[i].state == BUF_QUEUED && device.buffers[i].sequence < oldest) {
                oldest = device.buffers[i].sequence;
                chosen = (int)i;
            }
        if (chosen < 0) continue; // no buffer: the frame is lost, the sequence moves on
        emu_buffer *b = &device.buffers[chosen];
        int image = (int)((slot / FRAMES_PER_IMAGE) % (uint64_t)device.image_count[device.mode]);
        memcpy(device.memory + (size_t)chosen * device.buffer_size, device.images[device.mode][image],
               device.image_lengths[device.mode][image]);
        b->bytesused = device.image_lengths[device.mode][image];
        uint64_t t = device.stream_start_ns + (slot + 1) * step;
        b->timestamp.tv_sec = (time_t)(t / 1000000000ull);
        b->timestamp.tv_usec = (suseconds_t)((t % 1000000000ull) / 1000);
        b->sequence = (uint32_t)slot;
        b->state = BUF_DONE;
        device.frames_delivered++;
    }
}

static uint32_t queue_counter;

static int done_buffer_locked(void) {
    int chosen = -1;
    uint32_t lowest = UINT32_MAX;
    for (uint32_t i = 0; i < device.buffer_count; i++)
        if (device.buffers[i].state == BUF_DONE && device.buffers[i].sequence < lowest) {
            lowest = device.buffers[i].sequence;
            chosen = (int)i;
        }
    return chosen;
}

static void stop_streaming_locked(void) {
    device.streaming = 0;
    for (uint32_t i = 0; i < device.buffer_count; i++) device.buffers[i].state = BUF_USER;
}

static void free_buffers_locked(int fd) {
    stop_streaming_locked();
    if (device.memory) munmap(device.memory, (size_t)device.buffer_count * device.buffer_size);
    device.memory = NULL;
    device.buffer_count = 0;
    if (fd >= 0) ftruncate(fd, 0);
    device.owner = -1;
}

static void fill_buffer_info(struct v4l2_buffer *b, uint32_t index) {
    emu_buffer *e = &device.buffers[index];
    b->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    b->memory = V4L2_MEMORY_MMAP;
    b->length = frame_bytes(device.mode);
    b->m.offset = index * device.buffer_size;
    b->flags = V4L2_BUF_FLAG_MAPPED | V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC | V4L2_BUF_FLAG_TSTAMP_SRC_SOE;
    if (e->state == BUF_QUEUED) b->flags |= V4L2_BUF_FLAG_QUEUED;
    if (e->state == BUF_DONE) b->flags |= V4L2_BUF_FLAG_DONE;
    b->field = V4L2_FIELD_NONE;
    b->bytesused = e->state == BUF_DONE || e->state == BUF_USER ? e->bytesused : 0;
    b->sequence = e->sequence;
    b->timestamp = e->timestamp;
}

// MARK: formats

static void fill_pix_format(struct v4l2_pix_format *pix, int mode) {
    const emu_mode *m = &modes[mode];
    memset(pix, 0, sizeof *pix);
    pix->width = m->width;
    pix->height = m->height;
    pix->pixelformat = m->fourcc;
    pix->field = V4L2_FIELD_NONE;
    pix->bytesperline = m->fourcc == V4L2_PIX_FMT_YUYV ? m->width * 2 : 0;
    pix->sizeimage = frame_bytes(mode);
    pix->colorspace = V4L2_COLORSPACE_SRGB;
}

// The mode a driver would pick for a request: the format if offered (else YUYV), then the size
// nearest in area.
static int nearest_mode(uint32_t fourcc, uint32_t width, uint32_t height) {
    uint32_t wanted = (fourcc == V4L2_PIX_FMT_MJPEG) ? V4L2_PIX_FMT_MJPEG : V4L2_PIX_FMT_YUYV;
    int best = -1;
    int64_t best_distance = INT64_MAX;
    for (size_t i = 0; i < MODE_COUNT; i++) {
        if (modes[i].fourcc != wanted) continue;
        int64_t d = llabs((int64_t)modes[i].width * modes[i].height - (int64_t)width * height);
        if (d < best_distance) { best_distance = d; best = (int)i; }
    }
    return best;
}

static uint32_t nearest_fps(int mode, uint32_t numerator, uint32_t denominator) {
    const emu_mode *m = &modes[mode];
    if (numerator == 0 || denominator == 0) return m->intervals[0];
    double wanted = (double)denominator / numerator;
    uint32_t best = m->intervals[0];
    for (int i = 0; i < 2; i++) {
        double d = m->intervals[i] - wanted, b = best - wanted;
        if (d * d < b * b) best = m->intervals[i];
    }
    return best;
}

// MARK: controls

static int control_index(uint32_t id) {
    for (size_t i = 0; i < CONTROL_COUNT; i++)
        if (controls[i].id == id && (!controls[i].extra || device.extras)) return (int)i;
    return -1;
}

static int32_t value_of(uint32_t id) {
    int i = control_index(id);
    return i < 0 ? 0 : device.values[i];
}

// Inactive flags follow the auto modes, as UVC's do.
static uint32_t control_flags(uint32_t id) {
    switch (id) {
    case V4L2_CID_WHITE_BALANCE_TEMPERATURE:
        return value_of(V4L2_CID_AUTO_WHITE_BALANCE) ? V4L2_CTRL_FLAG_INACTIVE : 0;
    case V4L2_CID_EXPOSURE_ABSOLUTE:
    case V4L2_CID_GAIN:
        return value_of(V4L2_CID_EXPOSURE_AUTO) == V4L2_EXPOSURE_MANUAL ? 0 : V4L2_CTRL_FLAG_INACTIVE;
    case V4L2_CID_AUTO_EXPOSURE_BIAS:
        return value_of(V4L2_CID_EXPOSURE_AUTO) == V4L2_EXPOSURE_MANUAL ? V4L2_CTRL_FLAG_INACTIVE : 0;
    case V4L2_CID_FOCUS_ABSOLUTE:
    case V4L2_CID_AUTO_FOCUS_START:
        return value_of(V4L2_CID_FOCUS_AUTO) ? V4L2_CTRL_FLAG_INACTIVE : 0;
    case V4L2_CID_DO_WHITE_BALANCE:
        return value_of(V4L2_CID_AUTO_WHITE_BALANCE) ? V4L2_CTRL_FLAG_INACTIVE : 0;
    case V4L2_CID_EXPOSURE_AUTO:
    case V4L2_CID_AUTO_WHITE_BALANCE:
    case V4L2_CID_FOCUS_AUTO:
        return V4L2_CTRL_FLAG_UPDATE;
    default:
        return 0;
    }
}

// The control QUERYCTRL answers: exact id, or with V4L2_CTRL_FLAG_NEXT_CTRL the next id above.
static int find_query(uint32_t requested) {
    if (requested & V4L2_CTRL_FLAG_NEXT_CTRL) {
        uint32_t above = requested & ~(V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND);
        int best = -1;
        for (size_t i = 0; i < CONTROL_COUNT; i++)
            if (controls[i].id > above && (!controls[i].extra || device.extras) &&
                (best < 0 || controls[i].id < controls[best].id))
                best = (int)i;
        return best;
    }
    return control_index(requested);
}

static int valid_menu_index(uint32_t id, int32_t index) {
    if (id == V4L2_CID_EXPOSURE_AUTO) return index == V4L2_EXPOSURE_MANUAL || index == V4L2_EXPOSURE_APERTURE_PRIORITY;
    int i = control_index(id);
    return i >= 0 && index >= controls[i].min && index <= controls[i].max;
}

static const char *menu_name(uint32_t id, uint32_t index) {
    if (id == V4L2_CID_EXPOSURE_AUTO) return index == 1 ? "Manual Mode" : "Aperture Priority Mode";
    if (id == V4L2_CID_FLASH_LED_MODE) {
        static const char *names[] = {"Off", "Flash", "Torch"};
        return names[index];
    }
    if (id == V4L2_CID_POWER_LINE_FREQUENCY) {
        static const char *names[] = {"Disabled", "50 Hz", "60 Hz"};
        return names[index];
    }
    return "";
}

// Appends a successful control write to "<control file>.log" (the `control-log` line).
static void log_control_locked(uint32_t id, int32_t value) {
    if (!device.log_controls) return;
    char path[280];
    control_file_path(path, sizeof path - 4);
    strcat(path, ".log");
    int fd = REAL(open)(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[96];
    int n = snprintf(line, sizeof line, "%llu 0x%08x %d\n", (unsigned long long)(now_ns() / 1000), id, value);
    if (write(fd, line, (size_t)n) != n) { /* a test reading the log sees the line missing */ }
    REAL(close)(fd);
}

// Checks and applies one control write; returns 0 or an errno. `apply` 0 only validates.
static int set_control_locked(uint32_t id, int32_t *value, int apply) {
    int i = control_index(id);
    if (i < 0) return EINVAL;
    const emu_control *d = &controls[i];
    // UVC refuses writes to controls the auto mode owns.
    if (control_flags(d->id) & V4L2_CTRL_FLAG_INACTIVE) return EACCES;
    if ((d->type == V4L2_CTRL_TYPE_MENU || d->type == V4L2_CTRL_TYPE_INTEGER_MENU) && !valid_menu_index(d->id, *value))
        return EINVAL;
    // As in the flash API: a strobe only in flash mode.
    if (id == V4L2_CID_FLASH_STROBE && value_of(V4L2_CID_FLASH_LED_MODE) != V4L2_FLASH_LED_MODE_FLASH) return EBUSY;
    if (d->type == V4L2_CTRL_TYPE_BUTTON) { // pressing a button stores nothing
        if (apply) log_control_locked(id, 1);
        return 0;
    }
    // Integers are clamped and rounded to the step, as the kernel's control framework does.
    int32_t v = *value < d->min ? d->min : *value > d->max ? d->max : *value;
    v = d->min + (v - d->min + d->step / 2) / d->step * d->step;
    if (apply) {
        device.values[i] = v;
        log_control_locked(id, v);
    }
    *value = v;
    return 0;
}

// MARK: ioctl

static int fail(int error) {
    errno = error;
    return -1;
}

static int emulated_ioctl(emu_fd *entry, unsigned long request, void *arg) {
    int fd = entry->fd - 1;
    if (entry->node == 1) {
        if (request == VIDIOC_QUERYCAP) {
            struct v4l2_capability *cap = arg;
            memset(cap, 0, sizeof *cap);
            snprintf((char *)cap->driver, sizeof cap->driver, "v4l2-emulator");
            snprintf((char *)cap->card, sizeof cap->card, "Emulated Camera: Metadata");
            snprintf((char *)cap->bus_info, sizeof cap->bus_info, "platform:v4l2-emulator-0");
            cap->version = 0x060100;
            cap->device_caps = V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING;
            cap->capabilities = cap->device_caps | V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_DEVICE_CAPS;
            return 0;
        }
        return fail(ENOTTY);
    }
    pthread_mutex_lock(&device.lock);
    init_device_locked();
    int result = 0;
    if (device.unplugged && request != VIDIOC_STREAMOFF && request != VIDIOC_REQBUFS) {
        pthread_mutex_unlock(&device.lock);
        return fail(ENODEV);
    }
    switch (request) {
    case VIDIOC_QUERYCAP: {
        struct v4l2_capability *cap = arg;
        memset(cap, 0, sizeof *cap);
        snprintf((char *)cap->driver, sizeof cap->driver, "v4l2-emulator");
        snprintf((char *)cap->card, sizeof cap->card, "Emulated Camera");
        snprintf((char *)cap->bus_info, sizeof cap->bus_info, "platform:v4l2-emulator-0");
        cap->version = 0x060100;
        cap->device_caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING | V4L2_CAP_EXT_PIX_FORMAT;
        cap->capabilities = cap->device_caps | V4L2_CAP_META_CAPTURE | V4L2_CAP_DEVICE_CAPS;
        break;
    }
    case VIDIOC_ENUM_FMT: {
        struct v4l2_fmtdesc *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || f->index > 1) { result = fail(EINVAL); break; }
        uint32_t index = f->index;
        memset(f, 0, sizeof *f);
        f->index = index;
        f->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        if (index == 0) {
            f->pixelformat = V4L2_PIX_FMT_YUYV;
            snprintf((char *)f->description, sizeof f->description, "YUYV 4:2:2");
        } else {
            f->pixelformat = V4L2_PIX_FMT_MJPEG;
            f->flags = V4L2_FMT_FLAG_COMPRESSED;
            snprintf((char *)f->description, sizeof f->description, "Motion-JPEG");
        }
        break;
    }
    case VIDIOC_ENUM_FRAMESIZES: {
        struct v4l2_frmsizeenum *s = arg;
        uint32_t seen = 0;
        int found = -1;
        for (size_t i = 0; i < MODE_COUNT; i++)
            if (modes[i].fourcc == s->pixel_format && seen++ == s->index) found = (int)i;
        if (found < 0) { result = fail(EINVAL); break; }
        s->type = V4L2_FRMSIZE_TYPE_DISCRETE;
        s->discrete.width = modes[found].width;
        s->discrete.height = modes[found].height;
        break;
    }
    case VIDIOC_ENUM_FRAMEINTERVALS: {
        struct v4l2_frmivalenum *v = arg;
        int found = -1;
        for (size_t i = 0; i < MODE_COUNT; i++)
            if (modes[i].fourcc == v->pixel_format && modes[i].width == v->width && modes[i].height == v->height)
                found = (int)i;
        if (found < 0 || v->index > 1) { result = fail(EINVAL); break; }
        v->type = V4L2_FRMIVAL_TYPE_DISCRETE;
        v->discrete.numerator = 1;
        v->discrete.denominator = modes[found].intervals[v->index];
        break;
    }
    case VIDIOC_G_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) { result = fail(EINVAL); break; }
        fill_pix_format(&f->fmt.pix, device.mode);
        break;
    }
    case VIDIOC_TRY_FMT:
    case VIDIOC_S_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) { result = fail(EINVAL); break; }
        int mode = nearest_mode(f->fmt.pix.pixelformat, f->fmt.pix.width, f->fmt.pix.height);
        if (request == VIDIOC_S_FMT) {
            if (device.owner >= 0 && (device.owner != fd || device.streaming)) { result = fail(EBUSY); break; }
            if (device.mode != mode) device.fps = modes[mode].intervals[0];
            device.mode = mode;
        }
        fill_pix_format(&f->fmt.pix, mode);
        break;
    }
    case VIDIOC_G_PARM:
    case VIDIOC_S_PARM: {
        struct v4l2_streamparm *p = arg;
        if (p->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) { result = fail(EINVAL); break; }
        if (request == VIDIOC_S_PARM) {
            if (device.streaming && device.owner != fd) { result = fail(EBUSY); break; }
            device.fps = nearest_fps(device.mode, p->parm.capture.timeperframe.numerator,
                                     p->parm.capture.timeperframe.denominator);
        }
        memset(&p->parm, 0, sizeof p->parm);
        p->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
        p->parm.capture.timeperframe.numerator = 1;
        p->parm.capture.timeperframe.denominator = device.fps;
        break;
    }
    case VIDIOC_REQBUFS: {
        struct v4l2_requestbuffers *r = arg;
        if (r->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || r->memory != V4L2_MEMORY_MMAP) { result = fail(EINVAL); break; }
        if (device.owner >= 0 && device.owner != fd) { result = fail(EBUSY); break; }
        if (device.streaming) { result = fail(EBUSY); break; }
        free_buffers_locked(fd);
        if (r->count == 0) break;
        if (device.unplugged) { result = fail(ENODEV); break; }
        uint32_t count = r->count < 2 ? 2 : r->count > MAX_BUFFERS ? MAX_BUFFERS : r->count;
        long page = sysconf(_SC_PAGESIZE);
        uint32_t size = (frame_bytes(device.mode) + (uint32_t)page - 1) / (uint32_t)page * (uint32_t)page;
        if (ftruncate(fd, (off_t)count * size) != 0) { result = -1; break; }
        void *memory = mmap(NULL, (size_t)count * size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (memory == MAP_FAILED) { result = -1; break; }
        device.memory = memory;
        device.buffer_count = count;
        device.buffer_size = size;
        memset(device.buffers, 0, sizeof device.buffers);
        device.owner = fd;
        r->count = count;
        r->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP;
        break;
    }
    case VIDIOC_QUERYBUF: {
        struct v4l2_buffer *b = arg;
        if (device.owner != fd || b->index >= device.buffer_count) { result = fail(EINVAL); break; }
        fill_buffer_info(b, b->index);
        break;
    }
    case VIDIOC_QBUF: {
        struct v4l2_buffer *b = arg;
        if (device.owner != fd || b->index >= device.buffer_count || b->memory != V4L2_MEMORY_MMAP ||
            device.buffers[b->index].state != BUF_USER) {
            result = fail(EINVAL);
            break;
        }
        device.buffers[b->index].state = BUF_QUEUED;
        device.buffers[b->index].sequence = queue_counter++; // queue order until filled
        fill_buffer_info(b, b->index);
        break;
    }
    case VIDIOC_DQBUF: {
        struct v4l2_buffer *b = arg;
        if (device.owner != fd || !device.streaming) { result = fail(EINVAL); break; }
        for (;;) {
            advance_locked();
            if (device.unplugged) { result = fail(ENODEV); break; }
            int index = done_buffer_locked();
            if (index >= 0) {
                device.buffers[index].state = BUF_USER;
                fill_buffer_info(b, (uint32_t)index);
                b->index = (uint32_t)index;
                break;
            }
            if (entry->nonblocking) { result = fail(EAGAIN); break; }
            pthread_mutex_unlock(&device.lock);
            usleep(2000);
            pthread_mutex_lock(&device.lock);
            if (!device.streaming) { result = fail(EINVAL); break; }
        }
        break;
    }
    case VIDIOC_STREAMON: {
        if (device.owner != fd || device.buffer_count == 0) { result = fail(EINVAL); break; }
        if (!device.streaming) {
            prepare_images_locked();
            device.streaming = 1;
            device.stream_start_ns = now_ns();
            device.next_slot = 0;
            device.frames_delivered = 0;
        }
        break;
    }
    case VIDIOC_STREAMOFF: {
        if (device.owner != fd) { result = fail(EINVAL); break; }
        stop_streaming_locked();
        break;
    }
    case VIDIOC_QUERYCTRL: {
        struct v4l2_queryctrl *q = arg;
        int i = find_query(q->id);
        if (i < 0) { result = fail(EINVAL); break; }
        const emu_control *c = &controls[i];
        memset(q, 0, sizeof *q);
        q->id = c->id;
        q->type = c->type;
        snprintf((char *)q->name, sizeof q->name, "%s", c->name);
        q->minimum = c->min;
        q->maximum = c->max;
        q->step = c->step;
        q->default_value = c->def;
        q->flags = control_flags(c->id);
        break;
    }
    case VIDIOC_QUERY_EXT_CTRL: {
        struct v4l2_query_ext_ctrl *q = arg;
        int i = find_query(q->id);
        if (i < 0) { result = fail(EINVAL); break; }
        const emu_control *c = &controls[i];
        memset(q, 0, sizeof *q);
        q->id = c->id;
        q->type = c->type;
        snprintf(q->name, sizeof q->name, "%s", c->name);
        q->minimum = c->min;
        q->maximum = c->max;
        q->step = (uint64_t)c->step;
        q->default_value = c->def;
        q->flags = control_flags(c->id);
        q->elem_size = 4;
        q->elems = 1;
        break;
    }
    case VIDIOC_QUERYMENU: {
        struct v4l2_querymenu *m = arg;
        int i = control_index(m->id);
        if (i < 0 || (controls[i].type != V4L2_CTRL_TYPE_MENU && controls[i].type != V4L2_CTRL_TYPE_INTEGER_MENU) ||
            !valid_menu_index(m->id, (int32_t)m->index)) {
            result = fail(EINVAL);
            break;
        }
        uint32_t id = m->id, index = m->index;
        memset(m, 0, sizeof *m);
        m->id = id;
        m->index = index;
        if (controls[i].type == V4L2_CTRL_TYPE_INTEGER_MENU) m->value = exposure_bias_menu[index];
        else snprintf((char *)m->name, sizeof m->name, "%s", menu_name(id, index));
        break;
    }
    case VIDIOC_G_CTRL: {
        struct v4l2_control *c = arg;
        int i = control_index(c->id);
        if (i < 0) { result = fail(EINVAL); break; }
        c->value = device.values[i];
        break;
    }
    case VIDIOC_S_CTRL: {
        struct v4l2_control *c = arg;
        int error = set_control_locked(c->id, &c->value, 1);
        if (error) result = fail(error);
        break;
    }
    case VIDIOC_G_EXT_CTRLS:
    case VIDIOC_S_EXT_CTRLS:
    case VIDIOC_TRY_EXT_CTRLS: {
        struct v4l2_ext_controls *list = arg;
        for (uint32_t k = 0; k < list->count && result == 0; k++) {
            struct v4l2_ext_control *c = &list->controls[k];
            int i = control_index(c->id);
            int error = 0;
            if (i < 0) error = EINVAL;
            else if (request == VIDIOC_G_EXT_CTRLS) c->value = device.values[i];
            else {
                int32_t value = c->value; // the union is packed: no pointer into it
                error = set_control_locked(c->id, &value, request == VIDIOC_S_EXT_CTRLS);
                c->value = value;
            }
            if (error) {
                list->error_idx = k;
                result = fail(error);
            }
        }
        break;
    }
    default:
        result = fail(ENOTTY);
    }
    pthread_mutex_unlock(&device.lock);
    return result;
}

// MARK: open and close

static int emulated_open(const char *path, int flags) {
    int node = node_for_path(path);
    emu_faults f = read_faults();
    pthread_mutex_lock(&device.lock);
    init_device_locked();
    if (device.unplugged && f.unplug_after < 0) device.unplugged = 0; // plugged back in
    int gone = device.unplugged;
    device.unplug_after = f.unplug_after;
    device.slow_ms = (uint32_t)f.slow_ms;
    device.extras = f.extras;
    device.log_controls = f.log_controls;
    pthread_mutex_unlock(&device.lock);
    if (gone) return fail(ENOENT);
    if (f.eacces) return fail(EACCES);
    if (f.busy) return fail(EBUSY);
    int fd = memfd_create(node == 0 ? "video-emulated0" : "video-emulated1", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
    if (fd < 0) return -1;
    pthread_mutex_lock(&fds_lock);
    int stored = 0;
    for (int i = 0; i < MAX_FDS; i++)
        if (fds[i].fd == 0) {
            fds[i] = (emu_fd){.fd = fd + 1, .node = node, .nonblocking = (flags & O_NONBLOCK) != 0};
            stored = 1;
            break;
        }
    pthread_mutex_unlock(&fds_lock);
    if (!stored) {
        REAL(close)(fd);
        return fail(EMFILE);
    }
    return fd;
}

static int emulated_close(emu_fd *entry) {
    int fd = entry->fd - 1;
    pthread_mutex_lock(&device.lock);
    if (device.owner == fd) free_buffers_locked(-1);
    pthread_mutex_unlock(&device.lock);
    pthread_mutex_lock(&fds_lock);
    entry->fd = 0;
    pthread_mutex_unlock(&fds_lock);
    return REAL(close)(fd);
}

// MARK: character-device identity

#define EMU_MAJOR 81
#define EMU_MINOR_BASE 200

// The sysfs file tools read to learn a node's name from its device numbers.
static int uevent_node(const char *path) {
    if (!path) return -1;
    for (int node = 0; node < 2; node++) {
        char expected[64];
        snprintf(expected, sizeof expected, "/sys/dev/char/%d:%d/uevent", EMU_MAJOR, EMU_MINOR_BASE + node);
        if (strcmp(path, expected) == 0) return node;
    }
    return -1;
}

static int open_uevent(int node) {
    int fd = memfd_create("v4l2-emulator-uevent", MFD_CLOEXEC);
    if (fd < 0) return -1;
    char text[128];
    // Tools take the kind of node from DEVNAME's prefix followed by a digit ("video200").
    int n = snprintf(text, sizeof text, "MAJOR=%d\nMINOR=%d\nDEVNAME=video%d\n", EMU_MAJOR, EMU_MINOR_BASE + node,
                     EMU_MINOR_BASE + node);
    if (write(fd, text, (size_t)n) != n) {
        REAL(close)(fd);
        return -1;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

static void fill_node_stat(struct stat *st, int node) {
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFCHR | 0660;
    st->st_rdev = makedev(EMU_MAJOR, EMU_MINOR_BASE + node);
    st->st_nlink = 1;
    st->st_blksize = 4096;
}

static int node_of_fd(int fd) {
    emu_fd *entry = lookup(fd);
    return entry ? entry->node : -1;
}

int stat(const char *path, struct stat *st) {
    int node = node_for_path(path);
    if (node >= 0) {
        if (access(path, F_OK) != 0) return -1;
        fill_node_stat(st, node);
        return 0;
    }
    return REAL(stat)(path, st);
}

int lstat(const char *path, struct stat *st) {
    int node = node_for_path(path);
    if (node >= 0) return stat(path, st);
    return REAL(lstat)(path, st);
}

int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
    int node = node_for_path(path);
    if (node >= 0) return stat(path, st);
    if (path[0] == 0 && (flags & AT_EMPTY_PATH) && (node = node_of_fd(dirfd)) >= 0) {
        fill_node_stat(st, node);
        return 0;
    }
    return REAL(fstatat)(dirfd, path, st, flags);
}

int fstat(int fd, struct stat *st) {
    int node = node_of_fd(fd);
    if (node >= 0) {
        fill_node_stat(st, node);
        return 0;
    }
    return REAL(fstat)(fd, st);
}

// v4l2-ctl reads the uevent file with fopen, which opens inside libc without the open hook.
FILE *fopen(const char *path, const char *mode) {
    static FILE *(*real_fopen)(const char *, const char *);
    if (!real_fopen) real_fopen = dlsym(RTLD_NEXT, "fopen");
    int node = uevent_node(path);
    if (node >= 0) {
        int fd = open_uevent(node);
        return fd < 0 ? NULL : fdopen(fd, "r");
    }
    return real_fopen(path, mode);
}

FILE *fopen64(const char *path, const char *mode) { return fopen(path, mode); }

// On x86-64 `struct stat64` and `struct stat` have the same layout.
int stat64(const char *path, struct stat64 *st) {
    if (node_for_path(path) >= 0) return stat(path, (struct stat *)st);
    return REAL(stat64)(path, st);
}

int fstat64(int fd, struct stat64 *st) {
    if (node_of_fd(fd) >= 0) return fstat(fd, (struct stat *)st);
    return REAL(fstat64)(fd, st);
}

// MARK: interposed symbols

static int open_mode(int flags, va_list args) { return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, int) : 0; }

int open(const char *path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    int mode = open_mode(flags, args);
    va_end(args);
    if (node_for_path(path) >= 0) return emulated_open(path, flags);
    if (uevent_node(path) >= 0) return open_uevent(uevent_node(path));
    return REAL(open)(path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    int mode = open_mode(flags, args);
    va_end(args);
    if (node_for_path(path) >= 0) return emulated_open(path, flags);
    if (uevent_node(path) >= 0) return open_uevent(uevent_node(path));
    return REAL(open64)(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    int mode = open_mode(flags, args);
    va_end(args);
    if (node_for_path(path) >= 0) return emulated_open(path, flags);
    if (uevent_node(path) >= 0) return open_uevent(uevent_node(path));
    return REAL(openat)(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    int mode = open_mode(flags, args);
    va_end(args);
    if (node_for_path(path) >= 0) return emulated_open(path, flags);
    if (uevent_node(path) >= 0) return open_uevent(uevent_node(path));
    return REAL(openat64)(dirfd, path, flags, mode);
}

int __open_2(const char *path, int flags) {
    if (node_for_path(path) >= 0) return emulated_open(path, flags);
    return REAL(__open_2)(path, flags);
}

int __open64_2(const char *path, int flags) {
    if (node_for_path(path) >= 0) return emulated_open(path, flags);
    return REAL(__open64_2)(path, flags);
}

int close(int fd) {
    emu_fd *entry = lookup(fd);
    if (entry) return emulated_close(entry);
    return REAL(close)(fd);
}

int ioctl(int fd, unsigned long request, ...) {
    va_list args;
    va_start(args, request);
    void *arg = va_arg(args, void *);
    va_end(args);
    emu_fd *entry = lookup(fd);
    if (entry) return emulated_ioctl(entry, request, arg);
    return REAL(ioctl)(fd, request, arg);
}

int access(const char *path, int mode) {
    if (node_for_path(path) >= 0) {
        emu_faults f = read_faults();
        pthread_mutex_lock(&device.lock);
        int gone = device.unplugged && f.unplug_after >= 0;
        pthread_mutex_unlock(&device.lock);
        if (gone) return fail(ENOENT);
        if (f.eacces && (mode & (R_OK | W_OK))) return fail(EACCES);
        return 0;
    }
    return REAL(access)(path, mode);
}

static short emulated_revents(emu_fd *entry, short events) {
    if (entry->node != 0) return POLLERR;
    pthread_mutex_lock(&device.lock);
    short revents = 0;
    if (device.unplugged) revents = POLLERR | POLLHUP;
    else if (!device.streaming || device.owner != entry->fd - 1) revents = POLLERR;
    else {
        advance_locked();
        if (device.unplugged) revents = POLLERR | POLLHUP;
        else if (done_buffer_locked() >= 0) revents = (short)(events & (POLLIN | POLLRDNORM));
    }
    pthread_mutex_unlock(&device.lock);
    return revents;
}

int poll(struct pollfd *pfds, nfds_t count, int timeout) {
    int any = 0;
    for (nfds_t i = 0; i < count; i++)
        if (lookup(pfds[i].fd)) any = 1;
    if (!any) return REAL(poll)(pfds, count, timeout);
    uint64_t deadline = timeout < 0 ? UINT64_MAX : now_ns() + (uint64_t)timeout * 1000000ull;
    int saved[count > 0 ? count : 1];
    for (;;) {
        int ready = 0;
        for (nfds_t i = 0; i < count; i++) {
            saved[i] = pfds[i].fd;
            emu_fd *entry = lookup(pfds[i].fd);
            if (entry) {
                pfds[i].revents = emulated_revents(entry, pfds[i].events);
                pfds[i].fd = -1; // the real poll skips it
            }
        }
        int real = REAL(poll)(pfds, count, 0);
        for (nfds_t i = 0; i < count; i++) {
            if (pfds[i].fd == -1 && saved[i] != -1) {
                emu_fd *entry = lookup(saved[i]);
                pfds[i].fd = saved[i];
                if (entry) pfds[i].revents = emulated_revents(entry, pfds[i].events);
            }
            if (pfds[i].revents) ready++;
        }
        if (real < 0) return real;
        if (ready > 0) return ready;
        uint64_t now = now_ns();
        if (now >= deadline) return 0;
        uint64_t left = deadline - now;
        struct timespec pause = {0, (long)(left < 2000000 ? left : 2000000)};
        nanosleep(&pause, NULL);
    }
}

// OpenCV's V4L2 backend waits with select(): answered through poll() above.
int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout) {
    static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    if (!real_select) real_select = dlsym(RTLD_NEXT, "select");
    int any = 0;
    for (int fd = 0; fd < nfds && !any; fd++)
        if (readfds && FD_ISSET(fd, readfds) && lookup(fd)) any = 1;
    if (!any) return real_select(nfds, readfds, writefds, exceptfds, timeout);
    struct pollfd pfds[FD_SETSIZE];
    nfds_t count = 0;
    for (int fd = 0; fd < nfds; fd++) {
        short events = 0;
        if (readfds && FD_ISSET(fd, readfds)) events |= POLLIN;
        if (writefds && FD_ISSET(fd, writefds)) events |= POLLOUT;
        if (exceptfds && FD_ISSET(fd, exceptfds)) events |= POLLPRI;
        if (events) pfds[count++] = (struct pollfd){.fd = fd, .events = events};
    }
    int ms = timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
    int result = poll(pfds, count, ms);
    if (result < 0) return result;
    if (readfds) FD_ZERO(readfds);
    if (writefds) FD_ZERO(writefds);
    if (exceptfds) FD_ZERO(exceptfds);
    int ready = 0;
    for (nfds_t i = 0; i < count; i++) {
        short r = pfds[i].revents;
        if (readfds && (r & (POLLIN | POLLERR | POLLHUP))) { FD_SET(pfds[i].fd, readfds); ready++; }
        if (writefds && (r & POLLOUT)) { FD_SET(pfds[i].fd, writefds); ready++; }
        if (exceptfds && (r & (POLLPRI | POLLERR))) { FD_SET(pfds[i].fd, exceptfds); ready++; }
    }
    return ready;
}

long syscall(long number, ...) {
    va_list args;
    va_start(args, number);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(args, long);
    va_end(args);
    switch (number) {
    case SYS_openat:
        if (node_for_path((const char *)a[1]) >= 0) return emulated_open((const char *)a[1], (int)a[2]);
        break;
    case SYS_open:
        if (node_for_path((const char *)a[0]) >= 0) return emulated_open((const char *)a[0], (int)a[1]);
        break;
    case SYS_close: {
        emu_fd *entry = lookup((int)a[0]);
        if (entry) return emulated_close(entry);
        break;
    }
    case SYS_ioctl: {
        emu_fd *entry = lookup((int)a[0]);
        if (entry) return emulated_ioctl(entry, (unsigned long)a[1], (void *)a[2]);
        break;
    }
    default:
        break;
    }
    return REAL(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
