// C = A B with inline PTX: mma.sync.m16n8k16 (f16 in, f32 accumulate), ldmatrix from shared
// memory, and cp.async copies of the next tile while the tensor cores work on this one.
// A (M x K) and B (K x N) row-major f16, C (M x N) row-major f32. Each block computes a BM x BN
// tile of C with four warps (2 x 2), each a (BM/2) x (BN/2) tile of m16n8 accumulators.
// STAGES = 2: double-buffered (tile t + 1 is copied by cp.async while tile t is multiplied);
// STAGES = 1: the same kernel single-buffered (each tile is waited for before it is used).
// PAD elements per shared row (8: the 8 row addresses of an ldmatrix fall in different banks;
// 0: A rows 64 bytes apart share banks 4 ways, B rows 128 bytes apart 8 ways).
// The PROGRAM (inputs, launch, numpy reference) is in mma_gemm.py beside this file.
#include <cuda_fp16.h>

// The PTX instructions as macros, not functions, so that each shows (in gpusim's source view, its
// bank and coalescing maps and the sanitizer's reports) on the line that uses it.
__device__ __forceinline__ unsigned smem(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
#define CP_ASYNC16(dst, src) \
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem(dst)), "l"(src))
#define CP_ASYNC_COMMIT() asm volatile("cp.async.commit_group;\n" ::)
#define CP_ASYNC_WAIT(n) asm volatile("cp.async.wait_group %0;\n" :: "n"(n))
#define LDMATRIX_X4(r, p) \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n" \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem(p)))
#define LDMATRIX_X4_TRANS(r, p) \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n" \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem(p)))
#define MMA16816(d, a, b0, b1) \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 " \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n" \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

template <int BM, int BN, int STAGES, int PAD>
__global__ void mma_gemm(const half* A, const half* B, float* C, int M, int N, int K) {
    constexpr int BK = 32, THREADS = 128, WM = BM / 2, WN = BN / 2, FM = WM / 16, FN = WN / 8;
    __shared__ __align__(128) half As[STAGES][BM][BK + PAD];
    __shared__ __align__(128) half Bs[STAGES][BK][BN + PAD];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN, tiles = K / BK;
    float acc[FM][FN][4] = {};

    auto load_tile = [&](int t, int s) {                        // one 16-byte cp.async per chunk
        for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS) {
            int r = c / (BK / 8), k = (c % (BK / 8)) * 8;
            CP_ASYNC16(&As[s][r][k], &A[(row0 + r) * K + t * BK + k]);
        }
        for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS) {
            int k = c / (BN / 8), n = (c % (BN / 8)) * 8;
            CP_ASYNC16(&Bs[s][k][n], &B[(t * BK + k) * N + col0 + n]);
        }
    };

    for (int s = 0; s < STAGES - 1 && s < tiles; s++) {
        load_tile(s, s);
        CP_ASYNC_COMMIT();
    }
    for (int t = 0; t < tiles; t++) {
        int next = t + STAGES - 1;
        if (next < tiles)
            load_tile(next, next % STAGES);
        CP_ASYNC_COMMIT();
        CP_ASYNC_WAIT(STAGES - 1);                            // tile t has landed (this thread's copies)
        __syncthreads();                                        // ... and every other thread's
        const int s = t % STAGES;
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[FM][4], b[FN][2];
            for (int i = 0; i < FM; i++)                        // lanes 0-15: rows, lanes 16-31: k + 8
                LDMATRIX_X4(a[i], &As[s][wm * WM + 16 * i + lane % 16][kk + (lane / 16) * 8]);
            for (int j = 0; j < FN; j += 2) {                   // two n8 tiles of B per ldmatrix.x4.trans
                unsigned r[4];
                LDMATRIX_X4_TRANS(r, &Bs[s][kk + lane % 16][wn * WN + 8 * j + (lane / 16) * 8]);
                b[j][0] = r[0]; b[j][1] = r[1]; b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
            }
            for (int i = 0; i < FM; i++)
                for (int j = 0; j < FN; j++)
                    MMA16816(acc[i][j], a[i], b[j][0], b[j][1]);
        }
        __syncthreads();                                        // stage s is free for the copy of t + STAGES
    }
    const int g = lane / 4, q = lane % 4;
    for (int i = 0; i < FM; i++)
        for (int j = 0; j < FN; j++) {
            int r = row0 + wm * WM + 16 * i + g, c = col0 + wn * WN + 8 * j + 2 * q;
            *reinterpret_cast<float2*>(&C[r * N + c]) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(&C[(r + 8) * N + c]) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
