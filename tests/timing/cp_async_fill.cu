// cp.async fills of shared memory (tests/timing/test_cp_async_fill.py): each warp copies 512
// contiguous global bytes, 16 per lane, into 8 shared rows of 64 bytes PITCH bytes apart
// (64: one contiguous 512-byte span; 80: rows 16 bytes off a 32-byte boundary every other row,
// as mma_gemm's padded A tile), ITERS times without waiting, then waits for all of them.
template <int PITCH>
__device__ void fill_rows(const float4 *src, int iters) {
    __shared__ __align__(128) char buf[8 * 8 * PITCH];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    unsigned dst = (unsigned)__cvta_generic_to_shared(buf + (warp * 8 + lane / 4) * PITCH + (lane % 4) * 16);
    for (int i = 0; i < iters; i++) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src + i * blockDim.x + threadIdx.x));
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
}
extern "C" __global__ void fill_contiguous(const float4 *src, int iters) { fill_rows<64>(src, iters); }
extern "C" __global__ void fill_padded(const float4 *src, int iters) { fill_rows<80>(src, iters); }
