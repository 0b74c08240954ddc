// What malloc holds, for the soak's memory trend (glibc's mallinfo2, which Swift's Glibc
// module does not declare). Bench tooling only; not part of CaptureKit.
#pragma once
#include <stddef.h>

typedef struct {
    size_t in_use;  // bytes handed out and not yet freed (uordblks + hblkhd)
    size_t held;    // bytes taken from the system: all arenas plus mmapped chunks (arena + hblkhd)
} bench_heap_sample;

// mallinfo2(), summed by glibc over every arena; locks each arena briefly.
bench_heap_sample bench_heap_take(void);
