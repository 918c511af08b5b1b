/*
 * cmd_info.c - `fa4jit info`: library, NVRTC and driver versions, the kernel fingerprint, the GPUs
 * this machine has (if any) and where the kernel cache lives.
 */
#include <stdio.h>
#include <string.h>

#include "cache/cache.h"
#include "cli.h"
#include "internal.h"

int fa4__cli_info(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: fa4jit info [--json]\n\nPrint versions (library, NVRTC, driver), the "
                   "kernel source fingerprint,\nthe GPUs of this machine and the kernel cache "
                   "tiers.\n");
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            fprintf(stderr, "fa4jit info: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    int nv_major = 0, nv_minor = 0;
    int have_nvrtc = fa4_nvrtc_version(&nv_major, &nv_minor) == FA4_OK;
    const char *why = NULL;
    const fa4__cu *cu = fa4__cu_get(&why);
    int ndev = 0;
    if (cu)
        cu->deviceGetCount(&ndev);

    fa4_ctx *ctx = NULL;
    fa4_ctx_options o;
    fa4_ctx_options_init(&o);
    o.device = FA4_DEVICE_NONE;
    char tiers[2048] = "";
    if (fa4_ctx_create(&o, &ctx) == FA4_OK) {
        fa4__cache_describe(ctx->cache, tiers, sizeof tiers);
        fa4_ctx_destroy(ctx);
    } else {
        snprintf(tiers, sizeof tiers, "unavailable: %s", fa4_ctx_create_errmsg());
    }

    if (json) {
        printf("{\"version\":\"%s\",\"kernel_fingerprint\":\"%s\",", fa4_version_string(),
               fa4_kernel_fingerprint());
        if (have_nvrtc)
            printf("\"nvrtc\":\"%d.%d\",", nv_major, nv_minor);
        else
            printf("\"nvrtc\":null,");
        printf("\"driver\":%d,\"devices\":[", cu ? cu->driver_version : 0);
    } else {
        printf("fa4jit %s\n", fa4_version_string());
        printf("kernel fingerprint  %s\n", fa4_kernel_fingerprint());
        if (have_nvrtc)
            printf("NVRTC               %d.%d\n", nv_major, nv_minor);
        else
            printf("NVRTC               not usable\n");
        if (cu)
            printf("CUDA driver         %d.%d\n", cu->driver_version / 1000,
                   (cu->driver_version % 1000) / 10);
        else
            printf("CUDA driver         none (%s); compiling with --arch still works\n", why);
    }
    for (int d = 0; d < ndev; d++) {
        CUdevice dev;
        char name[128] = "?";
        int major = 0, minor = 0, sms = 0;
        if (cu->deviceGet(&dev, d) != CUDA_SUCCESS)
            continue;
        cu->deviceGetName(name, sizeof name, dev);
        cu->deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        cu->deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        cu->deviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
        if (json)
            printf("%s{\"index\":%d,\"name\":\"%s\",\"capability\":\"%d.%d\",\"sms\":%d}",
                   d ? "," : "", d, name, major, minor, sms);
        else
            printf("device %d            %s, compute capability %d.%d, %d SMs\n", d, name, major,
                   minor, sms);
    }
    if (json) {
        printf("],\"cache\":\"");
        for (const char *p = tiers; *p; p++) {
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if (*p == '\n')
                printf("\\n");
            else
                putchar(*p);
        }
        printf("\"}\n");
    } else {
        printf("cache tiers\n%s%s", tiers, tiers[0] && tiers[strlen(tiers) - 1] != '\n' ? "\n" : "");
    }
    return 0;
}
