// C = A B with CUDA C++'s warp matrix functions (nvcuda::wmma): A (M x K) and B (K x N) row-major
// in f16 or bf16, C (M x N) row-major in f32. Each block computes a BM x BN tile of C with four
// warps, each a WM x WN tile of 16 x 16 accumulator fragments; tiles of A and B go through shared
// memory BK columns (rows) at a time, each thread copying 16-byte chunks (coalesced), padded by
// PAD elements per row (PAD = 8: the rows of a fragment load fall in different banks).
// The PROGRAM (inputs, launch, numpy reference) is in wmma_gemm.py beside this file.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

template <typename T, int BM, int BN, int BK, int WM, int WN, int PAD>
__global__ void wmma_gemm(const T* A, const T* B, float* C, int M, int N, int K) {
    constexpr int WARPS_N = BN / WN;
    constexpr int THREADS = (BM / WM) * WARPS_N * 32;
    constexpr int FM = WM / 16, FN = WN / 16;
    __shared__ __align__(32) T As[BM][BK + PAD];
    __shared__ __align__(32) T Bs[BK][BN + PAD];
    const int warp = threadIdx.x / 32, wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
    for (int i = 0; i < FM; i++)
        for (int j = 0; j < FN; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS) {          // 8 elements per 16 bytes
            int r = c / (BK / 8), k = (c % (BK / 8)) * 8;
            *reinterpret_cast<uint4*>(&As[r][k]) = *reinterpret_cast<const uint4*>(&A[(row0 + r) * K + k0 + k]);
        }
        for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS) {
            int k = c / (BN / 8), n = (c % (BN / 8)) * 8;
            *reinterpret_cast<uint4*>(&Bs[k][n]) = *reinterpret_cast<const uint4*>(&B[(k0 + k) * N + col0 + n]);
        }
        __syncthreads();
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[FN];
            for (int i = 0; i < FM; i++)
                wmma::load_matrix_sync(a[i], &As[wm * WM + 16 * i][kk], BK + PAD);
            for (int j = 0; j < FN; j++)
                wmma::load_matrix_sync(b[j], &Bs[kk][wn * WN + 16 * j], BN + PAD);
            for (int i = 0; i < FM; i++)
                for (int j = 0; j < FN; j++)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < FM; i++)
        for (int j = 0; j < FN; j++)
            wmma::store_matrix_sync(&C[(row0 + wm * WM + 16 * i) * N + col0 + wn * WN + 16 * j], acc[i][j], N,
                                    wmma::mem_row_major);
}
