// A TMA + wgmma GEMM for sm_90a: C (M x N, f32) = A (M x K, f16, row-major) B (K x N, f16, row-major).
//
// One warpgroup (128 threads) computes a BM = 64 x BN tile of C. Thread 0 is the producer: it
// loads the K-slices of A (a 64 x BK box) and B (BK x 64 boxes) with cp.async.bulk.tensor into
// a ring of STAGES shared-memory stages, each with an mbarrier that the copies complete by their
// byte count (expect_tx / complete_tx). The warpgroup waits on a stage's mbarrier (try_wait with
// the stage's phase parity), multiplies it with wgmma.mma_async (A K-major, B N-major, both read
// through swizzled shared-memory descriptors: the swizzle the tensor maps wrote), and after a
// __syncthreads the producer refills the stage with the slice STAGES further on. The epilogue
// writes the accumulators to shared memory and stores the tile with one TMA store.
//
// Tensor maps (host: gpusim.TensorMap, or cuTensorMapEncodeTiled on a GPU):
//   tmA: A, box (BK, 64),  swizzle BK * 2 bytes (64B for BK = 32, 128B for BK = 64)
//   tmB: B, box (64, BK),  swizzle 128B
//   tmC: C, box (BN, 64),  no swizzle
// Compiled by NVRTC for sm_90a (gpusim: the h100/h200 presets; a GPU: -arch=sm_90a).
typedef unsigned long long uint64_t;
typedef unsigned int uint32_t;

// the driver's opaque tensor map (cuda.h is not available under NVRTC): 128 bytes, 64-byte aligned
struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, int c0, int c1, uint32_t src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(src) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

// a wgmma shared-memory matrix descriptor: start, leading / stride byte offsets, swizzle (1: 128B, 2: 64B, 3: 32B)
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t swizzle) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | ((uint64_t)swizzle << 62);
}

// D (64 x 64, f32, 32 registers per thread) += A (64 x 16, K-major) B (16 x 64, N-major), f16 in
__device__ __forceinline__ void wgmma_n64(float* d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// D (64 x 128, f32, 64 registers per thread) += A (64 x 16, K-major) B (16 x 128, N-major), f16 in
__device__ __forceinline__ void wgmma_n128(float* d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

template <int BN>
__device__ __forceinline__ void wgmma_tile(float* d, uint64_t desc_a, uint64_t desc_b, int scale_d);
template <>
__device__ __forceinline__ void wgmma_tile<64>(float* d, uint64_t a, uint64_t b, int s) { wgmma_n64(d, a, b, s); }
template <>
__device__ __forceinline__ void wgmma_tile<128>(float* d, uint64_t a, uint64_t b, int s) { wgmma_n128(d, a, b, s); }

template <int BN, int BK, int STAGES>
__global__ void __launch_bounds__(128) tma_wgmma_gemm(const __grid_constant__ CUtensorMap tmA,
                                                      const __grid_constant__ CUtensorMap tmB,
                                                      const __grid_constant__ CUtensorMap tmC, int M, int N, int K) {
    constexpr int BM = 64;
    constexpr int A_BYTES = BM * BK * 2;          // one stage of A: 64 rows of BK halves
    constexpr int B_BOX = BK * 64 * 2;            // one B box: BK rows of 64 halves (128 bytes)
    constexpr int B_BYTES = B_BOX * (BN / 64);
    constexpr int STAGE = A_BYTES + B_BYTES;
    constexpr int A_SWIZZLE = BK == 64 ? 1 : (BK == 32 ? 2 : 3);  // 128B, 64B, 32B: rows of BK halves
    static_assert(BK == 16 || BK == 32 || BK == 64, "BK: 16, 32 or 64 (one swizzle span of A)");
    static_assert(BN == 64 || BN == 128, "BN: 64 or 128");

    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    // stages start at a 1024-byte boundary (a 128B swizzle atom), wherever the dynamic window starts
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = K / BK;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(smem_addr(&full[s]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    // the producer: slice kt of A and B into stage s, completing full[s] by STAGE bytes
    auto issue = [&](int kt, int s) {
        const uint32_t bar = smem_addr(&full[s]);
        const uint32_t a = base + s * STAGE, b = a + A_BYTES;
        mbar_expect_tx(bar, STAGE);
        tma_load_2d(a, &tmA, kt * BK, m0, bar);
        for (int j = 0; j < BN / 64; ++j) tma_load_2d(b + j * B_BOX, &tmB, n0 + 64 * j, kt * BK, bar);
    };
    if (tid == 0)
        for (int s = 0; s < STAGES && s < ktiles; ++s) issue(s, s);

    float d[BN / 2];
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(smem_addr(&full[s]), (kt / STAGES) & 1);
        const uint32_t a = base + s * STAGE, b = a + A_BYTES;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (int kk = 0; kk < BK / 16; ++kk) {
            // A: K-major rows of BK halves, 8-row atoms BK * 16 bytes apart; K step 32 bytes inside the atom
            const uint64_t da = make_desc(a + kk * 32, 16, 8 * BK * 2, A_SWIZZLE);
            // B: N-major rows of 64 halves (128 bytes), 8-row atoms 1024 bytes apart, 64-column groups a box apart
            const uint64_t db = make_desc(b + kk * 16 * 128, B_BOX, 1024, 1);
            wgmma_tile<BN>(d, da, db, (kt > 0 || kk > 0) ? 1 : 0);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncthreads();                                   // every warp is done with stage s
        if (tid == 0 && kt + STAGES < ktiles) issue(kt + STAGES, s);
    }

    // epilogue: the accumulators to a row-major 64 x BN f32 tile in shared memory, one TMA store
    float* c = reinterpret_cast<float*>(smem_raw + (base - smem_addr(smem_raw)));
    const int w = tid >> 5, g = (tid & 31) >> 2, t = tid & 3;
    for (int i = 0; i < BN / 2; ++i) {
        const int row = 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
        c[row * BN + col] = d[i];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic writes -> the TMA's reads
    __syncthreads();
    if (tid == 0) tma_store_2d(&tmC, n0, m0, base);
}
