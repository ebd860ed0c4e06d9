// Tensor-pipe timing: mma.sync (HMMA/IMMA/DMMA) and wgmma (HGMMA/IGMMA/QGMMA) issue interval and
// latency. Prints one JSON object per line; validate/semantics/tensor_probe.py collects them.
//
//   tensor_timing [quick]
//
// mma.sync: each warp runs `iters` x ILP mma on ILP independent accumulators (ILP = 1: a dependent
// chain, the latency), one block of W warps on one SM (warp w on sub-partition w % 4); clock64 per
// warp. Then the whole GPU (4 blocks of 8 warps per SM, ILP 4) with cudaEvent totals.
// wgmma: each warpgroup runs `iters` x { wgmma.fence; G wgmma on one accumulator; commit;
// wait_group DEPTH }, operands from shared memory through descriptors given at run time
// (K-major, 128B swizzle, or no swizzle), WG warpgroups per block on one SM.
#include "common.cuh"
#include "mma_forms.inc"
#include "wgmma_forms.inc"

static bool g_quick = false;

template <int ID, int ILP>
__global__ void mma_tp(int iters, unsigned long long* out, uint32_t seed) {
  using F = MmaForm<ID>;
  uint32_t a[F::NA], b[F::NB], acc[ILP][F::NC];
  uint32_t lane = threadIdx.x & 31;
  // small finite values in every format (f16 0x2xxx, bf16/tf32/f32 0x3xxx.., fp8 0x2x, ints)
#pragma unroll
  for (int i = 0; i < F::NA; i++) a[i] = (0x21212121u ^ (seed * (lane + 3 * i + 1))) & 0x3F3F3F3Fu;
#pragma unroll
  for (int i = 0; i < F::NB; i++) b[i] = (0x21212121u ^ (seed * (lane + 5 * i + 7))) & 0x3F3F3F3Fu;
#pragma unroll
  for (int j = 0; j < ILP; j++)
#pragma unroll
    for (int i = 0; i < F::NC; i++) acc[j][i] = 0;
  __syncthreads();
  unsigned long long t0 = clock64(), g0 = gtimer();
#pragma unroll 4
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int j = 0; j < ILP; j++) F::run(acc[j], a, b, acc[j]);
  }
  unsigned long long t1 = clock64(), g1 = gtimer();
  uint32_t sink = 0;
#pragma unroll
  for (int j = 0; j < ILP; j++)
#pragma unroll
    for (int i = 0; i < F::NC; i++) sink ^= acc[j][i];
  int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (lane == 0) { out[w * 5 + 0] = t0; out[w * 5 + 1] = t1; out[w * 5 + 2] = g0; out[w * 5 + 3] = g1; out[w * 5 + 4] = sink; }
}

template <int ID, int ILP>
static void bench_mma(const char* name, int id, int nsm) {
  using F = MmaForm<ID>;
  int iters = g_quick ? 256 : 2048;
  unsigned long long* d;
  int maxw = 64 * nsm;
  CK(cudaMalloc(&d, sizeof(unsigned long long) * 5 * maxw));
  std::vector<unsigned long long> h(5 * maxw);
  int wlist[] = {1, 2, 4, 8, 12, 16};
  mma_tp<ID, ILP><<<1, 32>>>(16, d, 12345u);               // warm-up (module load, clocks)
  CK(cudaDeviceSynchronize());
  for (int W : wlist) {
    mma_tp<ID, ILP><<<1, 32 * W>>>(iters, d, 12345u);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), d, sizeof(unsigned long long) * 5 * W, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull, t1 = 0, g0 = ~0ull, g1 = 0;
    printf("{\"bench\":\"mma_sm\",\"form\":\"%s\",\"form_id\":%d,\"ilp\":%d,\"warps\":%d,\"iters\":%d,\"warp_cycles\":[", name, id, ILP, W, iters);
    for (int w = 0; w < W; w++) {
      t0 = std::min(t0, h[w * 5]); t1 = std::max(t1, h[w * 5 + 1]);
      g0 = std::min(g0, h[w * 5 + 2]); g1 = std::max(g1, h[w * 5 + 3]);
      printf("%s%llu", w ? "," : "", h[w * 5 + 1] - h[w * 5]);
    }
    printf("],\"span_cycles\":%llu,\"span_ns\":%llu}\n", t1 - t0, g1 - g0);
  }
  if (ILP == 4) {                                            // whole GPU
    int blocks = 4 * nsm, W = 8;
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    mma_tp<ID, ILP><<<blocks, 32 * W>>>(iters, d, 777u);
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0));
    mma_tp<ID, ILP><<<blocks, 32 * W>>>(iters, d, 777u);
    CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("{\"bench\":\"mma_gpu\",\"form\":\"%s\",\"form_id\":%d,\"ilp\":%d,\"warps_per_block\":%d,\"blocks\":%d,\"iters\":%d,\"ms\":%.6f,\"mma_total\":%lld}\n",
           name, id, ILP, W, blocks, iters, ms, (long long)blocks * W * iters * ILP);
    CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  }
  CK(cudaFree(d));
  fflush(stdout);
}

// ------------------------------------------------------------------------------- wgmma
template <int ID, int G, int DEPTH>
__global__ void wg_tp(int iters, uint64_t da_rel, uint64_t db_rel, int fill_bytes, unsigned long long* out) {
  using F = WgForm<ID>;
  extern __shared__ uint8_t smem_raw[];
  uint32_t s0 = smem_u32(smem_raw);
  uint32_t pad = (1024u - (s0 & 1023u)) & 1023u;
  uint8_t* sm = smem_raw + pad;
  for (int i = threadIdx.x; i < fill_bytes / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(sm)[i] = 0x21212121u ^ (i * 0x01010101u & 0x0F0F0F0Fu);
  fence_proxy_async();
  __syncthreads();
  uint64_t base = (uint64_t)(((s0 + pad) >> 4) & 0x3FFF);
  uint64_t da = da_rel + base, db = db_rel + base;
  uint32_t a[4] = {0x21212121u, 0x21232123u, 0x22212221u, 0x21212321u};
  uint32_t d[F::NACC];
#pragma unroll
  for (int i = 0; i < F::NACC; i++) d[i] = 0;
  unsigned long long t0 = clock64(), g0 = gtimer();
#pragma unroll 1
  for (int it = 0; it < iters; it++) {
    wg_fence();
#pragma unroll
    for (int g = 0; g < G; g++) F::run(d, da, db, a, 1);
    wg_commit();
    wg_wait<DEPTH>();
  }
  wg_wait<0>();
  unsigned long long t1 = clock64(), g1 = gtimer();
  uint32_t sink = 0;
#pragma unroll
  for (int i = 0; i < F::NACC; i++) sink ^= d[i];
  int wg = threadIdx.x >> 7;
  if ((threadIdx.x & 127) == 0) {
    int o = (blockIdx.x * (blockDim.x >> 7) + wg) * 5;
    out[o] = t0; out[o + 1] = t1; out[o + 2] = g0; out[o + 3] = g1; out[o + 4] = sink;
  }
}

static uint64_t desc_of(uint32_t start, uint32_t lbo, uint32_t sbo, int swz) {
  return (uint64_t)((start >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | ((uint64_t)swz << 62);
}

template <int ID, int G, int DEPTH>
static void bench_wg_one(const char* name, int id, int wgs, int swz, int nsm, bool gpu, unsigned long long* d) {
  using F = WgForm<ID>;
  int iters = g_quick ? 64 : 512;
  // A: 64 rows x 128 B (8 KB) at 0; B: N rows x 128 B at 8 KB (128B swizzle, K-major);
  // no swizzle: core matrices 8 x 16 B, LBO (K) 128 B, SBO (M/N) 256 B
  uint64_t da, db;
  if (swz == 1) { da = desc_of(0, 16, 1024, 1); db = desc_of(8192, 16, 1024, 1); }
  else { da = desc_of(0, 128, 256, 0); db = desc_of(8192, 128, 256, 0); }
  int fill = 8192 + F::N * 128;
  int shm = fill + 1024;
  CK(cudaFuncSetAttribute(wg_tp<ID, G, DEPTH>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));
  wg_tp<ID, G, DEPTH><<<1, 128, shm>>>(4, da, db, fill, d);    // warm-up
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  std::vector<unsigned long long> h(5 * wgs);
  if (!gpu) {
    wg_tp<ID, G, DEPTH><<<1, 128 * wgs, shm>>>(iters, da, db, fill, d);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), d, sizeof(unsigned long long) * 5 * wgs, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull, t1 = 0, g0 = ~0ull, g1 = 0;
    printf("{\"bench\":\"wgmma_sm\",\"form\":\"%s\",\"form_id\":%d,\"n\":%d,\"group\":%d,\"depth\":%d,\"warpgroups\":%d,\"swizzle\":%d,\"iters\":%d,\"wg_cycles\":[",
           name, id, F::N, G, DEPTH, wgs, swz, iters);
    for (int w = 0; w < wgs; w++) {
      t0 = std::min(t0, h[w * 5]); t1 = std::max(t1, h[w * 5 + 1]);
      g0 = std::min(g0, h[w * 5 + 2]); g1 = std::max(g1, h[w * 5 + 3]);
      printf("%s%llu", w ? "," : "", h[w * 5 + 1] - h[w * 5]);
    }
    printf("],\"span_cycles\":%llu,\"span_ns\":%llu}\n", t1 - t0, g1 - g0);
  } else {
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0));
    wg_tp<ID, G, DEPTH><<<nsm, 128 * wgs, shm>>>(iters, da, db, fill, d);
    CK(cudaEventRecord(e1)); CK(cudaGetLastError()); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("{\"bench\":\"wgmma_gpu\",\"form\":\"%s\",\"form_id\":%d,\"n\":%d,\"group\":%d,\"depth\":%d,\"warpgroups\":%d,\"swizzle\":%d,\"blocks\":%d,\"iters\":%d,\"ms\":%.6f,\"wgmma_total\":%lld}\n",
           name, id, F::N, G, DEPTH, wgs, swz, nsm, iters, ms, (long long)nsm * wgs * iters * G);
    CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  }
  fflush(stdout);
}

template <int ID>
static void bench_wg(const char* name, int id, int nsm) {
  using F = WgForm<ID>;
  unsigned long long* d;
  CK(cudaMalloc(&d, sizeof(unsigned long long) * 5 * 4 * nsm));
  int maxwg = F::NACC >= 128 ? 2 : (F::NACC >= 64 ? 3 : 4);
  bench_wg_one<ID, 1, 0>(name, id, 1, 1, nsm, false, d);      // latency
  bench_wg_one<ID, 1, 0>(name, id, 1, 0, nsm, false, d);
  for (int wgs = 1; wgs <= maxwg; wgs++) {
    bench_wg_one<ID, 4, 1>(name, id, wgs, 1, nsm, false, d);
    if (!g_quick) bench_wg_one<ID, 4, 0>(name, id, wgs, 1, nsm, false, d);
  }
  if (!g_quick) {
    bench_wg_one<ID, 16, 1>(name, id, 1, 1, nsm, false, d);
    bench_wg_one<ID, 16, 1>(name, id, 2 <= maxwg ? 2 : 1, 1, nsm, false, d);
    bench_wg_one<ID, 4, 1>(name, id, 1, 0, nsm, false, d);   // no swizzle: operand bank behaviour
  }
  bench_wg_one<ID, 4, 1>(name, id, 2 <= maxwg ? 2 : 1, 1, nsm, true, d);   // whole GPU
  CK(cudaFree(d));
}

#ifndef PART            // the driver builds NPARTS binaries (-DPART=i -DNPARTS=n) in parallel
#define PART 0
#define NPARTS 1
#endif

template <int I> static void part_mma(int nsm) {
  if constexpr (I % NPARTS == PART) {
    bench_mma<I, 1>("", I, nsm); bench_mma<I, 2>("", I, nsm); bench_mma<I, 4>("", I, nsm);
    if (!g_quick) bench_mma<I, 8>("", I, nsm);
  }
}
template <int I> static void part_wg(int nsm) {
  if constexpr (I % NPARTS == PART) bench_wg<I>("", I, nsm);
}

int main(int argc, char** argv) {
  g_quick = argc > 1 && std::string(argv[1]) == "quick";
  int dev = 0, nsm = 0, clk = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev));
  printf("{\"bench\":\"device\",\"sms\":%d,\"clock_khz\":%d,\"part\":%d}\n", nsm, clk, PART);
#define XM(I) part_mma<I>(nsm);
  MMA_FORM_LIST(XM)
#undef XM
#define XW(I) part_wg<I>(nsm);
  WG_TIMING_LIST(XW)
#undef XW
  return 0;
}
