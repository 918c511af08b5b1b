/*
 * fuzz_mod.c - libFuzzer target for the mod front end: any byte string goes through parse and, when
 * it parses, through every back end (hash, trainable marking, CUDA emission, CPU evaluation of the
 * value and both derivatives) via tests/mod/mod_exercise.h. Built with -DFA4JIT_FUZZ=ON under
 * clang with -fsanitize=fuzzer,address,undefined (cmake/mod.cmake); corpus in fuzz/mod/corpus.
 */
#include <stddef.h>
#include <stdint.h>

#include "mod/mod_exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = size;
    for (size_t i = 0; i < size && i < 16; i++)
        seed = seed * 131 + data[i];
    if (mx_exercise((const char *)data, size, seed) != 0)
        __builtin_trap(); /* a broken invariant is a finding, like a crash */
    return 0;
}
