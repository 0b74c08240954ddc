// Runs libFuzzer from a target that has its own `main` (every Swift executable does).
#ifndef CLIBFUZZER_H
#define CLIBFUZZER_H
#include <stddef.h>
#include <stdint.h>

/// Parses libFuzzer's flags from `argc`/`argv` and runs `test` on each input
/// (`LLVMFuzzerRunDriver`, in the runtime that `-sanitize=fuzzer` links).
int cfuzz_run(int *argc, char ***argv, int (*test)(const uint8_t *data, size_t size));
#endif
