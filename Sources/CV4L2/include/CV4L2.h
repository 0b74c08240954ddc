// CV4L2: what Swift cannot import from <linux/videodev2.h> and libv4l2.
//
// Only these kinds of thing live here, all without logic:
//  - the VIDIOC_* request codes, which are function-like macros (_IOWR(...)) in the kernel
//    header and therefore invisible to Swift, re-exported as constants;
//  - kernel ABI constants newer than the system headers (the UVC region of interest), defined
//    when the headers lack them and re-exported under a CV4L2_ prefix;
//  - fixed-arity wrappers for variadic calls (v4l2_ioctl), which Swift cannot call.
// Every decision (retries, errors, buffer counts) is made in CaptureKit.
#ifndef CV4L2_H
#define CV4L2_H

#include <linux/videodev2.h>
#include <linux/uvcvideo.h>
#include <libv4l2.h>
#include <sys/mman.h>
#include <poll.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

static const unsigned long CV4L2_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long CV4L2_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long CV4L2_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long CV4L2_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long CV4L2_VIDIOC_TRY_FMT = VIDIOC_TRY_FMT;
static const unsigned long CV4L2_VIDIOC_G_PARM = VIDIOC_G_PARM;
static const unsigned long CV4L2_VIDIOC_S_PARM = VIDIOC_S_PARM;
static const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
static const unsigned long CV4L2_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long CV4L2_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long CV4L2_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long CV4L2_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long CV4L2_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long CV4L2_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
static const unsigned long CV4L2_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
static const unsigned long CV4L2_VIDIOC_QUERY_EXT_CTRL = VIDIOC_QUERY_EXT_CTRL;
static const unsigned long CV4L2_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;
static const unsigned long CV4L2_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
static const unsigned long CV4L2_VIDIOC_S_CTRL = VIDIOC_S_CTRL;
static const unsigned long CV4L2_VIDIOC_G_EXT_CTRLS = VIDIOC_G_EXT_CTRLS;
static const unsigned long CV4L2_VIDIOC_S_EXT_CTRLS = VIDIOC_S_EXT_CTRLS;

// UVC 1.5 region of interest, as uvcvideo exposes it since Linux 6.15 (include/uapi/linux/
// uvcvideo.h, v4l2-controls.h, videodev2.h). Older headers (Debian 12 ships 6.1) lack these, so
// they are defined here when missing; the values are the kernel's ABI and cannot change.
#ifndef V4L2_CID_USER_UVC_BASE
#define V4L2_CID_USER_UVC_BASE (V4L2_CID_USER_BASE + 0x11e0)
#endif
#ifndef V4L2_CID_UVC_REGION_OF_INTEREST_RECT
#define V4L2_CID_UVC_REGION_OF_INTEREST_RECT (V4L2_CID_USER_UVC_BASE + 1)
#endif
#ifndef V4L2_CID_UVC_REGION_OF_INTEREST_AUTO
#define V4L2_CID_UVC_REGION_OF_INTEREST_AUTO (V4L2_CID_USER_UVC_BASE + 2)
#endif
#ifndef V4L2_UVC_REGION_OF_INTEREST_AUTO_EXPOSURE
#define V4L2_UVC_REGION_OF_INTEREST_AUTO_EXPOSURE (1 << 0)
#endif
#ifndef V4L2_UVC_REGION_OF_INTEREST_AUTO_FOCUS
#define V4L2_UVC_REGION_OF_INTEREST_AUTO_FOCUS (1 << 3)
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
static const uint32_t CV4L2_CID_UVC_REGION_OF_INTEREST_RECT = V4L2_CID_UVC_REGION_OF_INTEREST_RECT;
static const uint32_t CV4L2_CID_UVC_REGION_OF_INTEREST_AUTO = V4L2_CID_UVC_REGION_OF_INTEREST_AUTO;
static const uint32_t CV4L2_UVC_REGION_OF_INTEREST_AUTO_EXPOSURE = V4L2_UVC_REGION_OF_INTEREST_AUTO_EXPOSURE;
static const uint32_t CV4L2_UVC_REGION_OF_INTEREST_AUTO_FOCUS = V4L2_UVC_REGION_OF_INTEREST_AUTO_FOCUS;
static const uint32_t CV4L2_CTRL_WHICH_CUR_VAL = V4L2_CTRL_WHICH_CUR_VAL;
static const uint32_t CV4L2_CTRL_WHICH_MIN_VAL = V4L2_CTRL_WHICH_MIN_VAL;
static const uint32_t CV4L2_CTRL_WHICH_MAX_VAL = V4L2_CTRL_WHICH_MAX_VAL;
static const uint32_t CV4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX = V4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX;
static const uint32_t CV4L2_CTRL_FLAG_NEXT_COMPOUND = V4L2_CTRL_FLAG_NEXT_COMPOUND;
// An enum member in newer headers (so no #ifndef can see it): only the prefixed name here.
static const uint32_t CV4L2_CTRL_TYPE_RECT = 0x0107;

/// The corresponding C function is `v4l2_ioctl` from libv4l2 (variadic).
int cv4l2_v4l2_ioctl(int fd, unsigned long request, void *argument);

/// The corresponding C function is `v4l2_fd_open` with `V4L2_DISABLE_CONVERSION`: libv4l2
/// takes the descriptor but passes formats through untouched (CaptureKit decodes itself).
static inline int cv4l2_v4l2_fd_open_passthrough(int fd) { return v4l2_fd_open(fd, V4L2_DISABLE_CONVERSION); }

#ifdef __cplusplus
}
#endif
#endif
