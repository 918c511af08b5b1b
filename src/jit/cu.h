/*
 * cu.h - the CUDA Driver API, loaded with dlopen at run time.
 *
 * Linking libcuda would make the library fail to load on machines without a driver, where compiling
 * (deviceless AOT) and the cache tools must still work. So the driver is a table of function
 * pointers filled once from libcuda.so.1. Symbols are looked up by their exact versioned names
 * (cuMemAlloc_v2 ...), because cuda.h's macros would otherwise pick a legacy ABI.
 */
#ifndef FA4_JIT_CU_H
#define FA4_JIT_CU_H

#include <cuda.h>

/* X(field, "symbol", return type, parameter list) */
#define FA4__CU_MAP(X)                                                                             \
    X(init, "cuInit", CUresult, (unsigned int))                                                    \
    X(driverGetVersion, "cuDriverGetVersion", CUresult, (int *))                                   \
    X(getErrorName, "cuGetErrorName", CUresult, (CUresult, const char **))                         \
    X(getErrorString, "cuGetErrorString", CUresult, (CUresult, const char **))                     \
    X(deviceGet, "cuDeviceGet", CUresult, (CUdevice *, int))                                       \
    X(deviceGetCount, "cuDeviceGetCount", CUresult, (int *))                                       \
    X(deviceGetName, "cuDeviceGetName", CUresult, (char *, int, CUdevice))                         \
    X(deviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int *, CUdevice_attribute, CUdevice)) \
    X(devicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext *, CUdevice))       \
    X(devicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice))               \
    X(ctxGetCurrent, "cuCtxGetCurrent", CUresult, (CUcontext *))                                   \
    X(ctxGetDevice, "cuCtxGetDevice", CUresult, (CUdevice *))                                      \
    X(ctxPushCurrent, "cuCtxPushCurrent_v2", CUresult, (CUcontext))                                \
    X(ctxPopCurrent, "cuCtxPopCurrent_v2", CUresult, (CUcontext *))                                \
    X(ctxSynchronize, "cuCtxSynchronize", CUresult, (void))                                        \
    X(moduleLoadData, "cuModuleLoadData", CUresult, (CUmodule *, const void *))                    \
    X(moduleUnload, "cuModuleUnload", CUresult, (CUmodule))                                        \
    X(moduleGetFunction, "cuModuleGetFunction", CUresult, (CUfunction *, CUmodule, const char *))  \
    X(funcSetAttribute, "cuFuncSetAttribute", CUresult, (CUfunction, CUfunction_attribute, int))   \
    X(funcGetAttribute, "cuFuncGetAttribute", CUresult, (int *, CUfunction_attribute, CUfunction)) \
    X(launchKernel, "cuLaunchKernel", CUresult,                                                    \
      (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, \
       void **, void **))                                                                          \
    X(launchKernelEx, "cuLaunchKernelEx", CUresult,                                                \
      (const CUlaunchConfig *, CUfunction, void **, void **))                                      \
    X(memAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr *, size_t))                                \
    X(memFree, "cuMemFree_v2", CUresult, (CUdeviceptr))                                            \
    X(memcpyHtoD, "cuMemcpyHtoD_v2", CUresult, (CUdeviceptr, const void *, size_t))                \
    X(memcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void *, CUdeviceptr, size_t))                      \
    X(memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult,                                           \
      (CUdeviceptr, const void *, size_t, CUstream))                                               \
    X(memsetD8Async, "cuMemsetD8Async", CUresult, (CUdeviceptr, unsigned char, size_t, CUstream))  \
    X(memsetD32Async, "cuMemsetD32Async", CUresult, (CUdeviceptr, unsigned int, size_t, CUstream)) \
    X(streamSynchronize, "cuStreamSynchronize", CUresult, (CUstream))                              \
    X(pointerGetAttribute, "cuPointerGetAttribute", CUresult,                                      \
      (void *, CUpointer_attribute, CUdeviceptr))                                                  \
    X(tensorMapEncodeTiled, "cuTensorMapEncodeTiled", CUresult,                                    \
      (CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,                 \
       const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,          \
       CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill))

typedef struct fa4__cu {
#define FA4__CU_FIELD(field, sym, ret, params) ret(*field) params;
    FA4__CU_MAP(FA4__CU_FIELD)
#undef FA4__CU_FIELD
    int loaded; /* 1 when every symbol above resolved and cuInit succeeded */
    int driver_version;
} fa4__cu;

/* Load the driver once per process (thread-safe). Returns NULL when no driver can be loaded; then
 * `why` (if given) points to a static reason. */
const fa4__cu *fa4__cu_get(const char **why);

/* Launch f; with pdl set, by cuLaunchKernelEx with programmatic stream serialization (the kernel
 * may start while the previous one on the stream still runs, and resolves the dependency itself
 * with griddepcontrol: common/ptx.cuh). PDL is skipped where the driver is older than 12.3 (PDL
 * launches under stream capture), where FA4JIT_PDL=0 is set in the environment (for A/B timing), and
 * after a launch with the attribute has failed where a plain one succeeded (then never tried again
 * in the process). */
CUresult fa4__cu_launch(const fa4__cu *cu, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned threads,
                        unsigned smem, CUstream stream, void **args, int pdl);

/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" into buf, for messages. */
void fa4__cu_describe(const fa4__cu *cu, CUresult r, char *buf, size_t len);

#endif /* FA4_JIT_CU_H */
