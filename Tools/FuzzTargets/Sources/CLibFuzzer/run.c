#include "CLibFuzzer.h"

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

// The runtime's own `main` is linked in too and needs this symbol, though SwiftPM's `main` is
// the one that runs; both routes reach the same test function.
static int (*current_test)(const uint8_t *, size_t);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return current_test(data, size); }

int cfuzz_run(int *argc, char ***argv, int (*test)(const uint8_t *data, size_t size)) {
    current_test = test;
    return LLVMFuzzerRunDriver(argc, argv, LLVMFuzzerTestOneInput);
}
