// GEMM loop bodies, single- vs multi-buffered: C (f32, M x N) = A (f16, M x K, row-major) x B^T
// (B f16, N x K, row-major). One JSON object per line.
//
//   gemm_timing [quick]
//
// mma_gemm<STAGES>: 128x128x32 block tile, 8 warps of 64x32, cp.async (16 B, .cg) into an XOR-
//   swizzled shared tile, ldmatrix.x4, mma.sync m16n8k16; STAGES = 1 is load / wait / compute.
// wg_gemm<STAGES>: 128x128x64 block tile, two warpgroups of m64n128k16 wgmma reading 128B-swizzled
//   tiles that thread 0 loads with TMA (one mbarrier per stage); STAGES = 1 is load / wait / compute.
// Inputs are small integers, so every C element is exact; 256 elements are checked on the host.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <algorithm>
#include <cmath>
#include <random>
#include <cuda_fp16.h>
#include "common.cuh"
#include "wgmma_forms.inc"

static bool g_quick = false;
__device__ int g_err;

// ------------------------------------------------------------------------------ mma.sync GEMM
constexpr int MBM = 128, MBN = 128, MBK = 32;

__device__ __forceinline__ uint32_t swz_off(int r, int c) {          // row of 64 B = 4 chunks
  return r * 64 + ((c ^ ((r >> 1) & 3)) << 4);
}

template <int STAGES>
__global__ void __launch_bounds__(256) mma_gemm(const half* A, const half* B, float* C, int M, int N, int K) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t sbase = smem_u32(smem);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp & 1, wn = warp >> 1;
  const int bm = blockIdx.y * MBM, bn = blockIdx.x * MBN;
  const int KT = K / MBK;
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
  auto stage_a = [&](int s) { return sbase + s * 16384; };
  auto stage_b = [&](int s) { return sbase + s * 16384 + 8192; };
  auto load = [&](int kt, int s) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
      int id = tid + h * 256, r = id >> 2, c = id & 3;
      const half* ga = A + (size_t)(bm + r) * K + kt * MBK + c * 8;
      const half* gb = B + (size_t)(bn + r) * K + kt * MBK + c * 8;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(stage_a(s) + swz_off(r, c)), "l"(ga) : "memory");
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(stage_b(s) + swz_off(r, c)), "l"(gb) : "memory");
    }
  };
  auto compute = [&](int s) {
#pragma unroll
    for (int kk = 0; kk < 2; kk++) {
      uint32_t a[4][4], b[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; mi++) {
        int r = wm * 64 + mi * 16 + (lane & 15), c = kk * 2 + (lane >> 4);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(a[mi][0]), "=r"(a[mi][1]), "=r"(a[mi][2]), "=r"(a[mi][3]) : "r"(stage_a(s) + swz_off(r, c)));
      }
#pragma unroll
      for (int np = 0; np < 2; np++) {
        int r = wn * 32 + np * 16 + (lane & 7) + ((lane >> 4) << 3), c = kk * 2 + ((lane >> 3) & 1);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(b[2 * np][0]), "=r"(b[2 * np][1]), "=r"(b[2 * np + 1][0]), "=r"(b[2 * np + 1][1])
                     : "r"(stage_b(s) + swz_off(r, c)));
      }
#pragma unroll
      for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++) {
          float* d = acc[mi][ni];
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                       : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                       : "r"(a[mi][0]), "r"(a[mi][1]), "r"(a[mi][2]), "r"(a[mi][3]), "r"(b[ni][0]), "r"(b[ni][1]));
        }
    }
  };
  if (STAGES == 1) {
    for (int kt = 0; kt < KT; kt++) {
      load(kt, 0);
      asm volatile("cp.async.commit_group;" ::: "memory");
      asm volatile("cp.async.wait_group 0;" ::: "memory");
      __syncthreads();
      compute(0);
      __syncthreads();
    }
  } else {
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
      if (s < KT) load(s, s);
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kt = 0; kt < KT; kt++) {
      asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
      __syncthreads();
      int nk = kt + STAGES - 1;
      if (nk < KT) load(nk, nk % STAGES);
      asm volatile("cp.async.commit_group;" ::: "memory");
      compute(kt % STAGES);
    }
  }
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < 4; mi++)
#pragma unroll
    for (int ni = 0; ni < 4; ni++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int row = bm + wm * 64 + mi * 16 + g + 8 * (e >> 1), col = bn + wn * 32 + ni * 8 + 2 * t + (e & 1);
        C[(size_t)row * N + col] = acc[mi][ni][e];
      }
}

// ------------------------------------------------------------------------------ wgmma + TMA GEMM
constexpr int WBM = 128, WBN = 128, WBK = 64, WSTAGE_BYTES = (WBM + WBN) * WBK * 2;

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  unsigned long long t0 = clock64();
  while (true) {
    uint32_t ok;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    if (ok) return;
    if (*(volatile int*)&g_err || clock64() - t0 > 4000000000ull) { atomicAdd(&g_err, 1); return; }
  }
}

__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

template <int STAGES>
__global__ void __launch_bounds__(256) wg_gemm(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb,
                                               float* C, int M, int N, int K) {
  using F = WgForm<WG_ID_w_f16_f32_n128>;
  extern __shared__ uint8_t smem_raw[];
  uint32_t s0 = smem_u32(smem_raw);
  uint32_t pad = (1024u - (s0 & 1023u)) & 1023u;
  uint32_t base = s0 + pad;
  uint32_t bars = base + STAGES * WSTAGE_BYTES;
  const int tid = threadIdx.x, wg = tid >> 7;
  const int bm = blockIdx.y * WBM, bn = blockIdx.x * WBN;
  const int KT = K / WBK;
  if (tid == 0) {
    for (int s = 0; s < STAGES; s++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bars + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int kt, int s) {
    uint32_t bar = bars + 8 * s, sa = base + s * WSTAGE_BYTES, sb = sa + WBM * WBK * 2;
    asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" :: "r"(bar), "r"(WSTAGE_BYTES) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(sa), "l"(reinterpret_cast<uint64_t>(&ta)), "r"(kt * WBK), "r"(bm), "r"(bar) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(sb), "l"(reinterpret_cast<uint64_t>(&tb)), "r"(kt * WBK), "r"(bn), "r"(bar) : "memory");
  };
  if (tid == 0)
    for (int s = 0; s < STAGES && s < KT; s++) issue(s, s);
  uint32_t d[F::NACC];
#pragma unroll
  for (int i = 0; i < F::NACC; i++) d[i] = 0;
  uint32_t dummy[4] = {0, 0, 0, 0};
  for (int kt = 0; kt < KT; kt++) {
    int s = kt % STAGES;
    mbar_wait(bars + 8 * s, (kt / STAGES) & 1);
    uint32_t sa = base + s * WSTAGE_BYTES + wg * 64 * 128, sb = base + s * WSTAGE_BYTES + WBM * WBK * 2;
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < WBK / 16; kk++) F::run(d, sw128_desc(sa + kk * 32), sw128_desc(sb + kk * 32), dummy, 1);
    wg_commit();
    wg_wait<0>();
    __syncthreads();
    if (tid == 0 && kt + STAGES < KT) issue(kt + STAGES, s);
  }
  const int w = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < F::NACC; i++) {
    int row = bm + wg * 64 + 16 * w + g + 8 * ((i >> 1) & 1), col = bn + 8 * (i >> 2) + 2 * t + (i & 1);
    C[(size_t)row * N + col] = __uint_as_float(d[i]);
  }
}

// ------------------------------------------------------------------------------ host
static PFN_cuTensorMapEncodeTiled_v12000 g_encode = nullptr;

static bool make_map(CUtensorMap* m, const void* gptr, int inner, int outer, int box_inner, int box_outer) {
  cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
  cuuint64_t strides[1] = {(cuuint64_t)inner * 2};
  cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer};
  cuuint32_t es[2] = {1, 1};
  return g_encode(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(gptr), dims, strides, box, es,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

struct Problem {
  int M, N, K;
  std::vector<int8_t> ha, hb;
  half *A, *B;
  float* C;
};

static void check_and_print(const char* kind, int stages, Problem& p, std::vector<float>& times_ms) {
  std::vector<float> hc((size_t)p.M * p.N);
  CK(cudaMemcpy(hc.data(), p.C, hc.size() * 4, cudaMemcpyDeviceToHost));
  std::mt19937 rng(7);
  int bad = 0;
  double maxerr = 0;
  for (int s = 0; s < 256; s++) {
    int i = rng() % p.M, j = rng() % p.N;
    long long ref = 0;
    for (int k = 0; k < p.K; k++) ref += (long long)p.ha[(size_t)i * p.K + k] * p.hb[(size_t)j * p.K + k];
    double e = std::abs((double)hc[(size_t)i * p.N + j] - (double)ref);
    maxerr = std::max(maxerr, e);
    bad += e != 0;
  }
  int err = 0;
  CK(cudaMemcpyFromSymbol(&err, g_err, sizeof(int)));
  std::sort(times_ms.begin(), times_ms.end());
  double flop = 2.0 * p.M * p.N * p.K;
  printf("{\"bench\":\"gemm\",\"kernel\":\"%s\",\"stages\":%d,\"M\":%d,\"N\":%d,\"K\":%d,\"ms_min\":%.6f,\"ms_median\":%.6f,\"tflops_best\":%.2f,\"checked\":256,\"mismatches\":%d,\"max_abs_err\":%.3g,\"wait_errors\":%d,\"ms_all\":[",
         kind, stages, p.M, p.N, p.K, times_ms.front(), times_ms[times_ms.size() / 2], flop / (times_ms.front() * 1e-3) / 1e12, bad, maxerr, err);
  for (size_t i = 0; i < times_ms.size(); i++) printf("%s%.6f", i ? "," : "", times_ms[i]);
  printf("]}\n");
  fflush(stdout);
}

template <class L> static std::vector<float> time_it(L launch, int reps) {
  launch();
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  std::vector<float> t;
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  return t;
}

template <int S> static void run_mma(Problem& p, int reps) {
  int shm = S * 16384;
  CK(cudaFuncSetAttribute(mma_gemm<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));
  dim3 grid(p.N / MBN, p.M / MBM);
  CK(cudaMemset(p.C, 0, (size_t)p.M * p.N * 4));
  auto t = time_it([&] { mma_gemm<S><<<grid, 256, shm>>>(p.A, p.B, p.C, p.M, p.N, p.K); }, reps);
  check_and_print("mma_sync_cp_async", S, p, t);
}

template <int S> static void run_wg(Problem& p, int reps) {
  CUtensorMap ta, tb;
  if (!make_map(&ta, p.A, p.K, p.M, WBK, WBM) || !make_map(&tb, p.B, p.K, p.N, WBK, WBN)) {
    printf("{\"bench\":\"gemm\",\"kernel\":\"wgmma_tma\",\"stages\":%d,\"error\":\"tensor map\"}\n", S);
    return;
  }
  int shm = S * WSTAGE_BYTES + 1024 + 8 * S;
  CK(cudaFuncSetAttribute(wg_gemm<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));
  dim3 grid(p.N / WBN, p.M / WBM);
  CK(cudaMemset(p.C, 0, (size_t)p.M * p.N * 4));
  auto t = time_it([&] { wg_gemm<S><<<grid, 256, shm>>>(ta, tb, p.C, p.M, p.N, p.K); }, reps);
  check_and_print("wgmma_tma", S, p, t);
}

int main(int argc, char** argv) {
  g_quick = argc > 1 && std::string(argv[1]) == "quick";
  cudaDriverEntryPointQueryResult q;
  void* fn = nullptr;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess)
    g_encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
  std::vector<int> sizes = g_quick ? std::vector<int>{1024} : std::vector<int>{2048, 4096};
  for (int n : sizes) {
    Problem p;
    p.M = p.N = p.K = n;
    std::mt19937 rng(1234 + n);
    p.ha.resize((size_t)n * n);
    p.hb.resize((size_t)n * n);
    for (auto& v : p.ha) v = (int8_t)((int)(rng() % 5) - 2);
    for (auto& v : p.hb) v = (int8_t)((int)(rng() % 5) - 2);
    std::vector<half> tmp((size_t)n * n);
    CK(cudaMalloc(&p.A, tmp.size() * 2)); CK(cudaMalloc(&p.B, tmp.size() * 2)); CK(cudaMalloc(&p.C, tmp.size() * 4));
    for (size_t i = 0; i < tmp.size(); i++) tmp[i] = __float2half((float)p.ha[i]);
    CK(cudaMemcpy(p.A, tmp.data(), tmp.size() * 2, cudaMemcpyHostToDevice));
    for (size_t i = 0; i < tmp.size(); i++) tmp[i] = __float2half((float)p.hb[i]);
    CK(cudaMemcpy(p.B, tmp.data(), tmp.size() * 2, cudaMemcpyHostToDevice));
    int reps = g_quick ? 2 : 5;
    run_mma<1>(p, reps); run_mma<2>(p, reps); run_mma<3>(p, reps); run_mma<4>(p, reps);
    if (g_encode) { run_wg<1>(p, reps); run_wg<2>(p, reps); run_wg<3>(p, reps); run_wg<4>(p, reps); }
    CK(cudaFree(p.A)); CK(cudaFree(p.B)); CK(cudaFree(p.C));
  }
  return 0;
}
