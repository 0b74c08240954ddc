// The device model: two nodes, the descriptors open on them, the faults of the control file, and
// the ioctl dispatch table that hands each request to frames.c or controls.c.
//
// Faults are read from a control file at every open: $V4L2_EMULATOR_CONTROL, or
// /tmp/v4l2-emulator-<pid>.control. Lines:
//   busy             open fails with EBUSY
//   eacces           open and access() fail with EACCES
//   unplug-after N   after N frames the device disappears: DQBUF/QBUF/ioctls fail with ENODEV,
//                    poll reports POLLERR|POLLHUP, opens fail with ENOENT until the line goes
//   slow MS          every frame arrives MS milliseconds apart, whatever the interval
//   max-fps N        S_PARM grants at most N fps (the fastest listed rate not above N), as a
//                    camera short of USB bandwidth does: the driver adjusts what was asked
//   busy-streaming   open succeeds but S_FMT and REQBUFS fail with EBUSY, as uvcvideo answers
//                    while another program streams from the camera
//   extra-controls   the camera also has do_white_balance, auto_focus_start, an LED (flash and
//                    torch: flash_led_mode) and a flash strobe button (flash_strobe)
//   control-log      every control write that succeeds is appended to "<control file>.log" as
//                    "<CLOCK_MONOTONIC µs> <id, hex> <value>" (buttons log 1), so tests can see what
//                    a capture did to the camera and when, on the clock of the frames' timestamps;
//                    a region of interest logs "<left>,<top>,<width>,<height>" as its value
//   no-roi           the camera has no UVC region of interest (region_of_interest_rectangle and
//                    region_of_interest_auto_ctrls are absent), as a UVC 1.1 camera or an older kernel
#include "emulator_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAX_FDS 64
#define EMU_MAJOR 81
#define EMU_MINOR_BASE 200

pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;
emu_device_faults emu_faults = {.unplug_after = -1};
static int initialised;

static emu_fd fds[MAX_FDS];
static pthread_mutex_t fds_lock = PTHREAD_MUTEX_INITIALIZER;

// Settings start at the first open or ioctl and then persist across opens, like a driver's.
static void init_locked(void) {
    if (initialised) return;
    initialised = 1;
    emu_frames_init_locked();
    emu_controls_init_locked();
}

int emu_node_for_path(const char *path) {
    if (!path || !emu_preloaded()) return -1;
    if (strcmp(path, EMU_NODE_CAPTURE_PATH) == 0) return EMU_NODE_CAPTURE;
    if (strcmp(path, EMU_NODE_META_PATH) == 0) return EMU_NODE_META;
    return -1;
}

emu_fd *emu_lookup(int fd) {
    if (fd < 0 || !emu_preloaded()) return NULL;
    emu_fd *found = NULL;
    pthread_mutex_lock(&fds_lock);
    for (int i = 0; i < MAX_FDS; i++)
        if (fds[i].fd == fd + 1) { found = &fds[i]; break; }
    pthread_mutex_unlock(&fds_lock);
    return found;
}

int emu_node_of_fd(int fd) {
    emu_fd *entry = emu_lookup(fd);
    return entry ? entry->node : -1;
}

// MARK: faults

typedef struct {
    int busy, eacces, unplug_after, slow_ms, extras, log_controls, max_fps, busy_streaming, no_roi;
} control_file;

void emu_control_file_path(char *path, size_t size) {
    const char *configured = getenv("V4L2_EMULATOR_CONTROL");
    if (configured) snprintf(path, size, "%s", configured);
    else snprintf(path, size, "/tmp/v4l2-emulator-%d.control", (int)getpid());
}

static control_file read_control_file(void) {
    control_file f = {0, 0, -1, 0, 0, 0, 0, 0, 0};
    char path[256];
    emu_control_file_path(path, sizeof path);
    int fd = emu_real_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return f;
    char text[512];
    ssize_t n = read(fd, text, sizeof text - 1);
    emu_real_close(fd);
    if (n <= 0) return f;
    text[n] = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int value;
        if (strcmp(line, "busy") == 0) f.busy = 1;
        else if (strcmp(line, "eacces") == 0) f.eacces = 1;
        else if (strcmp(line, "extra-controls") == 0) f.extras = 1;
        else if (strcmp(line, "control-log") == 0) f.log_controls = 1;
        else if (strcmp(line, "busy-streaming") == 0) f.busy_streaming = 1;
        else if (strcmp(line, "no-roi") == 0) f.no_roi = 1;
        else if (sscanf(line, "max-fps %d", &value) == 1) f.max_fps = value;
        else if (sscanf(line, "unplug-after %d", &value) == 1) f.unplug_after = value;
        else if (sscanf(line, "slow %d", &value) == 1) f.slow_ms = value;
    }
    return f;
}

// MARK: open, close, access, poll

int emu_open(const char *path, int flags) {
    int node = emu_node_for_path(path);
    control_file f = read_control_file();
    pthread_mutex_lock(&emu_lock);
    init_locked();
    if (emu_faults.unplugged && f.unplug_after < 0) emu_faults.unplugged = 0; // plugged back in
    int gone = emu_faults.unplugged;
    emu_faults.unplug_after = f.unplug_after;
    emu_faults.slow_ms = (uint32_t)f.slow_ms;
    emu_faults.extras = f.extras;
    emu_faults.log_controls = f.log_controls;
    emu_faults.max_fps = f.max_fps > 0 ? (uint32_t)f.max_fps : 0;
    emu_faults.busy_streaming = f.busy_streaming;
    emu_faults.no_roi = f.no_roi;
    pthread_mutex_unlock(&emu_lock);
    if (gone) return emu_fail(ENOENT);
    if (f.eacces) return emu_fail(EACCES);
    if (f.busy) return emu_fail(EBUSY);
    int fd = memfd_create(node == EMU_NODE_CAPTURE ? "video-emulated0" : "video-emulated1",
                          (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
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
        emu_real_close(fd);
        return emu_fail(EMFILE);
    }
    return fd;
}

int emu_close(emu_fd *entry) {
    int fd = entry->fd - 1;
    pthread_mutex_lock(&emu_lock);
    emu_frames_release_locked(fd);
    pthread_mutex_unlock(&emu_lock);
    pthread_mutex_lock(&fds_lock);
    entry->fd = 0;
    pthread_mutex_unlock(&fds_lock);
    return emu_real_close(fd);
}

int emu_access(const char *path, int mode) {
    (void)path;
    control_file f = read_control_file();
    pthread_mutex_lock(&emu_lock);
    int gone = emu_faults.unplugged && f.unplug_after >= 0;
    pthread_mutex_unlock(&emu_lock);
    if (gone) return emu_fail(ENOENT);
    if (f.eacces && (mode & (R_OK | W_OK))) return emu_fail(EACCES);
    return 0;
}

short emu_revents(emu_fd *entry, short events) {
    if (entry->node != EMU_NODE_CAPTURE) return POLLERR;
    pthread_mutex_lock(&emu_lock);
    short revents = emu_faults.unplugged ? POLLERR | POLLHUP : emu_frames_ready_locked(entry->fd - 1, events);
    pthread_mutex_unlock(&emu_lock);
    return revents;
}

// MARK: ioctl

static void fill_capability(struct v4l2_capability *cap, const char *card, uint32_t device_caps, uint32_t other_caps) {
    memset(cap, 0, sizeof *cap);
    snprintf((char *)cap->driver, sizeof cap->driver, "v4l2-emulator");
    snprintf((char *)cap->card, sizeof cap->card, "%s", card);
    snprintf((char *)cap->bus_info, sizeof cap->bus_info, "platform:v4l2-emulator-0");
    cap->version = 0x060100;
    cap->device_caps = device_caps;
    cap->capabilities = device_caps | other_caps | V4L2_CAP_DEVICE_CAPS;
}

static int querycap(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    fill_capability(arg, "Emulated Camera", V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING | V4L2_CAP_EXT_PIX_FORMAT,
                    V4L2_CAP_META_CAPTURE);
    return 0;
}

// What the capture node answers; anything else is ENOTTY, as drivers do.
static const struct {
    unsigned long request;
    emu_handler handle;
    int when_unplugged; // still answered after an unplug, so a client can tear down
} handlers[] = {
    {VIDIOC_QUERYCAP, querycap, 0},
    {VIDIOC_ENUM_FMT, emu_enum_fmt, 0},
    {VIDIOC_ENUM_FRAMESIZES, emu_enum_framesizes, 0},
    {VIDIOC_ENUM_FRAMEINTERVALS, emu_enum_frameintervals, 0},
    {VIDIOC_G_FMT, emu_g_fmt, 0},
    {VIDIOC_TRY_FMT, emu_s_fmt, 0},
    {VIDIOC_S_FMT, emu_s_fmt, 0},
    {VIDIOC_G_PARM, emu_parm, 0},
    {VIDIOC_S_PARM, emu_parm, 0},
    {VIDIOC_REQBUFS, emu_reqbufs, 1},
    {VIDIOC_QUERYBUF, emu_querybuf, 0},
    {VIDIOC_QBUF, emu_qbuf, 0},
    {VIDIOC_DQBUF, emu_dqbuf, 0},
    {VIDIOC_STREAMON, emu_streamon, 0},
    {VIDIOC_STREAMOFF, emu_streamoff, 1},
    {VIDIOC_QUERYCTRL, emu_queryctrl, 0},
    {VIDIOC_QUERY_EXT_CTRL, emu_query_ext_ctrl, 0},
    {VIDIOC_QUERYMENU, emu_querymenu, 0},
    {VIDIOC_G_CTRL, emu_g_ctrl, 0},
    {VIDIOC_S_CTRL, emu_s_ctrl, 0},
    {VIDIOC_G_EXT_CTRLS, emu_ext_ctrls, 0},
    {VIDIOC_S_EXT_CTRLS, emu_ext_ctrls, 0},
    {VIDIOC_TRY_EXT_CTRLS, emu_ext_ctrls, 0},
};
#define HANDLER_COUNT (sizeof(handlers) / sizeof(handlers[0]))

int emu_ioctl(emu_fd *entry, unsigned long request, void *arg) {
    // The metadata node (as UVC cameras expose) only says what it is, so discovery can skip it.
    if (entry->node == EMU_NODE_META) {
        if (request != VIDIOC_QUERYCAP) return emu_fail(ENOTTY);
        fill_capability(arg, "Emulated Camera: Metadata", V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING,
                        V4L2_CAP_VIDEO_CAPTURE);
        return 0;
    }
    int found = -1;
    for (size_t i = 0; i < HANDLER_COUNT; i++)
        if (handlers[i].request == request) { found = (int)i; break; }
    pthread_mutex_lock(&emu_lock);
    init_locked();
    int error;
    if (emu_faults.unplugged && !(found >= 0 && handlers[found].when_unplugged)) error = ENODEV;
    else if (found < 0) error = ENOTTY;
    else error = handlers[found].handle(entry, request, arg);
    pthread_mutex_unlock(&emu_lock);
    return error ? emu_fail(error) : 0;
}

// MARK: character-device identity

int emu_uevent_node(const char *path) {
    if (!path || !emu_preloaded()) return -1;
    for (int node = 0; node < EMU_NODE_COUNT; node++) {
        char expected[64];
        snprintf(expected, sizeof expected, "/sys/dev/char/%d:%d/uevent", EMU_MAJOR, EMU_MINOR_BASE + node);
        if (strcmp(path, expected) == 0) return node;
    }
    return -1;
}

int emu_open_uevent(int node) {
    int fd = memfd_create("v4l2-emulator-uevent", MFD_CLOEXEC);
    if (fd < 0) return -1;
    char text[128];
    // Tools take the kind of node from DEVNAME's prefix followed by a digit ("video200").
    int n = snprintf(text, sizeof text, "MAJOR=%d\nMINOR=%d\nDEVNAME=video%d\n", EMU_MAJOR, EMU_MINOR_BASE + node,
                     EMU_MINOR_BASE + node);
    if (write(fd, text, (size_t)n) != n) {
        emu_real_close(fd);
        return -1;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

void emu_fill_node_stat(struct stat *st, int node) {
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFCHR | 0660;
    st->st_rdev = makedev(EMU_MAJOR, EMU_MINOR_BASE + node);
    st->st_nlink = 1;
    st->st_blksize = 4096;
}
