/*
 * test_cache_hmac.c - SHA-256 against FIPS 180-4 examples and HMAC-SHA256 against RFC 4231 test
 * cases 1-4, 6 and 7 (T12's primitive); streaming in odd pieces must equal one-shot hashing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cache/sha256.h"
#include "hash.h"

static void hex_of(const uint8_t *d, size_t n, char *out)
{
    fa4__hex(d, n, out);
}

static void check_sha(const void *data, size_t len, const char *want)
{
    uint8_t d[32];
    char hex[65];
    fa4__sha256(data, len, d);
    hex_of(d, 32, hex);
    assert_string_equal(hex, want);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *a = malloc(1000000);
    assert_non_null(a);
    memset(a, 'a', 1000000);
    check_sha(a, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

static void test_sha256_streaming(void **state)
{
    (void)state;
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    for (size_t total = 0; total <= sizeof buf; total += 37) {
        uint8_t one[32], many[32];
        fa4__sha256(buf, total, one);
        fa4__sha256_ctx s;
        fa4__sha256_init(&s);
        size_t at = 0, step = 1;
        while (at < total) {
            size_t n = step < total - at ? step : total - at;
            fa4__sha256_update(&s, buf + at, n);
            at += n;
            step = step * 3 % 71 + 1; /* pieces that straddle the 64-byte blocks */
        }
        fa4__sha256_final(&s, many);
        assert_memory_equal(one, many, 32);
    }
}

static void check_hmac(const uint8_t *key, size_t klen, const void *data, size_t len,
                       const char *want)
{
    uint8_t mac[32];
    char hex[65];
    fa4__hmac_sha256(key, klen, data, len, mac);
    hex_of(mac, 32, hex);
    assert_string_equal(hex, want);
}

static void test_hmac_rfc4231(void **state)
{
    (void)state;
    uint8_t k[131], d[50];
    memset(k, 0x0b, 20);
    check_hmac(k, 20, "Hi There", 8,
               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    check_hmac((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, 20);
    memset(d, 0xdd, 50);
    check_hmac(k, 20, d, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k[i] = (uint8_t)(i + 1);
    memset(d, 0xcd, 50);
    check_hmac(k, 25, d, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    memset(k, 0xaa, 131);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    check_hmac(k, 131, t6, strlen(t6),
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    const char *t7 = "This is a test using a larger than block-size key and a larger than block-size "
                     "data. The key needs to be hashed before being used by the HMAC algorithm.";
    check_hmac(k, 131, t7, strlen(t7),
               "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

static void test_ct_equal(void **state)
{
    (void)state;
    uint8_t a[32] = {0}, b[32] = {0};
    assert_true(fa4__ct_equal(a, b, 32));
    for (int i = 0; i < 32; i++) {
        b[i] = 1;
        assert_false(fa4__ct_equal(a, b, 32));
        b[i] = 0;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_sha256_streaming),
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_ct_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
