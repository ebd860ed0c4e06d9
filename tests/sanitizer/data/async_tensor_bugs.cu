// Kernels with (and without) the bugs the sanitizer must find in tensor-core and async-copy code.
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// Each of 128 threads copies 16 bytes into the tile with cp.async, then reads a float another
// thread copied. WAIT = 1: cp.async.wait_group 0 and __syncthreads before the read (correct);
// WAIT = 0: the wait is missing (the read may see the old bytes).
template <int WAIT>
__global__ void tile_copy(const float* in, float* out) {
    __shared__ __align__(16) float t[512];
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                 :: "r"(smem(&t[threadIdx.x * 4])), "l"(&in[blockIdx.x * 512 + threadIdx.x * 4]));
    asm volatile("cp.async.commit_group;\n" ::);
    if (WAIT) asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();
    out[blockIdx.x * 128 + threadIdx.x] = t[(threadIdx.x * 4 + 4) % 512];       // the read: line 19
}

// 64 threads store a 32 x 8 tile of halves (one row of 16 bytes per 4 threads), then warp 0
// reads it with ldmatrix.x4 at row addresses rows[lane]. SYNC = 0: no __syncthreads between.
template <int SYNC>
__global__ void ldsm_tile(const int* rows, unsigned* out) {
    __shared__ __align__(16) unsigned tile[128];                                 // 512 bytes
    tile[threadIdx.x] = threadIdx.x;
    tile[threadIdx.x + 64] = threadIdx.x + 64;
    if (SYNC) __syncthreads();
    if (threadIdx.x < 32) {
        unsigned r0, r1, r2, r3;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(smem(tile) + rows[threadIdx.x]));
        out[threadIdx.x * 4] = r0; out[threadIdx.x * 4 + 1] = r1;
        out[threadIdx.x * 4 + 2] = r2; out[threadIdx.x * 4 + 3] = r3;
    }
}

// Two tiles through one buffer: each thread copies 16 bytes with cp.async, waits, and after a
// barrier reads a float another thread copied. SYNC = 0: no barrier after the read, so the next
// copy may overwrite bytes another thread has not read yet (the refill of a stage in flight).
template <int SYNC>
__global__ void tile_refill(const float* in, float* out) {
    __shared__ __align__(16) float t[512];
    float s = 0.0f;
    for (int it = 0; it < 2; it++) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"                // the refill
                     :: "r"(smem(&t[threadIdx.x * 4])), "l"(&in[it * 512 + threadIdx.x * 4]));
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group 0;\n" ::);
        __syncthreads();
        s += t[(threadIdx.x * 4 + 4) % 512];                                       // the neighbour's float
        if (SYNC) __syncthreads();
    }
    out[threadIdx.x] = s;
}
