// Does compute-sanitizer racecheck take mbarrier arrive / try_wait.parity (inline PTX) as ordering?
// Thread 0 of warp 0 writes a shared word and arrives on FULL; warp 1 waits on FULL, reads the
// word, and lane 0 arrives on EMPTY after a __syncwarp; thread 0 waits on EMPTY and writes the word
// again: the fwd kernel's tile hand-off slot pattern. Every access is ordered by the barriers.
#include <cstdio>
__device__ __forceinline__ void mbar_init(unsigned a, unsigned n) { asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(a), "r"(n)); }
__device__ __forceinline__ void mbar_arrive(unsigned a) { asm volatile("{ .reg .b64 s; mbarrier.arrive.shared.b64 s, [%0]; }" :: "r"(a) : "memory"); }
__device__ __forceinline__ void mbar_wait(unsigned a, unsigned ph) {
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], %1; @!p bra W; }" :: "r"(a), "r"(ph) : "memory");
}
__global__ void k(int *out, int rounds) {
    __shared__ __align__(8) unsigned long long bars[2];
    __shared__ int slot;
    const unsigned full = (unsigned)__cvta_generic_to_shared(&bars[0]), empty = (unsigned)__cvta_generic_to_shared(&bars[1]);
    if (threadIdx.x == 0) { mbar_init(full, 1); mbar_init(empty, 1); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
    __syncthreads();
    int acc = 0;
    for (int r = 0; r < rounds; ++r) {
        if (threadIdx.x == 0) {
            if (r > 0) mbar_wait(empty, (unsigned)(r - 1) & 1u);
            slot = r + 1;
            mbar_arrive(full);
        } else if (threadIdx.x >= 32 && threadIdx.x < 64) {
            mbar_wait(full, (unsigned)r & 1u);
            acc += slot;
            __syncwarp();
            if (threadIdx.x == 32) mbar_arrive(empty);
        }
    }
    if (threadIdx.x >= 32 && threadIdx.x < 64) out[threadIdx.x - 32] = acc;
}
int main() {
    int *d; cudaMalloc(&d, 32 * sizeof(int));
    k<<<1, 64>>>(d, 8);
    int h[32]; cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("probe: %s (lane 0 sum %d, want 36); %s\n", h[0] == 36 && h[31] == 36 ? "ok" : "WRONG", h[0], cudaGetErrorString(cudaGetLastError()));
    return 0;
}
