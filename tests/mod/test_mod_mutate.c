/*
 * test_mod_mutate.c - seeded mutation test of the front end, run in every CI build: every shipped
 * mod and test mod is mutated thousands of times (byte flips, inserted C fragments, deleted and
 * duplicated ranges, truncation) with a fixed PRNG seed, and each mutant goes through parse and,
 * when it parses, every back end (mod_exercise.h). Nothing may crash, leak or trip a sanitizer;
 * failures must be well-formed diagnostics. Deterministic, and a few seconds long.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>

#include <cmocka.h>

#include "mod_exercise.h"
#include "mod_test_util.h"

#define MUTANTS_PER_SOURCE 2500

static const char *const fragments[] = {
    "{", "}", "(", ")", "[", "]", ";", ",", "*", "&", "#", "\"", "'", "/*", "*/", "//", "\n",
    "=", "==", "+=", "<<", ">>", "?", ":", "!", "~", "-", "0", "1.5e", "0x", "2147483648",
    "float ", "int ", "bool ", "const ", "if ", "else ", "return ", "for ", "while ", "goto ",
    "score_mod", "mask_mod", "q_idx", "kv_idx", "expf(", "clamp(", "min(", "INFINITY", "NAN",
    "h", "(float)", "(int)", "(bool)", "true", "false", "asm(", "\xc3\xa9", "\t", "@", "\\",
    "float f(float x) { return f(x); }", "int g;", "x[0][0]", "a.b", "->", "++", "/ 0", "% 0",
};

/* One mutant of src in out (capacity cap); returns its length. */
static size_t mutate(const char *src, size_t len, char *out, size_t cap, uint64_t *s)
{
    size_t n = len < cap ? len : cap;
    memcpy(out, src, n);
    int rounds = 1 + (int)(mx_next(s) % 4);
    for (int r = 0; r < rounds; r++) {
        size_t pos = n ? (size_t)(mx_next(s) % (n + 1)) : 0;
        switch (mx_next(s) % 7) {
        case 0: /* flip a byte */
            if (pos < n)
                out[pos] = (char)(mx_next(s) & 0xff);
            break;
        case 1: /* printable byte */
            if (pos < n)
                out[pos] = (char)(32 + mx_next(s) % 95);
            break;
        case 2: { /* insert a fragment */
            const char *f = fragments[mx_next(s) % (sizeof fragments / sizeof fragments[0])];
            size_t fl = strlen(f);
            if (n + fl <= cap) {
                memmove(out + pos + fl, out + pos, n - pos);
                memcpy(out + pos, f, fl);
                n += fl;
            }
            break;
        }
        case 3: { /* delete a range */
            size_t dl = (size_t)(mx_next(s) % 16);
            if (pos + dl > n)
                dl = n - pos;
            memmove(out + pos, out + pos + dl, n - pos - dl);
            n -= dl;
            break;
        }
        case 4: { /* duplicate a range */
            size_t dl = (size_t)(mx_next(s) % 40);
            if (pos + dl > n)
                dl = n - pos;
            if (n + dl <= cap) {
                memmove(out + pos + dl, out + pos, n - pos);
                n += dl;
            }
            break;
        }
        case 5: /* truncate */
            n = pos;
            break;
        default: { /* swap two bytes */
            size_t p2 = n ? (size_t)(mx_next(s) % n) : 0;
            if (pos < n) {
                char t = out[pos];
                out[pos] = out[p2];
                out[p2] = t;
            }
            break;
        }
        }
    }
    return n;
}

static int run_source(const char *name, const char *src, size_t len, uint64_t seed,
                      int *parsed)
{
    char *buf = malloc(len * 2 + 256);
    int fails = 0;
    /* the source itself must parse and pass */
    fails += mx_exercise(src, len, seed) != 0;
    for (int i = 0; i < MUTANTS_PER_SOURCE; i++) {
        size_t n = mutate(src, len, buf, len * 2 + 256, &seed);
        /* an exact-length heap copy, so reading past the end is caught by ASan */
        char *exact = malloc(n ? n : 1);
        memcpy(exact, buf, n);
        fa4__mod *m = NULL;
        if (fa4__mod_parse(exact, n, "m", &m, NULL) == FA4_OK) {
            (*parsed)++;
            fa4__mod_free(m);
        }
        int r = mx_exercise(exact, n, seed + (uint64_t)i);
        if (r) {
            fails++;
            fprintf(stderr, "%s mutant %d broke invariant %d:\n%.*s\n", name, i, r, (int)n,
                    exact);
        }
        free(exact);
    }
    free(buf);
    return fails;
}

static void mutate_everything(void **state)
{
    (void)state;
    clock_t t0 = clock();
    char *names[MT_MAX_MODS];
    int n = mt_list_mods(names);
    assert_true(n >= 14);
    int fails = 0, parsed = 0, total = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        char *src = mt_read_mod(names[i], &len);
        fails += run_source(names[i], src, len, 0x5eed0000u + (uint64_t)i, &parsed);
        total += MUTANTS_PER_SOURCE;
        free(src);
        free(names[i]);
    }
    static const char *const cases[] = {"branches", "dtypes", "builtins"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/mod/cases/%s.mod", FA4_TEST_SOURCE_DIR, cases[i]);
        size_t len;
        char *src = mt_read_file(path, &len);
        assert_non_null(src);
        fails += run_source(cases[i], src, len, 0xca5e0000u + i, &parsed);
        total += MUTANTS_PER_SOURCE;
        free(src);
    }
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    fprintf(stderr, "%d mutants, %d parsed and went through every back end, %.1f s\n", total,
            parsed, secs);
    /* the mutants must reach past the parser often enough to test the back ends */
    assert_true(parsed > total / 20);
    assert_int_equal(fails, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mutate_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
