#include <libv4l2.h>
