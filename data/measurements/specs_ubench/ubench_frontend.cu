// Front-end and MIO microbenchmarks for gpusim presets: instruction fetch (cold vs warm
// straight-line code) and indexed-LDC latency. One warp, clock64 deltas. (S2R of a special
// register cannot be timed this way: ptxas keeps one read of it.)
// Build and run (CUDA 13): nvcc -O3 -arch=sm_90 -o ubench_frontend ubench_frontend.cu && ./ubench_frontend
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("CUDA error %s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

__constant__ uint32_t cchase[8192];

// Indexed constant load latency: a dependent chase through __constant__ memory (LDC c[0x3][R]).
__global__ void ldc_chase(int iters, uint64_t* res, uint32_t* sink) {
  uint32_t j = 0;
  for (int i = 0; i < 256; i++) j = cchase[j];          // warm the constant caches
  uint64_t t0 = clock64();
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int k = 0; k < 16; k++) j = cchase[j];
  }
  uint64_t t1 = clock64();
  if (threadIdx.x == 0) res[0] = t1 - t0;
  sink[threadIdx.x] = j;
}

// Instruction fetch: the same straight-line block of 2048 independent FADDs (8 chains, so
// issue-bound at one per cycle) timed twice; the first pass fetches its 256 lines cold.
#define A8 asm volatile("add.f32 %0,%0,%8; add.f32 %1,%1,%8; add.f32 %2,%2,%8; add.f32 %3,%3,%8; " \
                        "add.f32 %4,%4,%8; add.f32 %5,%5,%8; add.f32 %6,%6,%8; add.f32 %7,%7,%8;"   \
                        : "+f"(a0), "+f"(a1), "+f"(a2), "+f"(a3), "+f"(a4), "+f"(a5), "+f"(a6), "+f"(a7) : "f"(b));
#define A64 A8 A8 A8 A8 A8 A8 A8 A8
#define A512 A64 A64 A64 A64 A64 A64 A64 A64
__global__ void icache(uint64_t* res, float* sink, float b) {
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
#pragma unroll 1
  for (int pass = 0; pass < 3; pass++) {
    uint64_t t0 = clock64();
    A512 A512 A512 A512
    uint64_t t1 = clock64();
    if (threadIdx.x == 0) res[pass] = t1 - t0;
  }
  sink[threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("device %s cc %d.%d SMs %d\n", p.name, p.major, p.minor, p.multiProcessorCount);
  uint64_t* d_res; CK(cudaMalloc(&d_res, 64));
  uint32_t* sink; CK(cudaMalloc(&sink, 4096));
  uint64_t h[4];
  const int IT = 256;
  uint32_t hc[8192];
  for (int i = 0; i < 8192; i++) hc[i] = (uint32_t)((i * 16 + 16 * 97) % 8192);   // 64-B steps: a new line each hop
  CK(cudaMemcpyToSymbol(cchase, hc, sizeof(hc)));
  ldc_chase<<<1, 32>>>(IT, d_res, sink); CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(h, d_res, 8, cudaMemcpyDeviceToHost));
  printf("lat ldc_chase     %6.2f cycles per dependent indexed LDC (32 KiB of constants)\n", (double)h[0] / (IT * 16.0));
  for (int run = 0; run < 2; run++) {
    icache<<<1, 32>>>(d_res, (float*)sink, 0.5f); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h, d_res, 24, cudaMemcpyDeviceToHost));
    printf("icache launch %d: pass0 %llu  pass1 %llu  pass2 %llu cycles for 2048 FADD (cold - warm = %lld)\n", run,
           (unsigned long long)h[0], (unsigned long long)h[1], (unsigned long long)h[2], (long long)(h[0] - h[1]));
  }
  printf("done\n");
  return 0;
}
