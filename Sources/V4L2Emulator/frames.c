// The capture side of the emulated camera: the mode table, format negotiation, mmap buffers and
// the frame clock. ENUM_FMT, ENUM_FRAMESIZES and ENUM_FRAMEINTERVALS are all read from `modes`,
// so a mode added there is offered, negotiated and streamed everywhere.
//
// Timing follows the monotonic clock: frame k of a stream is due at start + (k+1) * interval;
// when no buffer is queued at a frame's time the frame is lost and the sequence number jumps,
// as with a real driver. Every function here runs with emu_lock held.
#include "emulator_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_BUFFERS 32
#define MAX_IMAGES 4
#define FRAMES_PER_IMAGE 15

static const emu_format yuyv = {V4L2_PIX_FMT_YUYV, "YUYV 4:2:2", 0, emu_encode_yuyv};
static const emu_format mjpeg = {V4L2_PIX_FMT_MJPEG, "Motion-JPEG", V4L2_FMT_FLAG_COMPRESSED, emu_encode_jpeg};

// A UVC-like webcam. ENUM_FMT lists the formats in the order they first appear here; the first
// mode is the one the camera starts in.
static const emu_mode modes[] = {
    {&yuyv, 640, 480, {30, 15}},
    {&yuyv, 1280, 720, {10, 5}},
    {&mjpeg, 640, 480, {30, 15}},
    {&mjpeg, 1280, 720, {30, 15}},
};
#define MODE_COUNT (sizeof(modes) / sizeof(modes[0]))

enum { BUF_USER, BUF_QUEUED, BUF_DONE };

typedef struct {
    int state;
    uint32_t sequence;
    uint32_t bytesused;
    struct timeval timestamp;
} emu_buffer;

static struct {
    // Settings, kept across opens like a driver's.
    int mode;     // index into modes
    uint32_t fps; // current rate
    // Streaming, owned by one descriptor.
    int owner; // fd that holds buffers, -1 when none
    int streaming;
    uint32_t buffer_count;
    uint32_t buffer_size; // page aligned
    emu_buffer buffers[MAX_BUFFERS];
    uint8_t *memory; // the emulator's mapping of the owner's memfd
    uint64_t stream_start_ns;
    uint64_t next_slot;
    uint64_t frames_delivered;
    uint32_t queue_counter; // queue order of buffers not yet filled
    // Frames per mode, rendered at the first STREAMON in that mode and kept (a photo's switch
    // to a still size and back must not pay for rendering twice).
    uint8_t *images[MODE_COUNT][MAX_IMAGES];
    uint32_t image_lengths[MODE_COUNT][MAX_IMAGES];
    int image_count[MODE_COUNT];
} stream = {.owner = -1};

void emu_frames_init_locked(void) {
    stream.mode = 0;
    stream.fps = modes[0].fps[0];
}

// MARK: the mode table

static uint32_t rate_count(const emu_mode *m) {
    uint32_t n = 0;
    while (n < EMU_MAX_RATES && m->fps[n]) n++;
    return n;
}

// The index-th distinct format of the table, in order of first appearance; NULL past the last.
static const emu_format *format_at(uint32_t index) {
    for (size_t i = 0; i < MODE_COUNT; i++) {
        int first = 1;
        for (size_t j = 0; j < i; j++)
            if (modes[j].format == modes[i].format) first = 0;
        if (first && index-- == 0) return modes[i].format;
    }
    return NULL;
}

static int offers(uint32_t fourcc) {
    for (size_t i = 0; i < MODE_COUNT; i++)
        if (modes[i].format->fourcc == fourcc) return 1;
    return 0;
}

// Buffers are sized for a YUYV frame whatever the format, as UVC does for MJPEG.
static uint32_t frame_bytes(int mode) { return modes[mode].width * modes[mode].height * 2; }

static void fill_pix_format(struct v4l2_pix_format *pix, int mode) {
    const emu_mode *m = &modes[mode];
    memset(pix, 0, sizeof *pix);
    pix->width = m->width;
    pix->height = m->height;
    pix->pixelformat = m->format->fourcc;
    pix->field = V4L2_FIELD_NONE;
    pix->bytesperline = (m->format->flags & V4L2_FMT_FLAG_COMPRESSED) ? 0 : m->width * 2;
    pix->sizeimage = frame_bytes(mode);
    pix->colorspace = V4L2_COLORSPACE_SRGB;
}

// The mode a driver would pick for a request: the format if offered (else the first mode's),
// then the size nearest in area.
static int nearest_mode(uint32_t fourcc, uint32_t width, uint32_t height) {
    uint32_t wanted = offers(fourcc) ? fourcc : modes[0].format->fourcc;
    int best = -1;
    int64_t best_distance = INT64_MAX;
    for (size_t i = 0; i < MODE_COUNT; i++) {
        if (modes[i].format->fourcc != wanted) continue;
        int64_t d = llabs((int64_t)modes[i].width * modes[i].height - (int64_t)width * height);
        if (d < best_distance) { best_distance = d; best = (int)i; }
    }
    return best;
}

// The listed rate nearest the request; with a `max-fps` cap, only rates up to it (the slowest
// when none is), as a bandwidth-limited camera adjusts.
static uint32_t nearest_fps(int mode, uint32_t numerator, uint32_t denominator) {
    const emu_mode *m = &modes[mode];
    uint32_t cap = emu_faults.max_fps;
    uint32_t count = rate_count(m);
    uint32_t best = 0;
    for (uint32_t i = 0; i < count; i++)
        if (!cap || m->fps[i] <= cap) { best = m->fps[i]; break; }
    if (!best) best = m->fps[count - 1];
    if (numerator == 0 || denominator == 0) return best;
    double wanted = (double)denominator / numerator;
    for (uint32_t i = 0; i < count; i++) {
        if (cap && m->fps[i] > cap) continue;
        double d = m->fps[i] - wanted, b = best - wanted;
        if (d * d < b * b) best = m->fps[i];
    }
    return best;
}

// MARK: formats

int emu_enum_fmt(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_fmtdesc *f = arg;
    const emu_format *format = f->type == V4L2_BUF_TYPE_VIDEO_CAPTURE ? format_at(f->index) : NULL;
    if (!format) return EINVAL;
    uint32_t index = f->index;
    memset(f, 0, sizeof *f);
    f->index = index;
    f->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    f->pixelformat = format->fourcc;
    f->flags = format->flags;
    snprintf((char *)f->description, sizeof f->description, "%s", format->description);
    return 0;
}

int emu_enum_framesizes(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_frmsizeenum *s = arg;
    uint32_t seen = 0;
    int found = -1;
    for (size_t i = 0; i < MODE_COUNT; i++)
        if (modes[i].format->fourcc == s->pixel_format && seen++ == s->index) found = (int)i;
    if (found < 0) return EINVAL;
    s->type = V4L2_FRMSIZE_TYPE_DISCRETE;
    s->discrete.width = modes[found].width;
    s->discrete.height = modes[found].height;
    return 0;
}

int emu_enum_frameintervals(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_frmivalenum *v = arg;
    int found = -1;
    for (size_t i = 0; i < MODE_COUNT; i++)
        if (modes[i].format->fourcc == v->pixel_format && modes[i].width == v->width && modes[i].height == v->height)
            found = (int)i;
    if (found < 0 || v->index >= rate_count(&modes[found])) return EINVAL;
    v->type = V4L2_FRMIVAL_TYPE_DISCRETE;
    v->discrete.numerator = 1;
    v->discrete.denominator = modes[found].fps[v->index];
    return 0;
}

int emu_g_fmt(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_format *f = arg;
    if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
    fill_pix_format(&f->fmt.pix, stream.mode);
    return 0;
}

int emu_s_fmt(emu_fd *entry, unsigned long request, void *arg) {
    int fd = entry->fd - 1;
    struct v4l2_format *f = arg;
    if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
    int mode = nearest_mode(f->fmt.pix.pixelformat, f->fmt.pix.width, f->fmt.pix.height);
    if (request == VIDIOC_S_FMT) {
        if (emu_faults.busy_streaming) return EBUSY;
        if (stream.owner >= 0 && (stream.owner != fd || stream.streaming)) return EBUSY;
        if (stream.mode != mode) stream.fps = nearest_fps(mode, 0, 0);
        stream.mode = mode;
    }
    fill_pix_format(&f->fmt.pix, mode);
    return 0;
}

int emu_parm(emu_fd *entry, unsigned long request, void *arg) {
    int fd = entry->fd - 1;
    struct v4l2_streamparm *p = arg;
    if (p->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
    if (request == VIDIOC_S_PARM) {
        if (stream.streaming && stream.owner != fd) return EBUSY;
        stream.fps = nearest_fps(stream.mode, p->parm.capture.timeperframe.numerator,
                                 p->parm.capture.timeperframe.denominator);
    }
    memset(&p->parm, 0, sizeof p->parm);
    p->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
    p->parm.capture.timeperframe.numerator = 1;
    p->parm.capture.timeperframe.denominator = stream.fps;
    return 0;
}

// MARK: buffers

static void stop_streaming(void) {
    stream.streaming = 0;
    for (uint32_t i = 0; i < stream.buffer_count; i++) stream.buffers[i].state = BUF_USER;
}

// `fd` -1 leaves the memfd alone (it is closing anyway).
static void free_buffers(int fd) {
    stop_streaming();
    if (stream.memory) munmap(stream.memory, (size_t)stream.buffer_count * stream.buffer_size);
    stream.memory = NULL;
    stream.buffer_count = 0;
    if (fd >= 0 && ftruncate(fd, 0) != 0) { /* the next REQBUFS sizes it again */ }
    stream.owner = -1;
}

void emu_frames_release_locked(int fd) {
    if (stream.owner == fd) free_buffers(-1);
}

static void fill_buffer_info(struct v4l2_buffer *b, uint32_t index) {
    emu_buffer *e = &stream.buffers[index];
    b->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    b->memory = V4L2_MEMORY_MMAP;
    b->length = frame_bytes(stream.mode);
    b->m.offset = index * stream.buffer_size;
    b->flags = V4L2_BUF_FLAG_MAPPED | V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC | V4L2_BUF_FLAG_TSTAMP_SRC_SOE;
    if (e->state == BUF_QUEUED) b->flags |= V4L2_BUF_FLAG_QUEUED;
    if (e->state == BUF_DONE) b->flags |= V4L2_BUF_FLAG_DONE;
    b->field = V4L2_FIELD_NONE;
    b->bytesused = e->state == BUF_DONE || e->state == BUF_USER ? e->bytesused : 0;
    b->sequence = e->sequence;
    b->timestamp = e->timestamp;
}

int emu_reqbufs(emu_fd *entry, unsigned long request, void *arg) {
    (void)request;
    int fd = entry->fd - 1;
    struct v4l2_requestbuffers *r = arg;
    if (r->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || r->memory != V4L2_MEMORY_MMAP) return EINVAL;
    if (stream.owner >= 0 && stream.owner != fd) return EBUSY;
    if (stream.streaming || emu_faults.busy_streaming) return EBUSY;
    free_buffers(fd);
    if (r->count == 0) return 0;
    if (emu_faults.unplugged) return ENODEV;
    uint32_t count = r->count < 2 ? 2 : r->count > MAX_BUFFERS ? MAX_BUFFERS : r->count;
    long page = sysconf(_SC_PAGESIZE);
    uint32_t size = (frame_bytes(stream.mode) + (uint32_t)page - 1) / (uint32_t)page * (uint32_t)page;
    if (ftruncate(fd, (off_t)count * size) != 0) return errno;
    void *memory = mmap(NULL, (size_t)count * size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) return errno;
    stream.memory = memory;
    stream.buffer_count = count;
    stream.buffer_size = size;
    memset(stream.buffers, 0, sizeof stream.buffers);
    stream.owner = fd;
    r->count = count;
    r->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP;
    return 0;
}

int emu_querybuf(emu_fd *entry, unsigned long request, void *arg) {
    (void)request;
    struct v4l2_buffer *b = arg;
    if (stream.owner != entry->fd - 1 || b->index >= stream.buffer_count) return EINVAL;
    fill_buffer_info(b, b->index);
    return 0;
}

int emu_qbuf(emu_fd *entry, unsigned long request, void *arg) {
    (void)request;
    struct v4l2_buffer *b = arg;
    if (stream.owner != entry->fd - 1 || b->index >= stream.buffer_count || b->memory != V4L2_MEMORY_MMAP ||
        stream.buffers[b->index].state != BUF_USER)
        return EINVAL;
    stream.buffers[b->index].state = BUF_QUEUED;
    stream.buffers[b->index].sequence = stream.queue_counter++; // queue order until filled
    fill_buffer_info(b, b->index);
    return 0;
}

// MARK: the frame clock

static uint64_t interval_ns(void) {
    if (emu_faults.slow_ms) return (uint64_t)emu_faults.slow_ms * 1000000ull;
    return 1000000000ull / stream.fps;
}

// Moves the clock forward: every frame whose time has come fills the oldest queued buffer,
// or is lost when none is queued.
static void advance(void) {
    if (!stream.streaming || emu_faults.unplugged) return;
    uint64_t now = emu_now_ns();
    uint64_t step = interval_ns();
    while (stream.stream_start_ns + (stream.next_slot + 1) * step <= now) {
        uint64_t slot = stream.next_slot++;
        if (emu_faults.unplug_after >= 0 && stream.frames_delivered >= (uint64_t)emu_faults.unplug_after) {
            emu_faults.unplugged = 1;
            return;
        }
        // Oldest queued: while queued, `sequence` holds the queue order.
        int chosen = -1;
        uint32_t oldest = UINT32_MAX;
        for (uint32_t i = 0; i < stream.buffer_count; i++)
            if (stream.buffers[i].state == BUF_QUEUED && stream.buffers[i].sequence < oldest) {
                oldest = stream.buffers[i].sequence;
                chosen = (int)i;
            }
        if (chosen < 0) continue; // no buffer: the frame is lost, the sequence moves on
        emu_buffer *b = &stream.buffers[chosen];
        int mode = stream.mode;
        int image = (int)((slot / FRAMES_PER_IMAGE) % (uint64_t)stream.image_count[mode]);
        memcpy(stream.memory + (size_t)chosen * stream.buffer_size, stream.images[mode][image],
               stream.image_lengths[mode][image]);
        b->bytesused = stream.image_lengths[mode][image];
        uint64_t t = stream.stream_start_ns + (slot + 1) * step;
        b->timestamp.tv_sec = (time_t)(t / 1000000000ull);
        b->timestamp.tv_usec = (suseconds_t)((t % 1000000000ull) / 1000);
        b->sequence = (uint32_t)slot;
        b->state = BUF_DONE;
        stream.frames_delivered++;
    }
}

static int done_buffer(void) {
    int chosen = -1;
    uint32_t lowest = UINT32_MAX;
    for (uint32_t i = 0; i < stream.buffer_count; i++)
        if (stream.buffers[i].state == BUF_DONE && stream.buffers[i].sequence < lowest) {
            lowest = stream.buffers[i].sequence;
            chosen = (int)i;
        }
    return chosen;
}

short emu_frames_ready_locked(int fd, short events) {
    if (!stream.streaming || stream.owner != fd) return POLLERR;
    advance();
    if (emu_faults.unplugged) return POLLERR | POLLHUP;
    return done_buffer() >= 0 ? (short)(events & (POLLIN | POLLRDNORM)) : 0;
}

// Blocks (with emu_lock released while it sleeps) unless the descriptor is non-blocking.
int emu_dqbuf(emu_fd *entry, unsigned long request, void *arg) {
    (void)request;
    struct v4l2_buffer *b = arg;
    if (stream.owner != entry->fd - 1 || !stream.streaming) return EINVAL;
    for (;;) {
        advance();
        if (emu_faults.unplugged) return ENODEV;
        int index = done_buffer();
        if (index >= 0) {
            stream.buffers[index].state = BUF_USER;
            fill_buffer_info(b, (uint32_t)index);
            b->index = (uint32_t)index;
            return 0;
        }
        if (entry->nonblocking) return EAGAIN;
        pthread_mutex_unlock(&emu_lock);
        usleep(2000);
        pthread_mutex_lock(&emu_lock);
        if (!stream.streaming) return EINVAL;
    }
}

int emu_streamon(emu_fd *entry, unsigned long request, void *arg) {
    (void)request, (void)arg;
    if (stream.owner != entry->fd - 1 || stream.buffer_count == 0) return EINVAL;
    if (stream.streaming) return 0;
    int mode = stream.mode;
    if (stream.image_count[mode] == 0)
        stream.image_count[mode] = emu_render_frames(&modes[mode], getenv("V4L2_EMULATOR_IMAGES"),
                                                     stream.images[mode], stream.image_lengths[mode], MAX_IMAGES);
    stream.streaming = 1;
    stream.stream_start_ns = emu_now_ns();
    stream.next_slot = 0;
    stream.frames_delivered = 0;
    return 0;
}

int emu_streamoff(emu_fd *entry, unsigned long request, void *arg) {
    (void)request, (void)arg;
    if (stream.owner != entry->fd - 1) return EINVAL;
    stop_streaming();
    return 0;
}
