// An emulated V4L2 camera, loaded with LD_PRELOAD, so the real V4L2 backend (libv4l2 and the
// kernel ioctl interface) runs unchanged without hardware. This file holds the libc entry points
// it interposes; emulator_internal.h lists the other files and their jobs.
//
// It presents /dev/video-emulated0 (a UVC-like webcam: YUYV and MJPEG at 640x480 and 1280x720,
// discrete frame intervals, camera controls with auto modes) and /dev/video-emulated1 (a
// metadata-only node, as UVC cameras expose, which discovery must skip). Calls on any other
// path or descriptor pass straight through to libc, and so does everything when the library is
// linked rather than preloaded.
//
// What it interposes: open/open64/openat/openat64/__open_2/__open64_2, close, ioctl, poll,
// access, select, the stat family (the nodes are character devices 81:200 and 81:201, as tools such as
// v4l2-ctl check), fopen for the sysfs uevent file of those numbers, and syscall() (libv4l2 issues
// raw SYS_openat/SYS_ioctl/SYS_close/SYS_mmap syscalls).
// An emulated descriptor is a real memfd, so fstat, mmap and munmap work on it unmodified:
// buffers live in the memfd at the offsets QUERYBUF reports, and the emulator writes frames
// into its own mapping of the same memory.
//
// ioctls (device.c's table): QUERYCAP, ENUM_FMT/FRAMESIZES/FRAMEINTERVALS, G/S/TRY_FMT, G/S_PARM,
// REQBUFS, QUERYBUF, QBUF, DQBUF, STREAMON/OFF, QUERYCTRL, QUERY_EXT_CTRL, QUERYMENU, G/S_CTRL and
// G/S/TRY_EXT_CTRLS; anything else fails with ENOTTY, as drivers do. `v4l2-ctl --all
// --list-formats-ext` and `v4l2-ctl --stream-mmap` work against it.
//
// Frames come from the JPEG files in $V4L2_EMULATOR_IMAGES (images.c, frames.c); faults from a
// control file (device.c).
#include "emulator_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "v4l2_emulator.h"

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

// MARK: preloaded, or linked by mistake

// Linked as an ordinary dependency, these hooks would still replace libc's open, ioctl, stat and
// the rest for the whole process: the emulator only acts when LD_PRELOAD names its file.
static pthread_once_t preload_once = PTHREAD_ONCE_INIT;
static int preloaded;

static const char *base_name(const char *path, size_t length) {
    const char *slash = memrchr(path, '/', length);
    return slash ? slash + 1 : path;
}

static void check_preloaded(void) {
    Dl_info self;
    const char *list = getenv("LD_PRELOAD");
    if (!list || !dladdr((void *)check_preloaded, &self) || !self.dli_fname) return;
    const char *own = base_name(self.dli_fname, strlen(self.dli_fname));
    // ld.so separates LD_PRELOAD entries with spaces or colons.
    for (const char *entry = list; *entry;) {
        size_t length = strcspn(entry, " :");
        const char *name = base_name(entry, length);
        size_t name_length = length - (size_t)(name - entry);
        if (name_length > 0 && name_length == strlen(own) && memcmp(name, own, name_length) == 0) preloaded = 1;
        entry += length;
        if (*entry) entry++;
    }
}

int emu_preloaded(void) {
    pthread_once(&preload_once, check_preloaded);
    return preloaded;
}

int emu_real_open(const char *path, int flags, mode_t mode) { return REAL(open)(path, flags, mode); }

int emu_real_close(int fd) { return REAL(close)(fd); }

int emu_fail(int error) {
    errno = error;
    return -1;
}

uint64_t emu_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// MARK: character-device identity

int stat(const char *path, struct stat *st) {
    int node = emu_node_for_path(path);
    if (node >= 0) {
        if (access(path, F_OK) != 0) return -1;
        emu_fill_node_stat(st, node);
        return 0;
    }
    return REAL(stat)(path, st);
}

int lstat(const char *path, struct stat *st) {
    int node = emu_node_for_path(path);
    if (node >= 0) return stat(path, st);
    return REAL(lstat)(path, st);
}

int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
    int node = emu_node_for_path(path);
    if (node >= 0) return stat(path, st);
    if (path[0] == 0 && (flags & AT_EMPTY_PATH) && (node = emu_node_of_fd(dirfd)) >= 0) {
        emu_fill_node_stat(st, node);
        return 0;
    }
    return REAL(fstatat)(dirfd, path, st, flags);
}

int fstat(int fd, struct stat *st) {
    int node = emu_node_of_fd(fd);
    if (node >= 0) {
        emu_fill_node_stat(st, node);
        return 0;
    }
    return REAL(fstat)(fd, st);
}

// v4l2-ctl reads the uevent file with fopen, which opens inside libc without the open hook.
FILE *fopen(const char *path, const char *mode) {
    static FILE *(*real_fopen)(const char *, const char *);
    if (!real_fopen) real_fopen = dlsym(RTLD_NEXT, "fopen");
    int node = emu_uevent_node(path);
    if (node >= 0) {
        int fd = emu_open_uevent(node);
        return fd < 0 ? NULL : fdopen(fd, "r");
    }
    return real_fopen(path, mode);
}

FILE *fopen64(const char *path, const char *mode) { return fopen(path, mode); }

// On x86-64 `struct stat64` and `struct stat` have the same layout.
int stat64(const char *path, struct stat64 *st) {
    if (emu_node_for_path(path) >= 0) return stat(path, (struct stat *)st);
    return REAL(stat64)(path, st);
}

int fstat64(int fd, struct stat64 *st) {
    if (emu_node_of_fd(fd) >= 0) return fstat(fd, (struct stat *)st);
    return REAL(fstat64)(fd, st);
}

// MARK: open, close, ioctl, access, poll, select and syscall

static int open_mode(int flags, va_list args) { return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, int) : 0; }

// Whether `path` is one of the emulator's: a camera node or its sysfs uevent file. Then `*fd`
// holds the emulator's answer and every open variant returns it instead of calling libc.
static bool open_emulated(const char *path, int flags, int *fd) {
    if (emu_node_for_path(path) >= 0) {
        *fd = emu_open(path, flags);
        return true;
    }
    int uevent = emu_uevent_node(path);
    if (uevent >= 0) {
        *fd = emu_open_uevent(uevent);
        return true;
    }
    return false;
}

int open(const char *path, int flags, ...) {
    int fd;
    if (open_emulated(path, flags, &fd)) return fd;
    va_list args;
    va_start(args, flags);
    int mode = open_mode(flags, args);
    va_end(args);
    return REAL(open)(path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    int fd;
    if (open_emulated(path, flags, &fd)) return fd;
    va_list args;
    va_start(args, flags);
    int mode = open_mode(flags, args);
    va_end(args);
    return REAL(open64)(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    int fd;
    if (open_emulated(path, flags, &fd)) return fd;
    va_list args;
    va_start(args, flags);
    int mode = open_mode(flags, args);
    va_end(args);
    return REAL(openat)(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    int fd;
    if (open_emulated(path, flags, &fd)) return fd;
    va_list args;
    va_start(args, flags);
    int mode = open_mode(flags, args);
    va_end(args);
    return REAL(openat64)(dirfd, path, flags, mode);
}

int __open_2(const char *path, int flags) {
    int fd;
    if (open_emulated(path, flags, &fd)) return fd;
    return REAL(__open_2)(path, flags);
}

int __open64_2(const char *path, int flags) {
    int fd;
    if (open_emulated(path, flags, &fd)) return fd;
    return REAL(__open64_2)(path, flags);
}

int close(int fd) {
    emu_fd *entry = emu_lookup(fd);
    if (entry) return emu_close(entry);
    return REAL(close)(fd);
}

int ioctl(int fd, unsigned long request, ...) {
    va_list args;
    va_start(args, request);
    void *arg = va_arg(args, void *);
    va_end(args);
    emu_fd *entry = emu_lookup(fd);
    if (entry) return emu_ioctl(entry, request, arg);
    return REAL(ioctl)(fd, request, arg);
}

int access(const char *path, int mode) {
    if (emu_node_for_path(path) >= 0) return emu_access(path, mode);
    return REAL(access)(path, mode);
}

int poll(struct pollfd *pfds, nfds_t count, int timeout) {
    int any = 0;
    for (nfds_t i = 0; i < count; i++)
        if (emu_lookup(pfds[i].fd)) any = 1;
    if (!any) return REAL(poll)(pfds, count, timeout);
    uint64_t deadline = timeout < 0 ? UINT64_MAX : emu_now_ns() + (uint64_t)timeout * 1000000ull;
    int saved[count > 0 ? count : 1];
    for (;;) {
        int ready = 0;
        for (nfds_t i = 0; i < count; i++) {
            saved[i] = pfds[i].fd;
            emu_fd *entry = emu_lookup(pfds[i].fd);
            if (entry) {
                pfds[i].revents = emu_revents(entry, pfds[i].events);
                pfds[i].fd = -1; // the real poll skips it
            }
        }
        int real = REAL(poll)(pfds, count, 0);
        for (nfds_t i = 0; i < count; i++) {
            if (pfds[i].fd == -1 && saved[i] != -1) {
                emu_fd *entry = emu_lookup(saved[i]);
                pfds[i].fd = saved[i];
                if (entry) pfds[i].revents = emu_revents(entry, pfds[i].events);
            }
            if (pfds[i].revents) ready++;
        }
        if (real < 0) return real;
        if (ready > 0) return ready;
        uint64_t now = emu_now_ns();
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
        if (readfds && FD_ISSET(fd, readfds) && emu_lookup(fd)) any = 1;
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
        if (emu_node_for_path((const char *)a[1]) >= 0) return emu_open((const char *)a[1], (int)a[2]);
        break;
    case SYS_open:
        if (emu_node_for_path((const char *)a[0]) >= 0) return emu_open((const char *)a[0], (int)a[1]);
        break;
    case SYS_close: {
        emu_fd *entry = emu_lookup((int)a[0]);
        if (entry) return emu_close(entry);
        break;
    }
    case SYS_ioctl: {
        emu_fd *entry = emu_lookup((int)a[0]);
        if (entry) return emu_ioctl(entry, (unsigned long)a[1], (void *)a[2]);
        break;
    }
    default:
        break;
    }
    return REAL(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
