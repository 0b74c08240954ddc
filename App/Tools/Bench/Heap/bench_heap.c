#include "bench_heap.h"
#include <malloc.h>

bench_heap_sample bench_heap_take(void) {
    struct mallinfo2 m = mallinfo2();
    bench_heap_sample s = {m.uordblks + m.hblkhd, m.arena + m.hblkhd};
    return s;
}
