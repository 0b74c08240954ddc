// CV4L2: what Swift cannot import from <linux/videodev2.h> and libv4l2.
//
// Only two kinds of thing live here, both without logic:
//  - the VIDIOC_* request codes, which are function-like macros (_IOWR(...)) in the kernel
//    header and therefore invisible to Swift, re-exported as constants;
//  - fixed-arity wrappers for variadic calls (v4l2_ioctl), which Swift cannot call.
// Every decision (retries, errors, buffer counts) is made in CaptureKit.
#ifndef CV4L2_H
#define CV4L2_H

#include <linux/videodev2.h>
#include <libv4l2.h>
#include <sys/mman.h>
#include <poll.h>

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

/// The corresponding C function is `v4l2_ioctl` from libv4l2 (variadic).
int cv4l2_v4l2_ioctl(int fd, unsigned long request, void *argument);

/// The corresponding C function is `v4l2_fd_open` with `V4L2_DISABLE_CONVERSION`: libv4l2
/// takes the descriptor but passes formats through untouched (CaptureKit decodes itself).
static inline int cv4l2_v4l2_fd_open_passthrough(int fd) { return v4l2_fd_open(fd, V4L2_DISABLE_CONVERSION); }

#ifdef __cplusplus
}
#endif
#endif
