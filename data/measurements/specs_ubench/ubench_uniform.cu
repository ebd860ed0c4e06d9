// Uniform-datapath microbenchmarks for gpusim presets (issue 24): the issue interval and the
// dependent latency of uniform integer instructions (USHF, ULOP3, UIADD3), and whether they
// issue beside vector ALU work. One block on one SM, clock64 deltas (as ubench.cu).
// The chains use kernel parameters and the loop counter only, so ptxas keeps them in uniform
// registers (checked on the CUDA 13 ptxas, sm_90: tp_uchain's loop body is 168 uniform
// instructions (56 each of USHF.R.U32.HI, ULOP3.LUT, UIADD3) and 26 vector ones per 4
// iterations: one of the 8 chains stays in vector registers; lat_uchain's is 3 uniform
// instructions a step; tp_mix's 4 uniform and 4 vector chains).
// Build and run (CUDA 13): nvcc -O3 -arch=sm_90 -o ubench_uniform ubench_uniform.cu && ./ubench_uniform
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("CUDA error %s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

#define S(a) a = (a ^ (a >> 7)) + m;

// Throughput: 8 independent chains on warp-uniform values, 2 steps (6 instructions) each per iteration.
__global__ void tp_uchain(uint32_t x, uint32_t m, int iters, uint64_t* res, uint32_t* sink) {
  uint32_t a0 = x, a1 = x ^ 1, a2 = x ^ 2, a3 = x ^ 3, a4 = x ^ 4, a5 = x ^ 5, a6 = x ^ 6, a7 = x ^ 7;
  __syncthreads();
  uint64_t t0 = clock64();
  for (int i = 0; i < iters; i++) {
    S(a0) S(a1) S(a2) S(a3) S(a4) S(a5) S(a6) S(a7)
    S(a0) S(a1) S(a2) S(a3) S(a4) S(a5) S(a6) S(a7)
  }
  uint64_t t1 = clock64();
  __syncthreads();
  if (threadIdx.x == 0) { res[0] = t1 - t0; sink[0] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7; }
}

// Latency: one chain, 3 dependent uniform instructions a step, 16 steps per iteration.
__global__ void lat_uchain(uint32_t x, uint32_t m, int iters, uint64_t* res, uint32_t* sink) {
  uint32_t a = x;
  uint64_t t0 = clock64();
  for (int i = 0; i < iters; i++) {
    S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a) S(a)
  }
  uint64_t t1 = clock64();
  res[a & 7] = t1 - t0;                    // the chain as an address: ptxas keeps it uniform (as sink[0] = a it would not)
}

// Mixed: 4 uniform chains and 4 per-thread (vector ALU) chains of the same steps.
__global__ void tp_mix(uint32_t x, uint32_t m, int iters, uint64_t* res, uint32_t* sink) {
  uint32_t a0 = x, a1 = x ^ 1, a2 = x ^ 2, a3 = x ^ 3;
  uint32_t t = threadIdx.x;
  uint32_t v0 = x ^ t, v1 = x ^ (t << 1), v2 = x ^ (t << 2), v3 = x ^ (t << 3);
  __syncthreads();
  uint64_t t0 = clock64();
  for (int i = 0; i < iters; i++) {
    S(a0) S(v0) S(a1) S(v1) S(a2) S(v2) S(a3) S(v3)
    S(a0) S(v0) S(a1) S(v1) S(a2) S(v2) S(a3) S(v3)
  }
  uint64_t t1 = clock64();
  __syncthreads();
  if (threadIdx.x == 0) res[0] = t1 - t0;
  sink[((a0 ^ a1 ^ a2 ^ a3) & 1023) + threadIdx.x] = v0 + v1 + v2 + v3;   // the uniform chains as an address
}

int main() {
  uint64_t* d_res; uint64_t h_res[1]; uint32_t* sink;
  CK(cudaMalloc(&d_res, 64)); CK(cudaMalloc(&sink, 4 * 8192)); CK(cudaMemset(d_res, 0, 64));
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("device %s cc %d.%d SMs %d\n", p.name, p.major, p.minor, p.multiProcessorCount);
  const int IT = 4096;
  // warm-up launch (instruction cache, clocks)
  tp_uchain<<<1, 128>>>(12345u, 0x9E3779B9u, IT, d_res, sink); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  CK(cudaMemset(d_res, 0, 64));
  lat_uchain<<<1, 32>>>(12345u, 0x9E3779B9u, IT, d_res, sink); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  uint64_t slots[8]; CK(cudaMemcpy(slots, d_res, 64, cudaMemcpyDeviceToHost));
  uint64_t lat = 0; for (uint64_t v : slots) lat = v > lat ? v : lat;     // the one slot the chain chose
  printf("lat uchain            %6.2f cycles per dependent uniform op (3 ops a step, %d steps)\n",
         (double)lat / (IT * 16.0 * 3.0), IT * 16);
  for (int w : {1, 2, 4, 8, 16}) {          // w warps per SMSP: one block of 128 w threads
    tp_uchain<<<1, 128 * w>>>(12345u, 0x9E3779B9u, IT, d_res, sink); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h_res, d_res, 8, cudaMemcpyDeviceToHost));
    printf("tput uchain warps/SMSP=%2d  %7.2f cycles per iteration per SMSP  %6.3f cycles per step-op (48 a warp-iteration)\n",
           w, (double)h_res[0] / (IT * (double)w), (double)h_res[0] / (IT * 48.0 * w));
  }
  for (int w : {1, 4, 16}) {
    tp_mix<<<1, 128 * w>>>(12345u, 0x9E3779B9u, IT, d_res, sink); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h_res, d_res, 8, cudaMemcpyDeviceToHost));
    printf("tput mix    warps/SMSP=%2d  %7.2f cycles per iteration per SMSP  %6.3f cycles per step-op (48 a warp-iteration: 24 uniform, 24 vector)\n",
           w, (double)h_res[0] / (IT * (double)w), (double)h_res[0] / (IT * 48.0 * w));
  }
  printf("done\n");
  return 0;
}
