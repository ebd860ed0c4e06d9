// C = A B in f32 on the CUDA cores, register tiled: each block computes a BM x BN tile of C with
// (BM / TM) x (BN / TN) threads, each a TM x TN block of C in registers; A and B go through shared
// memory BK at a time (A stored transposed, so a thread's TM values of A are consecutive floats:
// 16-byte shared loads, as are its TN values of B). A (M x K), B (K x N), C (M x N) row-major.
// The PROGRAM (inputs, launch, numpy reference) is in sgemm.py beside this file.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int c = threadIdx.x; c < BM * BK / 4; c += THREADS) {     // float4 reads of A, stored transposed
            int r = c / (BK / 4), k = (c % (BK / 4)) * 4;
            float4 v = *reinterpret_cast<const float4*>(&A[(row0 + r) * K + k0 + k]);
            As[k][r] = v.x; As[k + 1][r] = v.y; As[k + 2][r] = v.z; As[k + 3][r] = v.w;
        }
        for (int c = threadIdx.x; c < BK * BN / 4; c += THREADS) {
            int k = c / (BN / 4), n = (c % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[k][n]) = *reinterpret_cast<const float4*>(&B[(k0 + k) * N + col0 + n]);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
#pragma unroll
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4*>(&a[i]) = *reinterpret_cast<const float4*>(&As[k][ty * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&b[j]) = *reinterpret_cast<const float4*>(&Bs[k][tx * TN + j]);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(&C[(row0 + ty * TM + i) * N + col0 + tx * TN + j]) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}
