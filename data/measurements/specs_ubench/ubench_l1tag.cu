// L1 tag stage under latency (issue 24): does a request of 32 lines hold the L1 32 cycles when
// its lines miss, as it does when they hit (stride_read/l1_s128B: 32.7 SM cycles a request)?
// One block of 32 w threads (w warps) on one SM; every lane chases its own chain of 8-byte
// pointers, lanes 128 B apart, so each warp load is 32 lines, all hits (footprint 64 KiB after a
// warm pass, ld.ca) or all L2 hits (ld.cg: bypasses L1, footprint 4 MiB). Cycles per round
// (one dependent load by every warp): hits ~ 33 + (w-1) x 32 if the stage serialises lines,
// ~ 33 + (w-1) x 8 with 4 lines a cycle; misses ~ L2 latency (284 H200) + the same queueing.
// Build and run (CUDA 13): nvcc -O3 -arch=sm_90 -o ubench_l1tag ubench_l1tag.cu && ./ubench_l1tag
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("CUDA error %s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

template <int CG>
__global__ void chase32(const uint64_t* base, int iters, uint64_t* res) {
  uint64_t p = (uint64_t)(base + threadIdx.x * 16);        // lane l starts at byte 128 l (+ 4 KiB x warp)
  for (int i = 0; i < 8; i++) {                             // warm: every lane's chain once round
    if (CG) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
    else    asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p) :: "memory");
  }
  __syncthreads();
  uint64_t t0 = clock64();
  for (int i = 0; i < iters; i++) {
    if (CG) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
    else    asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p) :: "memory");
  }
  uint64_t t1 = clock64();
  __syncthreads();
  if (threadIdx.x == 0) res[0] = t1 - t0;
  if (p == 1) res[1] = p;                                   // keep the chain
}

int main() {
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s cc %d.%d\n", prop.name, prop.major, prop.minor);
  // chain: element e (8 B) at word 16 l + 512 k of block b points to the same lane's word in block b + 1
  // (mod nblocks); a block is 32 lanes x 128 B = 4 KiB per warp-row.
  uint64_t* d; uint64_t* res; CK(cudaMalloc(&res, 16));
  for (int miss = 0; miss < 2; miss++) {
    size_t nblocks = miss ? 1024 : 16;                      // 4 MiB (L2) or 64 KiB (L1): warp w starts in block w
    size_t words = nblocks * 512 + 32 * 16 * 32;            // room for 32 warps' offsets
    CK(cudaMalloc(&d, words * 8));
    std::vector<uint64_t> h(words, 0);
    for (size_t b = 0; b < nblocks; b++)
      for (size_t w = 0; w < 512; w++) {                    // every word of a block: its next-block twin
        size_t nb = (b * 5 + 1) % nblocks;                  // full period (5 = 1 mod 4, 1 odd): all blocks
        h[b * 512 + w] = (uint64_t)(d + nb * 512 + w);
      }
    CK(cudaMemcpy(d, h.data(), words * 8, cudaMemcpyHostToDevice));
    for (int w : {1, 2, 4, 8, 16}) {
      const int IT = 512;
      for (int rep = 0; rep < 2; rep++) {                  // the second launch is timed: the L2 holds the chain
        if (miss) chase32<1><<<1, 32 * w>>>(d, IT, res); else chase32<0><<<1, 32 * w>>>(d, IT, res);
        CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
      }
      uint64_t c; CK(cudaMemcpy(&c, res, 8, cudaMemcpyDeviceToHost));
      printf("%s warps=%2d  %8.1f cycles per round (32 lines a warp load)\n", miss ? "L2 (ld.cg)" : "L1 (ld.ca)", w,
             (double)c / IT);
    }
    CK(cudaFree(d));
  }
  printf("done\n");
  return 0;
}
