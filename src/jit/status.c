/*
 * status.c - names and messages of statuses and dtypes, and the version calls: the small tables
 * every caller needs to turn a code into words.
 */
#include <nvrtc.h>

#include "internal.h"

const char *fa4_status_name(fa4_status s)
{
    switch (s) {
#define FA4__STATUS_NAME(name, num, msg)                                                          \
    case name:                                                                                     \
        return #name;
        FA4_STATUS_MAP(FA4__STATUS_NAME)
#undef FA4__STATUS_NAME
    default:
        return "FA4_UNKNOWN_STATUS";
    }
}

const char *fa4_status_message(fa4_status s)
{
    switch (s) {
#define FA4__STATUS_MSG(name, num, msg)                                                           \
    case name:                                                                                     \
        return msg;
        FA4_STATUS_MAP(FA4__STATUS_MSG)
#undef FA4__STATUS_MSG
    default:
        return "unknown status";
    }
}

const char *fa4_dtype_name(fa4_dtype t)
{
    switch (t) {
    case FA4_DTYPE_BF16: return "bf16";
    case FA4_DTYPE_FP16: return "fp16";
    case FA4_DTYPE_FP32: return "float";
    case FA4_DTYPE_INT8: return "int8";
    case FA4_DTYPE_UINT8: return "uint8";
    case FA4_DTYPE_INT16: return "int16";
    case FA4_DTYPE_INT32: return "int32";
    case FA4_DTYPE_INT64: return "int64";
    case FA4_DTYPE_BOOL: return "bool";
    default: return "invalid";
    }
}

size_t fa4_dtype_size(fa4_dtype t)
{
    switch (t) {
    case FA4_DTYPE_BF16:
    case FA4_DTYPE_FP16:
    case FA4_DTYPE_INT16: return 2;
    case FA4_DTYPE_FP32:
    case FA4_DTYPE_INT32: return 4;
    case FA4_DTYPE_INT8:
    case FA4_DTYPE_UINT8:
    case FA4_DTYPE_BOOL: return 1;
    case FA4_DTYPE_INT64: return 8;
    default: return 0;
    }
}

int fa4_version_number(void)
{
    return FA4_VERSION_NUMBER;
}

const char *fa4_version_string(void)
{
    return FA4_VERSION_STRING;
}

const char *fa4_kernel_fingerprint(void)
{
    return fa4__kernel_sources_fingerprint();
}

fa4_status fa4_nvrtc_version(int *major, int *minor)
{
    int a = 0, b = 0;
    if (nvrtcVersion(&a, &b) != NVRTC_SUCCESS)
        return FA4_ERR_NVRTC_UNAVAILABLE;
    if (major)
        *major = a;
    if (minor)
        *minor = b;
    return FA4_OK;
}

int fa4__arch_parse(const char *arch, int *major, int *minor, int *suffix_a)
{
    /* "sm_90a", "sm_80", "sm_100a", "sm_120f": digits are major followed by one minor digit. */
    if (!arch || arch[0] != 's' || arch[1] != 'm' || arch[2] != '_')
        return -1;
    const char *p = arch + 3;
    int n = 0, digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 4) {
        n = n * 10 + (*p - '0');
        p++;
        digits++;
    }
    if (digits < 2)
        return -1;
    int sfx = 0;
    if (*p == 'a' || *p == 'f') {
        sfx = 1;
        p++;
    }
    if (*p != '\0')
        return -1;
    if (major)
        *major = n / 10;
    if (minor)
        *minor = n % 10;
    if (suffix_a)
        *suffix_a = sfx;
    return 0;
}
