// The only out-of-line wrapper: v4l2_ioctl's prototype is variadic.
#include "CV4L2.h"

int cv4l2_v4l2_ioctl(int fd, unsigned long request, void *argument) { return v4l2_ioctl(fd, request, argument); }
