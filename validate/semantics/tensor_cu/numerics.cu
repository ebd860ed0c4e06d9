// Tensor-core numerics and fragment-layout probes: run given register / shared-memory contents
// through one instruction and return the raw result registers. Layout-agnostic: the Python driver
// (validate/semantics/tensor_probe.py) builds every register and shared-memory image.
//
//   numerics mma   <form> <ncases> <in.bin> <out.bin>
//       in: A regs u32[ncases][32][NA], B u32[ncases][32][NB], C u32[ncases][32][NC]
//       out: D u32[ncases][32][NC]                    (one warp per case)
//   numerics wgmma <form> <ncases> <img_bytes> <in.bin> <out.bin>
//       in: image u8[ncases][img_bytes], desc u64[ncases][3] (A desc, B desc: start relative to
//           the image; scale-d), A regs u32[ncases][128][4], C u32[ncases][128][NACC]
//       out: D u32[ncases][128][NACC]                 (one warpgroup per case)
//   numerics ldsm <nsets> <in.bin> <out.bin>
//       in: per set u32 variant, u32 lane byte offsets[32]; out: per set u32[32][4] registers
//       then u16[8192] shared memory after the store (stmatrix) or unchanged (ldmatrix).
//       Shared memory holds u16 i at halfword i before each set.
#include <algorithm>
#include "common.cuh"
#include "mma_forms.inc"
#include "wgmma_forms.inc"

template <int ID>
__global__ void mma_kernel(const uint32_t* A, const uint32_t* B, const uint32_t* C, uint32_t* D, int ncases) {
  using F = MmaForm<ID>;
  int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (w >= ncases) return;                 // whole warps leave together
  uint32_t a[F::NA], b[F::NB], c[F::NC], d[F::NC];
  size_t t = (size_t)w * 32 + lane;
#pragma unroll
  for (int i = 0; i < F::NA; i++) a[i] = A[t * F::NA + i];
#pragma unroll
  for (int i = 0; i < F::NB; i++) b[i] = B[t * F::NB + i];
#pragma unroll
  for (int i = 0; i < F::NC; i++) c[i] = C[t * F::NC + i];
  F::run(d, a, b, c);
#pragma unroll
  for (int i = 0; i < F::NC; i++) D[t * F::NC + i] = d[i];
}

template <int ID>
static void run_mma(int ncases, const std::vector<uint8_t>& in, const char* out) {
  using F = MmaForm<ID>;
  size_t na = (size_t)ncases * 32 * F::NA * 4, nb = (size_t)ncases * 32 * F::NB * 4,
         nc = (size_t)ncases * 32 * F::NC * 4;
  if (in.size() != na + nb + nc) { fprintf(stderr, "mma form %d: input %zu bytes, want %zu\n", ID, in.size(), na + nb + nc); exit(3); }
  uint32_t* dA = to_dev<uint32_t>(in.data(), na);
  uint32_t* dB = to_dev<uint32_t>(in.data() + na, nb);
  uint32_t* dC = to_dev<uint32_t>(in.data() + na + nb, nc);
  uint32_t* dD = to_dev<uint32_t>(nullptr, nc);
  CK(cudaMemset(dD, 0xFF, nc));
  int warps = 4;
  mma_kernel<ID><<<(ncases + warps - 1) / warps, 32 * warps>>>(dA, dB, dC, dD, ncases);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<uint8_t> h(nc);
  CK(cudaMemcpy(h.data(), dD, nc, cudaMemcpyDeviceToHost));
  write_file(out, h.data(), nc);
}

template <int ID>
__global__ void wg_kernel(const uint8_t* img, int img_bytes, int alloc_bytes, const uint64_t* desc, const uint32_t* AR,
                          const uint32_t* C, uint32_t* D) {
  using F = WgForm<ID>;
  extern __shared__ uint8_t smem_raw[];
  uint32_t s0 = smem_u32(smem_raw);
  uint32_t pad = (1024u - (s0 & 1023u)) & 1023u;
  uint8_t* sm = smem_raw + pad;
  int cs = blockIdx.x, tid = threadIdx.x;
  const uint4* src = reinterpret_cast<const uint4*>(img + (size_t)cs * img_bytes);
  // the image, then zeros up to the allocation (a wrong descriptor guess reads inside it)
  for (int i = tid; i < alloc_bytes / 16; i += 128)
    reinterpret_cast<uint4*>(sm)[i] = i < img_bytes / 16 ? src[i] : make_uint4(0, 0, 0, 0);
  fence_proxy_async();
  __syncthreads();
  uint64_t base = (uint64_t)(((s0 + pad) >> 4) & 0x3FFF);
  uint64_t da = desc[cs * 3 + 0] + base, db = desc[cs * 3 + 1] + base;
  int scale_d = (int)desc[cs * 3 + 2];
  uint32_t a[4], d[F::NACC];
  size_t t = (size_t)cs * 128 + tid;
#pragma unroll
  for (int i = 0; i < 4; i++) a[i] = AR[t * 4 + i];
#pragma unroll
  for (int i = 0; i < F::NACC; i++) d[i] = C[t * F::NACC + i];
  wg_fence();
  F::run(d, da, db, a, scale_d);
  wg_commit();
  wg_wait<0>();
#pragma unroll
  for (int i = 0; i < F::NACC; i++) D[t * F::NACC + i] = d[i];
}

template <int ID>
static void run_wgmma(int ncases, int img_bytes, const std::vector<uint8_t>& in, const char* out) {
  using F = WgForm<ID>;
  size_t ni = (size_t)ncases * img_bytes, nd = (size_t)ncases * 3 * 8, na = (size_t)ncases * 128 * 4 * 4,
         nc = (size_t)ncases * 128 * F::NACC * 4;
  if (in.size() != ni + nd + na + nc || img_bytes % 1024) {
    fprintf(stderr, "wgmma form %d: input %zu bytes, want %zu\n", ID, in.size(), ni + nd + na + nc); exit(3);
  }
  uint8_t* dI = to_dev<uint8_t>(in.data(), ni);
  uint64_t* dDesc = to_dev<uint64_t>(in.data() + ni, nd);
  uint32_t* dA = to_dev<uint32_t>(in.data() + ni + nd, na);
  uint32_t* dC = to_dev<uint32_t>(in.data() + ni + nd + na, nc);
  uint32_t* dD = to_dev<uint32_t>(nullptr, nc);
  CK(cudaMemset(dD, 0xFF, nc));
  int alloc = std::min(std::max(4 * img_bytes, 65536), 200 * 1024);
  if (alloc < img_bytes) alloc = img_bytes;
  int shm = alloc + 1024;
  CK(cudaFuncSetAttribute(wg_kernel<ID>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));
  wg_kernel<ID><<<ncases, 128, shm>>>(dI, img_bytes, alloc, dDesc, dA, dC, dD);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<uint8_t> h(nc);
  CK(cudaMemcpy(h.data(), dD, nc, cudaMemcpyDeviceToHost));
  write_file(out, h.data(), nc);
}

// ------------------------------------------------------------------ ldmatrix / stmatrix / movmatrix
// variant: 0..5 ldmatrix x1,x2,x4 then .trans x1,x2,x4; 6..11 stmatrix (same order); 12 movmatrix.trans
__global__ void ldsm_kernel(const uint32_t* sets, int nsets, uint32_t* regs_out, uint16_t* smem_out) {
  __shared__ __align__(128) uint16_t sm[8192];
  int lane = threadIdx.x;
  for (int s = 0; s < nsets; s++) {
    for (int i = lane; i < 8192; i += 32) sm[i] = (uint16_t)i;
    __syncwarp();
    uint32_t variant = sets[s * 33];
    uint32_t addr = smem_u32(sm) + sets[s * 33 + 1 + lane];
    uint32_t r0 = 0xDEADBEEF, r1 = 0xDEADBEEF, r2 = 0xDEADBEEF, r3 = 0xDEADBEEF;
    // values a lane stores: halfword (reg r, half h) = 0x8000 | lane << 3 | r << 1 | h
    uint32_t v[4];
    for (int r = 0; r < 4; r++) v[r] = (0x8000u | (lane << 3) | (r << 1)) | ((0x8000u | (lane << 3) | (r << 1) | 1) << 16);
    switch (variant) {
      case 0: asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(addr) : "memory"); break;
      case 1: asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr) : "memory"); break;
      case 2: asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory"); break;
      case 3: asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(addr) : "memory"); break;
      case 4: asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr) : "memory"); break;
      case 5: asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory"); break;
      case 6: asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(addr), "r"(v[0]) : "memory"); break;
      case 7: asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1,%2};" :: "r"(addr), "r"(v[0]), "r"(v[1]) : "memory"); break;
      case 8: asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};" :: "r"(addr), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]) : "memory"); break;
      case 9: asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" :: "r"(addr), "r"(v[0]) : "memory"); break;
      case 10: asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1,%2};" :: "r"(addr), "r"(v[0]), "r"(v[1]) : "memory"); break;
      case 11: asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};" :: "r"(addr), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]) : "memory"); break;
      case 12: asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r0) : "r"(v[0])); break;
      default: break;
    }
    __syncwarp();
    uint32_t* o = regs_out + (size_t)s * 128 + lane * 4;
    o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3;
    for (int i = lane; i < 8192; i += 32) smem_out[(size_t)s * 8192 + i] = sm[i];
    __syncwarp();
  }
}

static void run_ldsm(int nsets, const std::vector<uint8_t>& in, const char* out) {
  if (in.size() != (size_t)nsets * 33 * 4) { fprintf(stderr, "ldsm: input size\n"); exit(3); }
  uint32_t* dS = to_dev<uint32_t>(in.data(), in.size());
  size_t nr = (size_t)nsets * 128 * 4, ns = (size_t)nsets * 8192 * 2;
  uint32_t* dR = to_dev<uint32_t>(nullptr, nr);
  uint16_t* dM = to_dev<uint16_t>(nullptr, ns);
  ldsm_kernel<<<1, 32>>>(dS, nsets, dR, dM);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<uint8_t> h(nr + ns);
  CK(cudaMemcpy(h.data(), dR, nr, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h.data() + nr, dM, ns, cudaMemcpyDeviceToHost));
  write_file(out, h.data(), h.size());
}

static int dispatch(const std::vector<std::string>& a) {
  size_t n = a.size();
  if (n == 5 && a[0] == "mma") {
    int form = atoi(a[1].c_str()), cases = atoi(a[2].c_str());
    auto in = read_file(a[3].c_str());
#define X(I) if (form == I) { run_mma<I>(cases, in, a[4].c_str()); return 0; }
    MMA_FORM_LIST(X)
#undef X
    fprintf(stderr, "unknown mma form %d\n", form); return 1;
  }
  if (n == 6 && a[0] == "wgmma") {
    int form = atoi(a[1].c_str()), cases = atoi(a[2].c_str()), img = atoi(a[3].c_str());
    auto in = read_file(a[4].c_str());
#define X(I) if (form == I) { run_wgmma<I>(cases, img, in, a[5].c_str()); return 0; }
    WG_FORM_LIST(X)
#undef X
    fprintf(stderr, "unknown wgmma form %d\n", form); return 1;
  }
  if (n == 4 && a[0] == "ldsm") {
    auto in = read_file(a[2].c_str());
    run_ldsm(atoi(a[1].c_str()), in, a[3].c_str());
    return 0;
  }
  fprintf(stderr, "bad arguments\n");
  return 1;
}

// `numerics batch <manifest>`: one job per line (the arguments above), one CUDA context for all;
// prints "done <line>" after each, so the driver can rerun what a fault left undone.
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "batch") {
    FILE* f = fopen(argv[2], "r");
    if (!f) { fprintf(stderr, "cannot open %s\n", argv[2]); return 2; }
    char line[4096];
    int k = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
      std::vector<std::string> a;
      for (char* t = strtok(line, " \t\r\n"); t; t = strtok(nullptr, " \t\r\n")) a.push_back(t);
      if (a.empty()) continue;
      int rc = dispatch(a);
      bad += rc != 0;
      printf("done %d rc %d\n", k++, rc);
      fflush(stdout);
    }
    fclose(f);
    return bad ? 1 : 0;
  }
  std::vector<std::string> a;
  for (int i = 1; i < argc; i++) a.push_back(argv[i]);
  return dispatch(a);
}
