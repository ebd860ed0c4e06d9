// Asynchronous data movement timing: ldmatrix/stmatrix (LDSM/STSM), cp.async (LDGSTS), TMA
// (cp.async.bulk.tensor: UTMALDG/UTMASTG), plain cp.async.bulk (UBLKCP), mbarrier (SYNCS).
// One JSON object per line on stdout; validate/semantics/tensor_probe.py collects them.
//
//   copy_timing [quick]
//
// Waits on mbarriers give up after ~2 s of clock64 and count an error ("errors" in the JSON),
// so a wrong guess never hangs the run.
#include <cuda.h>
#include <cudaTypedefs.h>
#include "common.cuh"

static bool g_quick = false;
__device__ int g_err;

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ uint32_t mbar_try(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok;
}
__device__ __forceinline__ uint32_t mbar_test(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok;
}
// gives up after ~2 s, or at once (on its slow path) once any wait has given up
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  unsigned long long t0 = clock64();
  while (!mbar_try(bar, parity)) {
    if (*(volatile int*)&g_err || clock64() - t0 > 4000000000ull) { atomicAdd(&g_err, 1); return; }
  }
}

// ------------------------------------------------------------------------------- ldmatrix
// mode 0: independent loads (throughput), 1: each address depends on the previous result (latency)
template <int X, int TRANS, int ST>
__global__ void ldsm_tp(int iters, int stride, int mode, unsigned long long* out) {
  __shared__ __align__(1024) uint8_t sm[32768];
  for (int i = threadIdx.x; i < 32768 / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(sm)[i] = 0;
  __syncthreads();
  int lane = threadIdx.x & 31;
  int mat = (lane >> 3) % X, row = lane & 7;
  uint32_t addr = smem_u32(sm) + mat * 8 * stride + row * stride;
  uint32_t acc = 0, r0 = 0, r1 = 0, r2 = 0, r3 = 0;
  uint32_t v = lane * 0x00010001u;
  unsigned long long t0 = clock64();
#pragma unroll 8
  for (int it = 0; it < iters; it++) {
    if (ST) {
      if (X == 1 && !TRANS) asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(addr), "r"(v) : "memory");
      if (X == 2 && !TRANS) asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1,%1};" :: "r"(addr), "r"(v) : "memory");
      if (X == 4 && !TRANS) asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%1,%1,%1};" :: "r"(addr), "r"(v) : "memory");
      if (X == 4 && TRANS) asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%1,%1,%1};" :: "r"(addr), "r"(v) : "memory");
      v += 1;
    } else {
      if (X == 1 && !TRANS) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(addr) : "memory");
      if (X == 2 && !TRANS) asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr) : "memory");
      if (X == 4 && !TRANS) asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
      if (X == 1 && TRANS) asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(addr) : "memory");
      if (X == 2 && TRANS) asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr) : "memory");
      if (X == 4 && TRANS) asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
      if (mode) addr += r0;                       // shared memory holds zeros: a true dependency
      else acc ^= r0 ^ r1 ^ r2 ^ r3;
    }
  }
  unsigned long long t1 = clock64();
  int w = threadIdx.x >> 5;
  if (lane == 0) { out[w * 3] = t0; out[w * 3 + 1] = t1; out[w * 3 + 2] = acc + addr; }
}

template <int X, int TRANS, int ST>
static void bench_ldsm(unsigned long long* d) {
  int iters = g_quick ? 256 : 4096;
  std::vector<unsigned long long> h(3 * 32);
  int strides[] = {16, 32, 64, 128, 144, 256};
  int wl[] = {1, 4, 8, 16, 32};
  for (int mode = 0; mode < (ST ? 1 : 2); mode++)
    for (int stride : strides)
      for (int W : wl) {
        if (mode == 1 && W > 1) continue;
        if (X * 8 * stride > 32768) continue;
        ldsm_tp<X, TRANS, ST><<<1, 32 * W>>>(iters, stride, mode, d);
        CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h.data(), d, sizeof(unsigned long long) * 3 * W, cudaMemcpyDeviceToHost));
        unsigned long long t0 = ~0ull, t1 = 0;
        for (int w = 0; w < W; w++) { t0 = std::min(t0, h[w * 3]); t1 = std::max(t1, h[w * 3 + 1]); }
        printf("{\"bench\":\"%s\",\"x\":%d,\"trans\":%d,\"mode\":\"%s\",\"row_stride_bytes\":%d,\"warps\":%d,\"iters\":%d,\"span_cycles\":%llu,\"warp0_cycles\":%llu}\n",
               ST ? "stmatrix" : "ldmatrix", X, TRANS, mode ? "latency" : "throughput", stride, W, iters, t1 - t0, h[1] - h[0]);
      }
  fflush(stdout);
}

// ------------------------------------------------------------------------------- cp.async
template <int SZ, int CG>
__device__ __forceinline__ void cp_async(uint32_t dst, const void* src) {
  if (CG) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(dst), "l"(src), "n"(SZ) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }

template <int SZ, int CG, int STAGES>
__global__ void cpasync_tp(const uint8_t* g, size_t mask, int iters, unsigned long long* out) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t s0 = smem_u32(smem);
  int tid = threadIdx.x, nt = blockDim.x;
  size_t blk = (size_t)blockIdx.x * iters;
  __syncthreads();
  unsigned long long t0 = clock64();
#pragma unroll 1
  for (int it = 0; it < iters; it++) {
    size_t off = (((blk + it) * nt + tid) * SZ) & mask;
    cp_async<SZ, CG>(s0 + ((it % STAGES) * nt + tid) * SZ, g + off);
    cp_commit();
    cp_wait<STAGES - 1>();
  }
  cp_wait<0>();
  __syncthreads();
  unsigned long long t1 = clock64();
  if (tid == 0) { out[blockIdx.x * 2] = t0; out[blockIdx.x * 2 + 1] = t1; }
}

template <int SZ, int CG, int STAGES>
static void bench_cpasync(const uint8_t* g, size_t bytes_total, int nsm, unsigned long long* d) {
  int iters = g_quick ? 64 : 512;
  int threads = 256;
  int shm = STAGES * threads * SZ;
  size_t regions[] = {(size_t)8 << 20, bytes_total};
  for (size_t region : regions)
    for (int blocks : {1, nsm, 2 * nsm}) {
      if (blocks == 1 && region != regions[0] && g_quick) continue;
      size_t mask = region - 1;
      // warm the region into L2 for the small one
      cpasync_tp<SZ, CG, STAGES><<<blocks, threads, shm>>>(g, mask, iters, d);
      CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
      cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
      CK(cudaEventRecord(e0));
      cpasync_tp<SZ, CG, STAGES><<<blocks, threads, shm>>>(g, mask, iters, d);
      CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
      std::vector<unsigned long long> h(2 * blocks);
      CK(cudaMemcpy(h.data(), d, sizeof(unsigned long long) * 2 * blocks, cudaMemcpyDeviceToHost));
      unsigned long long mx = 0, sum = 0;
      for (int b = 0; b < blocks; b++) { unsigned long long c = h[2 * b + 1] - h[2 * b]; mx = std::max(mx, c); sum += c; }
      printf("{\"bench\":\"cp_async\",\"size\":%d,\"cache\":\"%s\",\"stages\":%d,\"threads\":%d,\"blocks\":%d,\"region_bytes\":%zu,\"iters\":%d,\"ms\":%.6f,\"bytes\":%lld,\"block_cycles_max\":%llu,\"block_cycles_mean\":%.1f}\n",
             SZ, CG ? "cg" : "ca", STAGES, threads, blocks, region, iters, ms, (long long)blocks * threads * iters * SZ, mx, (double)sum / blocks);
      CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
    }
  fflush(stdout);
}

// single thread: one cp.async, commit, wait_group 0, per access (cold pass then warm pass)
template <int SZ, int CG>
__global__ void cpasync_lat(const uint8_t* g, size_t stride, int n, unsigned long long* out) {
  __shared__ __align__(128) uint8_t sm[256];
  uint32_t dst = smem_u32(sm);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      const uint8_t* src = g + (size_t)i * stride;
      unsigned long long t0 = clock64();
      cp_async<SZ, CG>(dst, src);
      cp_commit();
      cp_wait<0>();
      unsigned long long t1 = clock64();
      out[pass * n + i] = t1 - t0;
    }
  // commit + wait with nothing in flight
  unsigned long long t0 = clock64();
  for (int i = 0; i < 256; i++) { cp_commit(); cp_wait<0>(); }
  out[2 * n] = clock64() - t0;
}

template <int SZ, int CG>
static void bench_cpasync_lat(const uint8_t* g, unsigned long long* d, size_t offset) {
  int n = 32;
  cpasync_lat<SZ, CG><<<1, 1>>>(g + offset, (size_t)1 << 20, n, d);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  std::vector<unsigned long long> h(2 * n + 1);
  CK(cudaMemcpy(h.data(), d, sizeof(unsigned long long) * h.size(), cudaMemcpyDeviceToHost));
  printf("{\"bench\":\"cp_async_latency\",\"size\":%d,\"cache\":\"%s\",\"stride_bytes\":%d,\"cold_cycles\":[", SZ, CG ? "cg" : "ca", 1 << 20);
  for (int i = 0; i < n; i++) printf("%s%llu", i ? "," : "", h[i]);
  printf("],\"warm_cycles\":[");
  for (int i = 0; i < n; i++) printf("%s%llu", i ? "," : "", h[n + i]);
  printf("],\"commit_wait_empty_cycles_per_pair\":%.2f}\n", h[2 * n] / 256.0);
  fflush(stdout);
}

// ------------------------------------------------------------------------------- TMA
// thread 0 of each block keeps `stages` loads in flight (one mbarrier per stage)
__global__ void tma_load_tp(const __grid_constant__ CUtensorMap tm, int iters, int stages, int box_bytes, int stride,
                            int box_w, int box_h, int nx, int ny, unsigned long long* out) {
  extern __shared__ uint8_t smem_raw[];
  uint32_t s0 = smem_u32(smem_raw);
  uint32_t pad = (1024u - (s0 & 1023u)) & 1023u;
  uint32_t buf = s0 + pad;
  uint32_t bars = buf + stages * stride;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; s++) mbar_init(bars + 8 * s, 1);
    mbar_init_fence();
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  int tpr = nx / box_w;
  unsigned long long t0 = clock64();
  for (int i = 0; i < iters; i++) {
    int s = i % stages;
    if (i >= stages) mbar_wait(bars + 8 * s, ((i / stages) - 1) & 1);
    long long q = (long long)blockIdx.x * iters + i;
    int x = (int)(q % tpr) * box_w;
    int y = (int)(((q / tpr) * box_h) % ny);
    mbar_expect_tx(bars + 8 * s, box_bytes);
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(buf + s * stride), "l"(reinterpret_cast<uint64_t>(&tm)), "r"(x), "r"(y), "r"(bars + 8 * s) : "memory");
  }
  for (int i = (iters > stages ? iters - stages : 0); i < iters; i++)
    mbar_wait(bars + 8 * (i % stages), (i / stages) & 1);
  unsigned long long t1 = clock64();
  out[blockIdx.x * 2] = t0; out[blockIdx.x * 2 + 1] = t1;
}

__global__ void bulk_load_tp(const uint8_t* g, size_t mask, int iters, int stages, int bytes, unsigned long long* out) {
  extern __shared__ uint8_t smem_raw[];
  uint32_t s0 = smem_u32(smem_raw);
  uint32_t pad = (128u - (s0 & 127u)) & 127u;
  uint32_t buf = s0 + pad;
  uint32_t bars = buf + stages * bytes;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; s++) mbar_init(bars + 8 * s, 1);
    mbar_init_fence();
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned long long t0 = clock64();
  for (int i = 0; i < iters; i++) {
    int s = i % stages;
    if (i >= stages) mbar_wait(bars + 8 * s, ((i / stages) - 1) & 1);
    size_t off = (((size_t)blockIdx.x * iters + i) * bytes) & mask;
    mbar_expect_tx(bars + 8 * s, bytes);
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(buf + s * bytes), "l"(g + off), "r"(bytes), "r"(bars + 8 * s) : "memory");
  }
  for (int i = (iters > stages ? iters - stages : 0); i < iters; i++)
    mbar_wait(bars + 8 * (i % stages), (i / stages) & 1);
  unsigned long long t1 = clock64();
  out[blockIdx.x * 2] = t0; out[blockIdx.x * 2 + 1] = t1;
}

template <int DEPTH>
__global__ void tma_store_tp(const __grid_constant__ CUtensorMap tm, int iters, int box_bytes, int box_w, int box_h,
                             int nx, int ny, unsigned long long* out) {
  extern __shared__ uint8_t smem_raw[];
  uint32_t s0 = smem_u32(smem_raw);
  uint32_t pad = (1024u - (s0 & 1023u)) & 1023u;
  uint32_t buf = s0 + pad;
  for (int i = threadIdx.x; i < box_bytes / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem_raw + pad)[i] = i;
  fence_proxy_async();
  __syncthreads();
  if (threadIdx.x != 0) return;
  int tpr = nx / box_w;
  unsigned long long t0 = clock64();
  for (int i = 0; i < iters; i++) {
    long long q = (long long)blockIdx.x * iters + i;
    int x = (int)(q % tpr) * box_w;
    int y = (int)(((q / tpr) * box_h) % ny);
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(reinterpret_cast<uint64_t>(&tm)), "r"(x), "r"(y), "r"(buf) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(DEPTH) : "memory");
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  unsigned long long t1 = clock64();
  out[blockIdx.x * 2] = t0; out[blockIdx.x * 2 + 1] = t1;
}

static PFN_cuTensorMapEncodeTiled_v12000 g_encode = nullptr;

static bool make_map(CUtensorMap* m, void* gptr, int nx, int ny, int box_w, int box_h, int swizzle) {
  cuuint64_t dims[2] = {(cuuint64_t)nx, (cuuint64_t)ny};
  cuuint64_t strides[1] = {(cuuint64_t)nx * 2};
  cuuint32_t box[2] = {(cuuint32_t)box_w, (cuuint32_t)box_h};
  cuuint32_t es[2] = {1, 1};
  CUtensorMapSwizzle sw = swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B :
                          swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUresult r = g_encode(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, gptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    printf("{\"bench\":\"tma_map_error\",\"box_w\":%d,\"box_h\":%d,\"swizzle\":%d,\"cuda_result\":%d}\n", box_w, box_h, swizzle, (int)r);
    return false;
  }
  return true;
}

static void report_blocks(const char* bench, const char* extra, int blocks, int iters, long long bytes, float ms,
                          unsigned long long* d) {
  std::vector<unsigned long long> h(2 * blocks);
  CK(cudaMemcpy(h.data(), d, sizeof(unsigned long long) * 2 * blocks, cudaMemcpyDeviceToHost));
  unsigned long long mx = 0, sum = 0;
  for (int b = 0; b < blocks; b++) { unsigned long long c = h[2 * b + 1] - h[2 * b]; mx = std::max(mx, c); sum += c; }
  int err = 0;
  CK(cudaMemcpyFromSymbol(&err, g_err, sizeof(int)));
  printf("{\"bench\":\"%s\",%s,\"blocks\":%d,\"iters\":%d,\"bytes\":%lld,\"ms\":%.6f,\"block_cycles_max\":%llu,\"block_cycles_mean\":%.1f,\"errors\":%d}\n",
         bench, extra, blocks, iters, bytes, ms, mx, (double)sum / blocks, err);
  fflush(stdout);
}

static void bench_tma(uint8_t* g, int nsm, unsigned long long* d) {
  cudaDriverEntryPointQueryResult q;
  void* fn = nullptr;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess || !fn) {
    printf("{\"bench\":\"tma_unavailable\"}\n");
    return;
  }
  g_encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
  const int nx = 32768, ny = 16384;                 // 1 GiB of f16
  struct Box { int w, h, sw; };
  Box boxes[] = {{64, 8, 128}, {64, 32, 128}, {64, 64, 128}, {64, 128, 128}, {64, 256, 128},
                 {8, 1, 0}, {8, 8, 0}, {32, 8, 64}, {16, 8, 32}, {64, 64, 0}};
  int stage_list[] = {1, 2, 4, 8};
  for (const Box& b : boxes) {
    CUtensorMap m;
    if (!make_map(&m, g, nx, ny, b.w, b.h, b.sw)) continue;
    int bytes = b.w * b.h * 2;
    int align = b.sw ? 1024 : 128;                 // shared-memory alignment of a box
    int stride = (bytes + align - 1) / align * align;
    for (int region_rows : {512, ny}) {        // 512 rows x 64 KiB = 32 MiB window vs all 1 GiB
      for (int stages : stage_list) {
        if (stages * stride > 160 * 1024) continue;
        for (int blocks : {1, nsm}) {
          if (g_quick && blocks == 1 && stages > 2) continue;
          int iters = g_quick ? 64 : (bytes <= 1024 ? 2048 : 512);
          int shm = stages * stride + 1024 + 8 * stages;
          CK(cudaFuncSetAttribute(tma_load_tp, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));
          tma_load_tp<<<blocks, 32, shm>>>(m, iters, stages, bytes, stride, b.w, b.h, nx, region_rows, d);   // warm
          CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
          cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
          CK(cudaEventRecord(e0));
          tma_load_tp<<<blocks, 32, shm>>>(m, iters, stages, bytes, stride, b.w, b.h, nx, region_rows, d);
          CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
          float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
          char extra[256];
          snprintf(extra, sizeof extra, "\"box_w\":%d,\"box_h\":%d,\"box_bytes\":%d,\"swizzle\":%d,\"stages\":%d,\"region_rows\":%d",
                   b.w, b.h, bytes, b.sw, stages, region_rows);
          report_blocks("tma_load_2d", extra, blocks, iters, (long long)blocks * iters * bytes, ms, d);
          CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
        }
      }
    }
  }
  // TMA stores: depth = bulk groups allowed in flight (reads of shared memory outstanding)
  for (const Box& b : {Box{64, 64, 128}, Box{64, 128, 128}, Box{8, 8, 0}}) {
    CUtensorMap m;
    if (!make_map(&m, g, nx, ny, b.w, b.h, b.sw)) continue;
    int bytes = b.w * b.h * 2;
    for (int depth : {0, 1, 3, 7}) {
      for (int blocks : {1, nsm}) {
        int iters = g_quick ? 64 : 512;
        int shm = bytes + 1024;
        cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
        CK(cudaEventRecord(e0));
        if (depth == 0) tma_store_tp<0><<<blocks, 32, shm>>>(m, iters, bytes, b.w, b.h, nx, ny, d);
        if (depth == 1) tma_store_tp<1><<<blocks, 32, shm>>>(m, iters, bytes, b.w, b.h, nx, ny, d);
        if (depth == 3) tma_store_tp<3><<<blocks, 32, shm>>>(m, iters, bytes, b.w, b.h, nx, ny, d);
        if (depth == 7) tma_store_tp<7><<<blocks, 32, shm>>>(m, iters, bytes, b.w, b.h, nx, ny, d);
        CK(cudaEventRecord(e1)); CK(cudaGetLastError()); CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
        char extra[256];
        snprintf(extra, sizeof extra, "\"box_w\":%d,\"box_h\":%d,\"box_bytes\":%d,\"swizzle\":%d,\"depth\":%d", b.w, b.h, bytes, b.sw, depth);
        report_blocks("tma_store_2d", extra, blocks, iters, (long long)blocks * iters * bytes, ms, d);
        CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
      }
    }
  }
  // plain bulk copies
  for (int bytes : {256, 1024, 4096, 16384, 32768}) {
    for (size_t region : {(size_t)32 << 20, (size_t)1 << 30}) {
      for (int stages : {1, 2, 4, 8}) {
        if (stages * bytes > 160 * 1024) continue;
        for (int blocks : {1, nsm}) {
          int iters = g_quick ? 64 : 512;
          int shm = stages * bytes + 256;
          CK(cudaFuncSetAttribute(bulk_load_tp, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));
          bulk_load_tp<<<blocks, 32, shm>>>(g, region - 1, iters, stages, bytes, d);
          CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
          cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
          CK(cudaEventRecord(e0));
          bulk_load_tp<<<blocks, 32, shm>>>(g, region - 1, iters, stages, bytes, d);
          CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
          float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
          char extra[256];
          snprintf(extra, sizeof extra, "\"size\":%d,\"stages\":%d,\"region_bytes\":%zu", bytes, stages, region);
          report_blocks("bulk_load", extra, blocks, iters, (long long)blocks * iters * bytes, ms, d);
          CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
        }
      }
    }
  }
}

// ------------------------------------------------------------------------------- mbarrier
__global__ void mbar_costs(int iters, unsigned long long* out) {
  __shared__ __align__(8) uint64_t bars[4];
  uint32_t b0 = smem_u32(&bars[0]), b1 = smem_u32(&bars[1]), b2 = smem_u32(&bars[2]), b3 = smem_u32(&bars[3]);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (threadIdx.x == 0) {
    mbar_init(b0, (1u << 20) - 1);     // arrivals never complete a phase
    mbar_init(b1, 1);
    mbar_init(b2, 1);
    mbar_init(b3, 1);
    mbar_init_fence();
  }
  __syncthreads();
  if (w == 0) {
    // 1) warp-wide arrive (32 arrivals per instruction)
    unsigned long long t0 = clock64();
    for (int i = 0; i < iters; i++) mbar_arrive(b0);
    unsigned long long t1 = clock64();
    // 2) try_wait / test_wait on a phase that already completed
    if (lane == 0) mbar_arrive(b1);
    __syncwarp();
    uint32_t ok = 0;
    unsigned long long t2 = clock64();
    for (int i = 0; i < iters; i++) ok += mbar_try(b1, 0);
    unsigned long long t3 = clock64();
    for (int i = 0; i < iters; i++) ok += mbar_test(b1, 0);
    unsigned long long t4 = clock64();
    // 3) try_wait on the phase still pending (returns false after its time limit)
    unsigned long long t5 = clock64();
    ok += mbar_try(b1, 1);
    unsigned long long t6 = clock64();
    if (lane == 0) { out[0] = t1 - t0; out[1] = t3 - t2; out[2] = t4 - t3; out[3] = t6 - t5; out[4] = ok; }
  }
  __syncthreads();
  // 4) ping-pong between warps 0 and 1 through b2 / b3 (one arrival each)
  unsigned long long t0 = clock64();
  for (int i = 0; i < iters; i++) {
    if (w == 0) { if (lane == 0) mbar_arrive(b2); mbar_wait(b3, i & 1); }
    else if (w == 1) { mbar_wait(b2, i & 1); if (lane == 0) mbar_arrive(b3); }
  }
  unsigned long long t1 = clock64();
  if (threadIdx.x == 0) out[5] = t1 - t0;
  // 5) __syncthreads for reference
  __syncthreads();
  t0 = clock64();
  for (int i = 0; i < iters; i++) __syncthreads();
  t1 = clock64();
  if (threadIdx.x == 0) out[6] = t1 - t0;
}

static void bench_mbar(unsigned long long* d) {
  int iters = g_quick ? 128 : 1024;
  for (int warps : {2, 4, 8}) {
    mbar_costs<<<1, 32 * warps>>>(iters, d);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    unsigned long long h[8];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    int err = 0;
    CK(cudaMemcpyFromSymbol(&err, g_err, sizeof(int)));
    printf("{\"bench\":\"mbarrier\",\"warps\":%d,\"iters\":%d,\"arrive_warp_cycles\":%.2f,\"try_wait_done_cycles\":%.2f,\"test_wait_done_cycles\":%.2f,"
           "\"try_wait_pending_once_cycles\":%llu,\"pingpong_round_trip_cycles\":%.2f,\"syncthreads_cycles\":%.2f,\"errors\":%d}\n",
           warps, iters, h[0] / (double)iters, h[1] / (double)iters, h[2] / (double)iters, h[3], h[5] / (double)iters,
           h[6] / (double)iters, err);
  }
  fflush(stdout);
}

int main(int argc, char** argv) {
  g_quick = argc > 1 && std::string(argv[1]) == "quick";
  int dev = 0, nsm = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
  unsigned long long* d;
  CK(cudaMalloc(&d, sizeof(unsigned long long) * 4096));
  size_t gbytes = (size_t)1 << 30;
  uint8_t* g;
  CK(cudaMalloc(&g, gbytes));
  CK(cudaMemset(g, 0x3c, gbytes));
  printf("{\"bench\":\"device\",\"sms\":%d}\n", nsm);
  fflush(stdout);
  bench_ldsm<1, 0, 0>(d); bench_ldsm<2, 0, 0>(d); bench_ldsm<4, 0, 0>(d);
  bench_ldsm<1, 1, 0>(d); bench_ldsm<2, 1, 0>(d); bench_ldsm<4, 1, 0>(d);
  bench_ldsm<4, 0, 1>(d); bench_ldsm<4, 1, 1>(d); bench_ldsm<1, 0, 1>(d);
  bench_cpasync_lat<16, 1>(g, d, 0);
  bench_cpasync_lat<16, 0>(g, d, 64);
  bench_cpasync_lat<4, 0>(g, d, 128);
  bench_cpasync_lat<8, 0>(g, d, 192);
  bench_cpasync<16, 1, 1>(g, gbytes, nsm, d); bench_cpasync<16, 1, 2>(g, gbytes, nsm, d);
  bench_cpasync<16, 1, 4>(g, gbytes, nsm, d); bench_cpasync<16, 1, 8>(g, gbytes, nsm, d);
  bench_cpasync<16, 0, 4>(g, gbytes, nsm, d); bench_cpasync<8, 0, 4>(g, gbytes, nsm, d);
  bench_cpasync<4, 0, 4>(g, gbytes, nsm, d); bench_cpasync<4, 0, 8>(g, gbytes, nsm, d);
  bench_tma(g, nsm, d);
  bench_mbar(d);
  return 0;
}
