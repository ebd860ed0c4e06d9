// Latency / issue-interval microbenchmarks for gpusim presets (pointer chase, dependent chains).
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <random>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("CUDA error %s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

__device__ __forceinline__ uint64_t gtime() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

template <int MODE> __device__ __forceinline__ uint64_t ld(uint64_t a) {
  uint64_t v;
  if (MODE == 0) asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
  else           asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
  return v;
}

template <int MODE>
__global__ void chase(uint64_t start, int warm, int iters, uint64_t* res) {
  uint64_t p = start;
  for (int i = 0; i < warm; i++) p = ld<MODE>(p);
  uint64_t g0 = gtime();
  uint64_t t0 = clock64();
#pragma unroll 8
  for (int i = 0; i < iters; i++) p = ld<MODE>(p);
  uint64_t t1 = clock64();
  uint64_t g1 = gtime();
  res[0] = t1 - t0; res[1] = g1 - g0; res[2] = p;
}

__global__ void shared_chase(int n, int iters, uint64_t* res) {
  __shared__ uint32_t s[4096];
  uint32_t base = (uint32_t)__cvta_generic_to_shared(s);
  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = base + 4u * (uint32_t)((i * 97 + 13) % n);
  __syncthreads();
  uint32_t a = base;
  for (int i = 0; i < 64; i++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
  uint64_t t0 = clock64();
#pragma unroll 8
  for (int i = 0; i < iters; i++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
  uint64_t t1 = clock64();
  if (threadIdx.x == 0) { res[0] = t1 - t0; res[2] = a; }
}

// Dependent chains: latency. 1 warp.
#define CHAIN(NAME, T, ASM, CONS)                                                      \
__global__ void lat_##NAME(T x, T y, T z, int iters, uint64_t* res, T* sink) {          \
  x = x + (T)(threadIdx.x & 3);                                                         \
  uint64_t t0 = clock64();                                                              \
  for (int i = 0; i < iters; i++) {                                                     \
    _Pragma("unroll") for (int k = 0; k < 16; k++) asm volatile(ASM : "+" CONS(x) : CONS(y), CONS(z)); \
  }                                                                                     \
  uint64_t t1 = clock64();                                                              \
  if (threadIdx.x == 0) { res[0] = t1 - t0; } sink[threadIdx.x] = x;                    \
}
#define RF "f"
#define RD "d"
#define RR "r"
CHAIN(ffma, float, "fma.rn.f32 %0, %0, %1, %2;", RF)
CHAIN(dfma, double, "fma.rn.f64 %0, %0, %1, %2;", RD)
CHAIN(imad, uint32_t, "mad.lo.u32 %0, %0, %1, %2;", RR)
CHAIN(iaddxor, uint32_t, "add.u32 %0, %0, %1; xor.b32 %0, %0, %2;", RR)
CHAIN(hfma2, uint32_t, "fma.rn.f16x2 %0, %0, %1, %2;", RR)
CHAIN(mufu, float, "ex2.approx.ftz.f32 %0, %0; add.f32 %0, %0, %1; add.f32 %0, %0, %2;", RF)
CHAIN(fadd2, float, "add.f32 %0, %0, %1; add.f32 %0, %0, %2;", RF)
CHAIN(shfl, uint32_t, "shfl.sync.idx.b32 %0, %0, %0, 31, -1; // %1 %2", RR)
CHAIN(shf, uint32_t, "shf.l.wrap.b32 %0, %0, %0, %0; // %1 %2", RR)

// Throughput: 8 independent chains per thread, one warp per SMSP (4 warps), cycles per warp instruction per SMSP.
#define TPUT(NAME, T, ASM, CONS)                                                        \
__global__ void tp_##NAME(T x, T y, T z, int iters, uint64_t* res, T* sink) {            \
  x = x + (T)(threadIdx.x & 3);                                                           \
  T a0 = x, a1 = x + (T)1, a2 = x + (T)2, a3 = x + (T)3, a4 = x + (T)4, a5 = x + (T)5, a6 = x + (T)6, a7 = x + (T)7; \
  __syncthreads();                                                                       \
  uint64_t t0 = clock64();                                                               \
  for (int i = 0; i < iters; i++) {                                                      \
    _Pragma("unroll") for (int k = 0; k < 4; k++) {                                      \
      asm volatile(ASM : "+" CONS(a0) : CONS(y), CONS(z)); asm volatile(ASM : "+" CONS(a1) : CONS(y), CONS(z)); \
      asm volatile(ASM : "+" CONS(a2) : CONS(y), CONS(z)); asm volatile(ASM : "+" CONS(a3) : CONS(y), CONS(z)); \
      asm volatile(ASM : "+" CONS(a4) : CONS(y), CONS(z)); asm volatile(ASM : "+" CONS(a5) : CONS(y), CONS(z)); \
      asm volatile(ASM : "+" CONS(a6) : CONS(y), CONS(z)); asm volatile(ASM : "+" CONS(a7) : CONS(y), CONS(z)); \
    }                                                                                    \
  }                                                                                      \
  uint64_t t1 = clock64();                                                               \
  __syncthreads();                                                                       \
  if (threadIdx.x == 0) res[0] = t1 - t0;                                                \
  sink[threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;                             \
}
TPUT(ffma, float, "fma.rn.f32 %0, %0, %1, %2;", RF)
TPUT(dfma, double, "fma.rn.f64 %0, %0, %1, %2;", RD)
TPUT(imad, uint32_t, "mad.lo.u32 %0, %0, %1, %2;", RR)
TPUT(shf, uint32_t, "shf.l.wrap.b32 %0, %0, %0, %1; // %2", RR)
TPUT(iaddxor, uint32_t, "xor.b32 %0, %0, %1; add.u32 %0, %0, %2;", RR)
TPUT(hfma2, uint32_t, "fma.rn.f16x2 %0, %0, %1, %2;", RR)
TPUT(mufu, float, "ex2.approx.ftz.f32 %0, %0;", RF)
TPUT(shfl, uint32_t, "shfl.sync.idx.b32 %0, %0, %0, 31, -1; // %1 %2", RR)

__global__ void barrier_loop(int iters, uint64_t* res) {
  __syncthreads();
  uint64_t t0 = clock64();
  for (int i = 0; i < iters; i++) __syncthreads();
  uint64_t t1 = clock64();
  if (threadIdx.x == 0) res[0] = t1 - t0;
}

__global__ void flush(uint4* buf, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = buf[i]; v.x += 1; buf[i] = v;
  }
}

static uint64_t* d_res;
static uint64_t h_res[4];

// Build a chase over `nodes` lines, `stride` bytes apart, in a random (or sequential) order.
static uint64_t build(uint8_t* dbuf, size_t nodes, size_t stride, bool random, uint64_t seed) {
  std::vector<size_t> order(nodes);
  for (size_t i = 0; i < nodes; i++) order[i] = i;
  if (random) { std::mt19937_64 g(seed); std::shuffle(order.begin() + 1, order.end(), g); }
  size_t span = nodes * stride;
  std::vector<uint8_t> host(span, 0);
  for (size_t i = 0; i < nodes; i++) {
    uint64_t next = (uint64_t)(dbuf + order[(i + 1) % nodes] * stride);
    memcpy(&host[order[i] * stride], &next, 8);
  }
  CK(cudaMemcpy(dbuf, host.data(), span, cudaMemcpyHostToDevice));
  return (uint64_t)(dbuf + order[0] * stride);
}

template <int MODE>
static void run_chase(const char* name, uint8_t* dbuf, size_t nodes, size_t stride, bool random, int warm, int iters,
                      uint4* fl, size_t fln) {
  uint64_t s = build(dbuf, nodes, stride, random, 1234);
  if (fl) { flush<<<1024, 256>>>(fl, fln); CK(cudaGetLastError()); CK(cudaDeviceSynchronize()); }
  chase<MODE><<<1, 1>>>(s, warm, iters, d_res);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(h_res, d_res, 24, cudaMemcpyDeviceToHost));
  printf("%-34s %8.1f cycles  %7.1f ns  (footprint %zu KiB, stride %zu, %s)\n", name, (double)h_res[0] / iters,
         (double)h_res[1] / iters, nodes * stride / 1024, stride, random ? "random" : "sequential");
}

typedef void (*lat_f)(float, float, float, int, uint64_t*, float*);

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int clk = 0, memclk = 0, busw = 0, l2 = 0, l2persist = 0, smemsm = 0, smemoptin = 0, resv = 0, regsm = 0, maxblk = 0;
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&memclk, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&busw, cudaDevAttrGlobalMemoryBusWidth, 0);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
  cudaDeviceGetAttribute(&l2persist, cudaDevAttrMaxPersistingL2CacheSize, 0);
  cudaDeviceGetAttribute(&smemsm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0);
  cudaDeviceGetAttribute(&smemoptin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
  cudaDeviceGetAttribute(&resv, cudaDevAttrReservedSharedMemoryPerBlock, 0);
  cudaDeviceGetAttribute(&regsm, cudaDevAttrMaxRegistersPerMultiprocessor, 0);
  cudaDeviceGetAttribute(&maxblk, cudaDevAttrMaxBlocksPerMultiprocessor, 0);
  printf("device %s cc %d.%d SMs %d clockRate %d kHz memClock %d kHz busWidth %d bits totalMem %zu\n", p.name, p.major,
         p.minor, p.multiProcessorCount, clk, memclk, busw, p.totalGlobalMem);
  printf("l2CacheSize %d persistingL2Max %d smemPerSM %d smemOptin %d reservedSmemPerBlock %d regsPerSM %d "
         "maxThreadsPerSM %d maxBlocksPerSM %d\n", l2, l2persist, smemsm, smemoptin, resv, regsm,
         p.maxThreadsPerMultiProcessor, maxblk);

  CK(cudaMalloc(&d_res, 64));
  size_t big = (size_t)1 << 30;
  uint8_t* dbuf; CK(cudaMalloc(&dbuf, big));
  size_t fln = ((size_t)512 << 20) / 16; uint4* fl; CK(cudaMalloc(&fl, fln * 16)); CK(cudaMemset(fl, 0, fln * 16));

  // Shared
  shared_chase<<<1, 32>>>(1024, 4096, d_res); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(h_res, d_res, 24, cudaMemcpyDeviceToHost));
  printf("%-34s %8.1f cycles\n", "shared ld.shared.u32 chase", (double)h_res[0] / 4096);

  // L1: 16 KiB, stride 128, warmed
  run_chase<0>("L1 hit (ld.ca, 16KiB)", dbuf, 128, 128, true, 1024, 8192, nullptr, 0);
  run_chase<0>("L1 hit (ld.ca, 16KiB, stride 32)", dbuf, 512, 32, true, 2048, 8192, nullptr, 0);
  // L2: 4 MiB footprint, .cg bypasses L1, warmed
  run_chase<1>("L2 hit (ld.cg, 4MiB)", dbuf, 32768, 128, true, 32768, 32768, nullptr, 0);
  run_chase<1>("L2 hit (ld.cg, 256KiB)", dbuf, 2048, 128, true, 4096, 16384, nullptr, 0);
  run_chase<0>("L2 hit via L1 miss (ld.ca, 4MiB)", dbuf, 32768, 128, true, 32768, 32768, nullptr, 0);
  // DRAM: lines visited once after flushing L2 with another buffer
  run_chase<1>("DRAM (ld.cg, 16MiB window)", dbuf, 16384, 1024, true, 0, 8192, fl, fln);
  run_chase<1>("DRAM (ld.cg, 256MiB window)", dbuf, 131072, 2048, true, 0, 8192, fl, fln);
  run_chase<1>("DRAM (ld.cg, 1GiB window)", dbuf, 262144, 4096, true, 0, 8192, fl, fln);
  run_chase<0>("DRAM via L1 miss (ld.ca, 16MiB)", dbuf, 16384, 1024, true, 0, 8192, fl, fln);

  // Latency chains: 1 warp, iters*16 dependent ops
  const int IT = 1024;
  float* fsink; CK(cudaMalloc(&fsink, 8 * 1024 * 8));
#define RUNLAT(NAME, T, a, b, c, PER)                                                                   \
  { lat_##NAME<<<1, 32>>>((T)a, (T)b, (T)c, IT, d_res, (T*)fsink); CK(cudaGetLastError());               \
    CK(cudaDeviceSynchronize()); CK(cudaMemcpy(h_res, d_res, 8, cudaMemcpyDeviceToHost));                 \
    printf("lat %-10s %6.2f cycles per dependent op (%d ops/asm)\n", #NAME, (double)h_res[0] / (IT * 16.0 * PER), PER); }
  RUNLAT(ffma, float, 1.0001f, 0.999f, 0.5f, 1)
  RUNLAT(dfma, double, 1.0001, 0.999, 0.5, 1)
  RUNLAT(imad, uint32_t, 3, 5, 7, 1)
  RUNLAT(iaddxor, uint32_t, 3, 5, 7, 2)
  RUNLAT(shf, uint32_t, 3, 5, 7, 1)
  RUNLAT(hfma2, uint32_t, 0x3c003c00u, 0x3c003c00u, 0, 1)
  RUNLAT(fadd2, float, 1.0f, 0.5f, 0.25f, 2)
  RUNLAT(mufu, float, 1.0f, 0.5f, 0.25f, 1)
  RUNLAT(shfl, uint32_t, 3, 0, 0, 1)
  printf("  (mufu line includes two dependent FADDs: subtract 2x fadd2)\n");

  // Throughput: 4 warps (one per SMSP) and 8 warps, 8 chains each, iters*32 ops per warp
  const int TI = 512;
#define RUNTP(NAME, T, a, b, c, WARPS)                                                                  \
  { tp_##NAME<<<1, 32 * WARPS>>>((T)a, (T)b, (T)c, TI, d_res, (T*)fsink); CK(cudaGetLastError());        \
    CK(cudaDeviceSynchronize()); CK(cudaMemcpy(h_res, d_res, 8, cudaMemcpyDeviceToHost));                 \
    printf("tput %-6s warps=%2d  %6.2f cycles per warp-inst per SMSP\n", #NAME, WARPS,                     \
           (double)h_res[0] / (TI * 32.0 * (WARPS / 4.0))); }
  for (int w : {4, 16}) {
    if (w == 4) {
      RUNTP(ffma, float, 1.0f, 0.999f, 0.5f, 4) RUNTP(dfma, double, 1.0, 0.999, 0.5, 4)
      RUNTP(imad, uint32_t, 3, 5, 7, 4) RUNTP(shf, uint32_t, 3, 5, 7, 4) RUNTP(iaddxor, uint32_t, 3, 5, 7, 4)
      RUNTP(hfma2, uint32_t, 0x3c003c00u, 0x3c003c00u, 0, 4) RUNTP(mufu, float, 1.0f, 0.f, 0.f, 4)
      RUNTP(shfl, uint32_t, 3, 0, 0, 4)
    } else {
      RUNTP(ffma, float, 1.0f, 0.999f, 0.5f, 16) RUNTP(dfma, double, 1.0, 0.999, 0.5, 16)
      RUNTP(imad, uint32_t, 3, 5, 7, 16) RUNTP(shf, uint32_t, 3, 5, 7, 16) RUNTP(iaddxor, uint32_t, 3, 5, 7, 16)
      RUNTP(hfma2, uint32_t, 0x3c003c00u, 0x3c003c00u, 0, 16) RUNTP(mufu, float, 1.0f, 0.f, 0.f, 16)
      RUNTP(shfl, uint32_t, 3, 0, 0, 16)
    }
  }
  for (int t : {32, 128, 1024}) {
    barrier_loop<<<1, t>>>(4096, d_res); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h_res, d_res, 8, cudaMemcpyDeviceToHost));
    printf("barrier loop %4d threads: %6.1f cycles per __syncthreads\n", t, (double)h_res[0] / 4096);
  }
  printf("done\n");
  return 0;
}
