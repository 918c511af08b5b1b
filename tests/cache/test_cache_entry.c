/*
 * test_cache_entry.c - the entry format and its reader: round trip (T1 at the byte level),
 * truncation at every length, every byte flipped, garbage appended, empty file and tampered fields
 * with a recomputed checksum, both on bytes and through get (T3, each a miss healed by the next
 * put), huge length fields and a huge sparse file cause no large allocation (T4, malloc is wrapped
 * at link time by cmake/cache.cmake), a seeded mutation run of the reader (T13's in-every-build
 * half), and the golden entry files of every released format (T14).
 */
#include "cache_test_util.h"

#include "hash.h"

/* ---------------------------------------------------------------- allocation watch (T4) */
static size_t max_alloc;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n)
{
    if (n > max_alloc)
        max_alloc = n;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m)
{
    if (m && n <= SIZE_MAX / m && n * m > max_alloc)
        max_alloc = n * m;
    return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n)
{
    if (n > max_alloc)
        max_alloc = n;
    return __real_realloc(p, n);
}

static void put32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64le(uint8_t *p, uint64_t v)
{
    put32le(p, (uint32_t)v);
    put32le(p + 4, (uint32_t)(v >> 32));
}

/* Recompute the checksum of an unsigned entry in place (the last 16 bytes). */
static void reseal(uint8_t *b, size_t n)
{
    if (n >= 16)
        fa4__hash128(b, n - 16, b + n - 16);
}

static void encode(const test_entry *t, const uint8_t *key, size_t klen, uint8_t **buf, size_t *n)
{
    assert_int_equal(fa4__entry_encode(t->key_inputs, t->key_len, &t->e, FA4_VERSION_STRING, 1234,
                                       key, klen, buf, n),
                     0);
}

static void test_round_trip_bytes(void **state)
{
    (void)state;
    test_entry t;
    test_entry_make(&t, 1, 1000);
    uint8_t *b;
    size_t n;
    encode(&t, NULL, 0, &b, &n);
    assert_int_equal(n, fa4__entry_encoded_size(t.key_len, &t.e, FA4_VERSION_STRING, 0));
    fa4__entry_view v;
    assert_int_equal(fa4__entry_decode(b, n, NULL, &v), FA4__ENTRY_OK);
    assert_int_equal(v.key_inputs_len, t.key_len);
    assert_memory_equal(v.key_inputs, t.key_inputs, t.key_len);
    assert_int_equal(v.libver_len, strlen(FA4_VERSION_STRING));
    assert_int_equal(v.created, 1234);
    assert_false(v.is_signed);
    fa4__cache_entry got = {0};
    got.num_blobs = v.num_blobs;
    memcpy(got.blobs, v.blobs, sizeof v.blobs);
    assert_true(entry_equal(&got, &t.e));
    for (int i = 0; i < v.num_blobs; i++)
        assert_int_equal((uintptr_t)(v.blobs[i].data - b) % 16, 0); /* cubins stay aligned */
    free(b);

    /* zero blobs and an empty blob are legal */
    t.e.blobs[0].size = 0;
    encode(&t, NULL, 0, &b, &n);
    assert_int_equal(fa4__entry_decode(b, n, NULL, &v), FA4__ENTRY_OK);
    assert_int_equal(v.blobs[0].size, 0);
    free(b);
    t.e.num_blobs = 0;
    encode(&t, NULL, 0, &b, &n);
    assert_int_equal(fa4__entry_decode(b, n, NULL, &v), FA4__ENTRY_OK);
    assert_int_equal(v.num_blobs, 0);
    free(b);
    test_entry_free(&t);
}

static void test_encode_rejects_bad_input(void **state)
{
    (void)state;
    test_entry t;
    test_entry_make(&t, 2, 10);
    uint8_t *b;
    size_t n;
    strcpy(t.e.blobs[1].name, "fwd"); /* duplicate name */
    assert_int_equal(fa4__entry_encode(t.key_inputs, t.key_len, &t.e, "0.1.0", 0, NULL, 0, &b, &n), -1);
    strcpy(t.e.blobs[1].name, "has space");
    assert_int_equal(fa4__entry_encode(t.key_inputs, t.key_len, &t.e, "0.1.0", 0, NULL, 0, &b, &n), -1);
    t.e.blobs[1].name[0] = '\0';
    assert_int_equal(fa4__entry_encode(t.key_inputs, t.key_len, &t.e, "0.1.0", 0, NULL, 0, &b, &n), -1);
    strcpy(t.e.blobs[1].name, "meta");
    t.e.num_blobs = FA4__CACHE_MAX_BLOBS + 1;
    assert_int_equal(fa4__entry_encode(t.key_inputs, t.key_len, &t.e, "0.1.0", 0, NULL, 0, &b, &n), -1);
    t.e.num_blobs = 2;
    assert_int_equal(fa4__entry_encode(t.key_inputs, 0, &t.e, "0.1.0", 0, NULL, 0, &b, &n), -1);
    test_entry_free(&t);
}

/* T3 on bytes: every truncation, every flipped byte, appended bytes, tampered fields. */
static void test_damage_bytes(void **state)
{
    (void)state;
    test_entry t;
    test_entry_make(&t, 3, 300);
    uint8_t *b;
    size_t n;
    encode(&t, NULL, 0, &b, &n);
    fa4__entry_view v;
    for (size_t len = 0; len < n; len++)
        assert_int_not_equal(fa4__entry_decode(b, len, NULL, &v), FA4__ENTRY_OK);
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            assert_int_not_equal(fa4__entry_decode(b, n, NULL, &v), FA4__ENTRY_OK);
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    uint8_t *longer = malloc(n + 16);
    assert_non_null(longer);
    memcpy(longer, b, n);
    for (size_t extra = 1; extra <= 16; extra++) {
        memset(longer + n, (int)extra, extra);
        assert_int_equal(fa4__entry_decode(longer, n + extra, NULL, &v), FA4__ENTRY_BAD_LAYOUT);
    }
    free(longer);

    /* tampered fields with a valid checksum: each refused for what it is */
    struct {
        size_t off;
        int width;
        uint64_t value;
        fa4__entry_result want;
    } cases[] = {
        {0, 1, 'X', FA4__ENTRY_BAD_MAGIC},
        {8, 4, 2, FA4__ENTRY_BAD_FORMAT},
        {12, 4, 4, FA4__ENTRY_BAD_LAYOUT},           /* unknown flag */
        {16, 4, 64, FA4__ENTRY_BAD_LAYOUT},          /* header size */
        {20, 4, 65, FA4__ENTRY_BAD_LAYOUT},          /* library version too long */
        {24, 4, (1u << 20) + 1, FA4__ENTRY_BAD_LAYOUT},
        {28, 4, 17, FA4__ENTRY_BAD_LAYOUT},          /* too many blobs */
        {32, 8, 1ull << 40, FA4__ENTRY_BAD_LAYOUT},  /* payload length */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint8_t *c = malloc(n);
        assert_non_null(c);
        memcpy(c, b, n);
        if (cases[k].width == 1)
            c[cases[k].off] = (uint8_t)cases[k].value;
        else if (cases[k].width == 4)
            put32le(c + cases[k].off, (uint32_t)cases[k].value);
        else
            put64le(c + cases[k].off, cases[k].value);
        reseal(c, n);
        assert_int_equal(fa4__entry_decode(c, n, NULL, &v), cases[k].want);
        free(c);
    }
    free(b);
    test_entry_free(&t);
}

/* A valid checksum over a lying blob table. */
static void test_blob_table_checks(void **state)
{
    (void)state;
    test_entry t;
    test_entry_make(&t, 4, 100);
    uint8_t *b;
    size_t n;
    encode(&t, NULL, 0, &b, &n);
    fa4__entry_view v;
    assert_int_equal(fa4__entry_decode(b, n, NULL, &v), FA4__ENTRY_OK);
    size_t table = (size_t)((const uint8_t *)v.key_inputs + v.key_inputs_len - b);
    table = (table + 15) & ~(size_t)15;
    struct {
        size_t field;  /* offset inside blob record 0 or 1 */
        uint64_t value;
    } lies[] = {
        {32, 8},                   /* misaligned offset */
        {32, 0},                   /* offset into the header */
        {40, 1ull << 33},          /* size beyond the file */
        {40, 113},                 /* runs into the next blob */
        {48 + 32, 0x40},           /* second blob before the first */
        {48 + 40, 1ull << 62},     /* huge size */
    };
    for (size_t k = 0; k < sizeof lies / sizeof lies[0]; k++) {
        uint8_t *c = malloc(n);
        assert_non_null(c);
        memcpy(c, b, n);
        put64le(c + table + lies[k].field, lies[k].value);
        reseal(c, n);
        assert_int_equal(fa4__entry_decode(c, n, NULL, &v), FA4__ENTRY_BAD_LAYOUT);
        free(c);
    }
    /* a name without its NUL, an unprintable name, two blobs with one name */
    uint8_t *c = malloc(n);
    assert_non_null(c);
    memcpy(c, b, n);
    memset(c + table, 'a', 32);
    reseal(c, n);
    assert_int_equal(fa4__entry_decode(c, n, NULL, &v), FA4__ENTRY_BAD_LAYOUT);
    memcpy(c, b, n);
    c[table] = '\n';
    reseal(c, n);
    assert_int_equal(fa4__entry_decode(c, n, NULL, &v), FA4__ENTRY_BAD_LAYOUT);
    memcpy(c, b, n);
    memcpy(c + table + 48, c + table, 32);
    reseal(c, n);
    assert_int_equal(fa4__entry_decode(c, n, NULL, &v), FA4__ENTRY_BAD_LAYOUT);
    free(c);
    free(b);
    test_entry_free(&t);
}

/* T3 through the cache: each damage is a miss, counted as corrupt, and the next put heals it. */
static void test_damage_files(void **state)
{
    (void)state;
    const char *dir = scratch_new();
    char root[512], path[1024];
    fmt_path(root, sizeof root, "%s/c", dir);
    fa4__cache *c = open_dir(root, FA4_CACHE_MODE_RW);
    test_entry t;
    test_entry_make(&t, 5, 200);
    fa4__cache_entry got;
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    entry_path_of(c, &t, path, sizeof path);
    size_t n;
    uint8_t *good = slurp(path, &n);
    assert_non_null(good);
    uint8_t *bad = malloc(n + 8);
    assert_non_null(bad);
    uint64_t misses = 0;

#define EXPECT_MISS_THEN_HEAL()                                                                   \
    do {                                                                                          \
        assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);              \
        misses++;                                                                                 \
    } while (0)

    for (size_t len = 0; len < n; len++) {
        spit(path, good, len);
        EXPECT_MISS_THEN_HEAL();
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(bad, good, n);
        bad[i] ^= 0xff;
        spit(path, bad, n);
        EXPECT_MISS_THEN_HEAL();
    }
    memcpy(bad, good, n);
    memcpy(bad + n, "garbage!", 8);
    spit(path, bad, n + 8);
    EXPECT_MISS_THEN_HEAL();

    /* another entry's bytes under this key (a collision or a planted file): a miss */
    test_entry other;
    test_entry_make(&other, 6, 200);
    uint8_t *ob;
    size_t on;
    encode(&other, NULL, 0, &ob, &on);
    spit(path, ob, on);
    EXPECT_MISS_THEN_HEAL();
    free(ob);
    /* this entry written by another library version, checksum valid: a miss */
    assert_int_equal(fa4__entry_encode(t.key_inputs, t.key_len, &t.e, "9.9.9", 0, NULL, 0, &ob, &on), 0);
    spit(path, ob, on);
    EXPECT_MISS_THEN_HEAL();
    free(ob);
    /* key inputs tampered with, checksum recomputed */
    memcpy(bad, good, n);
    bad[48 + strlen(FA4_VERSION_STRING) + 3] ^= 1;
    reseal(bad, n);
    spit(path, bad, n);
    EXPECT_MISS_THEN_HEAL();

    fa4__cache_stats st;
    fa4__cache_get_stats(c, &st);
    assert_int_equal(st.misses, misses);
    assert_int_equal(st.hits, 0);
    assert_true(st.corrupt >= misses - 1); /* the empty file reads as a (truncated) corrupt entry */

    /* the next put heals it */
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 1);
    assert_true(entry_equal(&got, &t.e));
    fa4__cache_entry_free(&got);
    free(bad);
    free(good);
    test_entry_free(&t);
    test_entry_free(&other);
    fa4__cache_close(c);
    scratch_free();
}

/* T4: lengths that promise gigabytes allocate nothing of that size. */
static void test_huge_lengths(void **state)
{
    (void)state;
    const char *dir = scratch_new();
    char root[512], path[1024];
    fmt_path(root, sizeof root, "%s/c", dir);
    fa4__cache *c = open_dir(root, FA4_CACHE_MODE_RW);
    test_entry t;
    test_entry_make(&t, 7, 64);
    assert_int_equal(fa4__cache_put(c, t.key_inputs, t.key_len, &t.e), 1);
    entry_path_of(c, &t, path, sizeof path);
    size_t n;
    uint8_t *good = slurp(path, &n);
    assert_non_null(good);
    fa4__cache_entry got;

    const struct {
        size_t off;
        int width;
        uint64_t value;
    } lies[] = {
        {20, 4, 0xffffffffu}, {24, 4, 0xffffffffu}, {28, 4, 0xffffffffu},
        {32, 8, UINT64_MAX},  {32, 8, 1ull << 40},  {24, 4, 1u << 20},
    };
    for (size_t k = 0; k < sizeof lies / sizeof lies[0]; k++) {
        uint8_t *b = malloc(n);
        assert_non_null(b);
        memcpy(b, good, n);
        if (lies[k].width == 4)
            put32le(b + lies[k].off, (uint32_t)lies[k].value);
        else
            put64le(b + lies[k].off, lies[k].value);
        reseal(b, n);
        spit(path, b, n);
        free(b);
        max_alloc = 0;
        assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
        assert_true(max_alloc <= n + 4096);
    }

    /* a sparse file of 8 GiB: refused by its size before anything is read or allocated */
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, good, 64), 64);
    assert_int_equal(ftruncate(fd, (off_t)8 << 30), 0);
    close(fd);
    max_alloc = 0;
    fa4__cache_fs_reset_counts();
    assert_int_equal(fa4__cache_get(c, t.key_inputs, t.key_len, &got, NULL), 0);
    assert_int_equal(fa4__cache_fs_op_calls(FA4__FS_READ), 0);
    assert_true(max_alloc < 65536);
    free(good);
    test_entry_free(&t);
    fa4__cache_close(c);
    scratch_free();
}

/* T13, the half that runs in every build: seeded mutations of valid entries through the reader;
 * about half are resealed so that they get past the checksum into the layout checks. */
static uint64_t rng_state;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static void test_seeded_mutations(void **state)
{
    (void)state;
    const uint8_t key[] = "team key";
    test_entry t;
    test_entry_make(&t, 8, 120);
    uint8_t *seeds[2];
    size_t lens[2];
    encode(&t, NULL, 0, &seeds[0], &lens[0]);
    encode(&t, key, sizeof key - 1, &seeds[1], &lens[1]);
    fa4__entry_auth auth = {key, sizeof key - 1, 0};
    rng_state = 0x9e3779b97f4a7c15ull;
    size_t cap = lens[1] + 256;
    uint8_t *b = malloc(cap);
    assert_non_null(b);
    int accepted = 0;
    for (int iter = 0; iter < 30000; iter++) {
        int s = (int)(rng() % 2);
        size_t n = lens[s];
        memcpy(b, seeds[s], n);
        int edits = 1 + (int)(rng() % 4);
        for (int e = 0; e < edits; e++) {
            switch (rng() % 6) {
            case 0: b[rng() % n] = (uint8_t)rng(); break;
            case 1: b[rng() % n] ^= (uint8_t)(1u << (rng() % 8)); break;
            case 2: if (n > 1) n -= 1 + rng() % (n < 64 ? n - 1 : 64); break;
            case 3: { size_t add = rng() % 64; if (n + add <= cap) { for (size_t i = 0; i < add; i++) b[n + i] = (uint8_t)rng(); n += add; } break; }
            case 4: { size_t at = 8 + (rng() % 10) * 4; if (at + 4 <= n) put32le(b + at, rng() % 3 ? rng() % 300 : rng()); break; }
            default: { size_t at = rng() % n; if (at + 8 <= n) put64le(b + at, rng() % 2 ? rng() % 4096 : ((uint64_t)rng() << 32 | rng())); break; }
            }
        }
        if (s == 0 && rng() % 2)
            reseal(b, n);
        /* a copy of exactly n bytes, so that ASan sees any read past the end */
        uint8_t *exact = malloc(n);
        assert_non_null(exact);
        memcpy(exact, b, n);
        fa4__entry_view v;
        fa4__entry_result r = fa4__entry_decode(exact, n, s ? &auth : NULL, &v);
        if (r == FA4__ENTRY_OK) {
            accepted++;
            for (int i = 0; i < v.num_blobs; i++) {
                assert_true(v.blobs[i].data >= exact && v.blobs[i].data + v.blobs[i].size <= exact + n);
                assert_true(strnlen(v.blobs[i].name, 32) < 32);
            }
            assert_true((const uint8_t *)v.key_inputs + v.key_inputs_len <= exact + n);
        }
        free(exact);
    }
    /* some mutations are harmless (a byte of key inputs, resealed): the reader accepts those */
    assert_true(accepted < 30000);
    free(b);
    free(seeds[0]);
    free(seeds[1]);
    test_entry_free(&t);
}

/* ------------------------------------------------------------------- golden files (T14) */
#define GOLDEN_DIR FA4_TEST_SOURCE_DIR "/tests/cache/golden"
static const uint8_t golden_key[] = "fa4jit golden team key";

typedef struct golden {
    const char *file;
    int signed_;
} golden;

static const golden goldens[] = {
    {"v1-unsigned.fa4", 0},
    {"v1-signed.fa4", 1},
};

/* The entry every format-1 golden file holds (written by library 0.1.0 at time 1764000000). */
static void golden_entry(test_entry *t)
{
    test_entry_make(t, 0x601d, 777);
}

static void test_golden_files(void **state)
{
    (void)state;
    test_entry t;
    golden_entry(&t);
    const char *write = getenv("FA4JIT_WRITE_GOLDEN");
    for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++) {
        char path[1024];
        fmt_path(path, sizeof path, "%s/%s", GOLDEN_DIR, goldens[g].file);
        const uint8_t *k = goldens[g].signed_ ? golden_key : NULL;
        size_t klen = goldens[g].signed_ ? sizeof golden_key - 1 : 0;
        if (write && !strcmp(write, "1")) {
            uint8_t *b;
            size_t n;
            assert_int_equal(fa4__entry_encode(t.key_inputs, t.key_len, &t.e, "0.1.0", 1764000000,
                                               k, klen, &b, &n), 0);
            spit(path, b, n);
            free(b);
        }
        size_t n;
        uint8_t *b = slurp(path, &n);
        if (!b)
            fail_msg("golden file %s missing", path);
        fa4__entry_auth auth = {k, klen, goldens[g].signed_};
        fa4__entry_view v;
        assert_int_equal(fa4__entry_decode(b, n, &auth, &v), FA4__ENTRY_OK);
        assert_int_equal(v.format, 1);
        assert_int_equal(v.created, 1764000000);
        assert_int_equal(v.is_signed, goldens[g].signed_);
        assert_int_equal(v.libver_len, 5);
        assert_memory_equal(v.libver, "0.1.0", 5);
        assert_int_equal(v.key_inputs_len, t.key_len);
        assert_memory_equal(v.key_inputs, t.key_inputs, t.key_len);
        fa4__cache_entry got = {0};
        got.num_blobs = v.num_blobs;
        memcpy(got.blobs, v.blobs, sizeof v.blobs);
        assert_true(entry_equal(&got, &t.e));
        /* today's writer still produces format 1 byte for byte */
        uint8_t *again;
        size_t an;
        assert_int_equal(fa4__entry_encode(t.key_inputs, t.key_len, &t.e, "0.1.0", 1764000000, k,
                                           klen, &again, &an), 0);
        assert_int_equal(an, n);
        assert_memory_equal(again, b, n);
        free(again);
        free(b);
    }
    test_entry_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_bytes),
        cmocka_unit_test(test_encode_rejects_bad_input),
        cmocka_unit_test(test_damage_bytes),
        cmocka_unit_test(test_blob_table_checks),
        cmocka_unit_test(test_damage_files),
        cmocka_unit_test(test_huge_lengths),
        cmocka_unit_test(test_seeded_mutations),
        cmocka_unit_test(test_golden_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
