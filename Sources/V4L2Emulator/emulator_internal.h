// What the emulator's files share (see interpose.c for the overview). Everything declared here
// is hidden: a preloaded process sees only the interposed libc symbols and v4l2_emulator_loaded,
// so no helper name can collide with one of the program's own.
//
//   interpose.c  the libc entry points, and the real ones behind them
//   device.c     the two nodes, open descriptors, faults, and the ioctl dispatch table
//   frames.c     modes and formats, negotiation, buffers and the frame clock
//   images.c     pixels: fixture JPEGs or colour bars, encoded as YUYV or MJPEG
//   controls.c   the control table and the control ioctls
#ifndef EMULATOR_INTERNAL_H
#define EMULATOR_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/uvcvideo.h>
#include <linux/videodev2.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>

#pragma GCC visibility push(hidden)

// The UVC 1.5 region of interest as uvcvideo presents it (Linux 6.15), for headers older than
// that (Sources/CV4L2/include/CV4L2.h defines the same ABI values for CaptureKit).
#ifndef V4L2_CID_USER_UVC_BASE
#define V4L2_CID_USER_UVC_BASE (V4L2_CID_USER_BASE + 0x11e0)
#endif
#ifndef V4L2_CID_UVC_REGION_OF_INTEREST_RECT
#define V4L2_CID_UVC_REGION_OF_INTEREST_RECT (V4L2_CID_USER_UVC_BASE + 1)
#endif
#ifndef V4L2_CID_UVC_REGION_OF_INTEREST_AUTO
#define V4L2_CID_UVC_REGION_OF_INTEREST_AUTO (V4L2_CID_USER_UVC_BASE + 2)
#endif
#ifndef V4L2_CTRL_WHICH_MIN_VAL
#define V4L2_CTRL_WHICH_MIN_VAL 0x0f020000
#endif
#ifndef V4L2_CTRL_WHICH_MAX_VAL
#define V4L2_CTRL_WHICH_MAX_VAL 0x0f030000
#endif
#ifndef V4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX
#define V4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX 0x1000
#endif
#define EMU_CTRL_TYPE_RECT 0x0107 // V4L2_CTRL_TYPE_RECT, an enum member in newer headers

#define EMU_NODE_CAPTURE_PATH "/dev/video-emulated0"
#define EMU_NODE_META_PATH "/dev/video-emulated1"
enum { EMU_NODE_CAPTURE = 0, EMU_NODE_META = 1, EMU_NODE_COUNT = 2 };

// MARK: interpose.c

// libc's own open and close, for the emulator's files (control file, log) and its memfds.
int emu_real_open(const char *path, int flags, mode_t mode);
int emu_real_close(int fd);

// 1 when LD_PRELOAD names this library; otherwise no path or descriptor is emulated.
int emu_preloaded(void);

// Sets errno and returns -1, the libc convention the hooks answer with.
int emu_fail(int error);
uint64_t emu_now_ns(void);

// MARK: device.c

// An open emulated descriptor (a memfd, so fstat/mmap/munmap work on it unmodified).
typedef struct {
    int fd; // the descriptor + 1, so a zeroed slot is free
    int node;
    int nonblocking;
} emu_fd;

// The faults the control file asked for at the last open, and whether the camera is gone.
typedef struct {
    int unplug_after; // frames before the unplug, -1: none
    int unplugged;
    int extras;       // the optional controls are present
    uint32_t slow_ms; // 0: frames follow the frame rate
    int log_controls; // append control writes to "<control file>.log"
    uint32_t max_fps; // 0: any listed rate; else S_PARM grants at most this
    int busy_streaming; // S_FMT and REQBUFS fail with EBUSY (another program streams)
    int no_roi;       // the camera lacks the UVC region of interest (an older camera or kernel)
} emu_device_faults;

// The one lock of the device model: the faults, the format, buffers, streaming and control values
// are read and written with it held (as a driver serialises its ioctls).
extern pthread_mutex_t emu_lock;
extern emu_device_faults emu_faults;

int emu_node_for_path(const char *path); // EMU_NODE_* or -1
emu_fd *emu_lookup(int fd);              // NULL when fd is not emulated
int emu_node_of_fd(int fd);              // EMU_NODE_* or -1
int emu_open(const char *path, int flags);
int emu_close(emu_fd *entry);
int emu_access(const char *path, int mode);
int emu_ioctl(emu_fd *entry, unsigned long request, void *arg);
short emu_revents(emu_fd *entry, short events);
void emu_control_file_path(char *path, size_t size);

// Character-device identity: the nodes are 81:200 and 81:201, as tools such as v4l2-ctl check.
int emu_uevent_node(const char *path); // the node whose sysfs uevent file this is, or -1
int emu_open_uevent(int node);
void emu_fill_node_stat(struct stat *st, int node);

// An ioctl handler: runs with emu_lock held on the capture node; returns 0 or an errno.
typedef int (*emu_handler)(emu_fd *entry, unsigned long request, void *arg);

// MARK: frames.c

void emu_frames_init_locked(void);
void emu_frames_release_locked(int fd); // the descriptor closes: its buffers go
short emu_frames_ready_locked(int fd, short events);
int emu_enum_fmt(emu_fd *, unsigned long, void *);
int emu_enum_framesizes(emu_fd *, unsigned long, void *);
int emu_enum_frameintervals(emu_fd *, unsigned long, void *);
int emu_g_fmt(emu_fd *, unsigned long, void *);
int emu_s_fmt(emu_fd *, unsigned long, void *); // and TRY_FMT
int emu_parm(emu_fd *, unsigned long, void *);  // G_PARM and S_PARM
int emu_reqbufs(emu_fd *, unsigned long, void *);
int emu_querybuf(emu_fd *, unsigned long, void *);
int emu_qbuf(emu_fd *, unsigned long, void *);
int emu_dqbuf(emu_fd *, unsigned long, void *);
int emu_streamon(emu_fd *, unsigned long, void *);
int emu_streamoff(emu_fd *, unsigned long, void *);

// MARK: images.c

// A pixel format: what ENUM_FMT says about it and how a frame is encoded into it.
typedef struct {
    uint32_t fourcc;
    const char *description;
    uint32_t flags; // V4L2_FMT_FLAG_*
    // Turns a packed RGB frame into this format's bytes (malloc'd), storing their count.
    uint8_t *(*encode)(const uint8_t *rgb, uint32_t width, uint32_t height, uint32_t *length);
} emu_format;

#define EMU_MAX_RATES 4
// A frame size in one format with its frame rates (per second, fastest first, 0 after the last).
typedef struct {
    const emu_format *format;
    uint32_t width, height;
    uint32_t fps[EMU_MAX_RATES];
} emu_mode;

uint8_t *emu_encode_yuyv(const uint8_t *rgb, uint32_t width, uint32_t height, uint32_t *length);
uint8_t *emu_encode_jpeg(const uint8_t *rgb, uint32_t width, uint32_t height, uint32_t *length);
// Renders a mode's frames from the JPEG files in `folder` (sorted by name, at most `max`), or
// one colour-bar frame when there are none. Returns how many frames it stored.
int emu_render_frames(const emu_mode *mode, const char *folder, uint8_t **frames, uint32_t *lengths, int max);

// MARK: controls.c

void emu_controls_init_locked(void);
int emu_queryctrl(emu_fd *, unsigned long, void *);
int emu_query_ext_ctrl(emu_fd *, unsigned long, void *);
int emu_querymenu(emu_fd *, unsigned long, void *);
int emu_g_ctrl(emu_fd *, unsigned long, void *);
int emu_s_ctrl(emu_fd *, unsigned long, void *);
int emu_ext_ctrls(emu_fd *, unsigned long, void *); // G, S and TRY_EXT_CTRLS

#pragma GCC visibility pop

#endif
