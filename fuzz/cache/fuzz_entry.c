/*
 * fuzz_entry.c - libFuzzer target for the cache entry reader (CACHE.md T13). Every input is fed
 * to fa4__entry_decode with and without an HMAC key; an accepted entry must describe only bytes
 * inside the input. Seeds: the .fa4 files in tests/cache/golden. Build with -DFA4JIT_FUZZ=ON and clang.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *buf, size_t n, const fa4__entry_view *v)
{
    for (int i = 0; i < v->num_blobs; i++) {
        if (v->blobs[i].data < buf || v->blobs[i].data + v->blobs[i].size > buf + n ||
            strnlen(v->blobs[i].name, sizeof v->blobs[i].name) >= sizeof v->blobs[i].name)
            abort(); /* the fuzzer reports this input */
    }
    if ((const uint8_t *)v->key_inputs < buf ||
        (const uint8_t *)v->key_inputs + v->key_inputs_len > buf + n)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so that ASan catches a read one past the end */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    static const uint8_t key[] = "fa4jit golden team key";
    const fa4__entry_auth auths[3] = {{NULL, 0, 0}, {key, sizeof key - 1, 0}, {key, sizeof key - 1, 1}};
    for (int a = 0; a < 3; a++) {
        fa4__entry_view v;
        if (fa4__entry_decode(buf, size, &auths[a], &v) == FA4__ENTRY_OK)
            check(buf, size, &v);
    }
    free(buf);
    return 0;
}
