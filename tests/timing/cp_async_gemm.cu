// C = A B (fp32, row-major), one 32x32 tile of C per block of 16x16 threads (2x2 each), K in tiles
// of 32 brought to shared memory by cp.async: STAGES 1 waits for each tile before its math,
// STAGES 2 copies tile k+1 while tile k's math runs.
template <int STAGES>
__device__ void gemm(const float *A, const float *B, float *C, int N, int K) {
    __shared__ __align__(16) float As[STAGES][32][32];
    __shared__ __align__(16) float Bs[STAGES][32][32];
    int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
    int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    int r = t / 8, c = (t % 8) * 4;                       // this thread's float4 of each 32x32 tile
    float acc[2][2] = {{0, 0}, {0, 0}};
    auto load = [&](int stage, int k0) {
        unsigned sa = (unsigned)__cvta_generic_to_shared(&As[stage][r][c]);
        unsigned sb = (unsigned)__cvta_generic_to_shared(&Bs[stage][r][c]);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sa), "l"(A + (row0 + r) * K + k0 + c));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(sb), "l"(B + (k0 + r) * N + col0 + c));
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    int tiles = K / 32;
    if (STAGES == 2) load(0, 0);
    for (int kt = 0; kt < tiles; kt++) {
        int s = STAGES == 2 ? kt & 1 : 0;
        if (STAGES == 1) {
            load(0, kt * 32);
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        } else if (kt + 1 < tiles) {
            load((kt + 1) & 1, (kt + 1) * 32);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < 32; k++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    acc[i][j] += As[s][ty * 2 + i][k] * Bs[s][k][tx * 2 + j];
        __syncthreads();
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            C[(row0 + ty * 2 + i) * N + col0 + tx * 2 + j] = acc[i][j];
}
extern "C" __global__ void gemm_single(const float *A, const float *B, float *C, int N, int K) { gemm<1>(A, B, C, N, K); }
extern "C" __global__ void gemm_double(const float *A, const float *B, float *C, int N, int K) { gemm<2>(A, B, C, N, K); }
