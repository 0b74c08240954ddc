// The emulated V4L2 camera (see interpose.c). Load it with LD_PRELOAD; tests look up
// `v4l2_emulator_loaded` with dlsym to know whether it is present.
#ifndef V4L2_EMULATOR_H
#define V4L2_EMULATOR_H

/// Returns 1. Exists so a process can tell that the emulator is loaded.
int v4l2_emulator_loaded(void);

#endif
