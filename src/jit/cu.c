/*
 * cu.c - loads the CUDA driver with dlopen once per process and fills the fa4__cu table, and the one
 * launch call that chooses between a plain launch and a programmatic dependent one (PDL).
 * Failure to load is not an error of the library: a ctx without a device still compiles.
 */
#include "cu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fa4__cu g_cu;
static const char *g_why = "CUDA driver not loaded";
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        g_why = "libcuda.so.1 not found (no NVIDIA driver on this machine)";
        return;
    }
#define FA4__CU_LOAD(field, sym, ret, params)                                                      \
    *(void **)(&g_cu.field) = dlsym(lib, sym);                                                     \
    if (!g_cu.field) {                                                                             \
        g_why = "the CUDA driver is too old: " sym " is missing";                                  \
        return;                                                                                    \
    }
    FA4__CU_MAP(FA4__CU_LOAD)
#undef FA4__CU_LOAD
    CUresult r = g_cu.init(0);
    if (r != CUDA_SUCCESS) {
        g_why = r == CUDA_ERROR_NO_DEVICE ? "cuInit: no CUDA-capable device"
                                          : "cuInit failed (driver present but unusable)";
        return;
    }
    g_cu.driverGetVersion(&g_cu.driver_version);
    g_cu.loaded = 1;
    /* the handle stays open for the life of the process: the table points into it */
}

const fa4__cu *fa4__cu_get(const char **why)
{
    pthread_once(&g_once, load_driver);
    if (!g_cu.loaded) {
        if (why)
            *why = g_why;
        return NULL;
    }
    return &g_cu;
}

static pthread_once_t g_pdl_once = PTHREAD_ONCE_INIT;
static int g_pdl_env = 1;        /* FA4JIT_PDL=0 turns it off */
static volatile int g_pdl_broken; /* a PDL launch failed where a plain one worked */

static void read_pdl_env(void)
{
    const char *e = getenv("FA4JIT_PDL");
    g_pdl_env = !(e && e[0] == '0');
}

CUresult fa4__cu_launch(const fa4__cu *cu, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned threads,
                        unsigned smem, CUstream stream, void **args, int pdl)
{
    if (pdl) {
        pthread_once(&g_pdl_once, read_pdl_env);
        pdl = g_pdl_env && !g_pdl_broken && cu->driver_version >= 12030;
    }
    if (pdl) {
        CUlaunchAttribute attr;
        CUlaunchConfig cfg;
        memset(&attr, 0, sizeof attr);
        memset(&cfg, 0, sizeof cfg);
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        cfg.gridDimX = gx;
        cfg.gridDimY = gy;
        cfg.gridDimZ = gz;
        cfg.blockDimX = threads;
        cfg.blockDimY = 1;
        cfg.blockDimZ = 1;
        cfg.sharedMemBytes = smem;
        cfg.hStream = stream;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        if (cu->launchKernelEx(&cfg, f, args, NULL) == CUDA_SUCCESS)
            return CUDA_SUCCESS;
        /* the plain launch decides: where it fails too, its error is the one to report */
        CUresult r = cu->launchKernel(f, gx, gy, gz, threads, 1, 1, smem, stream, args, NULL);
        if (r == CUDA_SUCCESS)
            g_pdl_broken = 1;
        return r;
    }
    return cu->launchKernel(f, gx, gy, gz, threads, 1, 1, smem, stream, args, NULL);
}

void fa4__cu_describe(const fa4__cu *cu, CUresult r, char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;
    if (cu && cu->loaded) {
        cu->getErrorName(r, &name);
        cu->getErrorString(r, &text);
    }
    snprintf(buf, len, "%s (%d): %s", name ? name : "CUDA error", (int)r,
             text ? text : "no description");
}
