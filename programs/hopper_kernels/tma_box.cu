// One TMA box, there and back: cp.async.bulk.tensor loads the box of tensor map `src` at
// (c0, c1, c2) into shared memory (completing an mbarrier by its bytes), the block copies the
// raw shared-memory bytes to `dump` (so the swizzle, the traversal strides and the out-of-bounds
// fill show byte for byte), and a TMA store writes the box to tensor map `dst` at (d0, d1, d2)
// (out-of-bounds elements are not written). RANK is 1..3; the unused coordinates are ignored. The
// box lands `shift` bytes past a 1024-byte boundary (0 for the cases; the GPU script's probes move it).
// Each box must start at a 16-byte aligned global address (c0, d0 x element size multiples of 16):
// the GPU stops the kernel at the copy with an illegal instruction otherwise.
typedef unsigned long long uint64_t;
typedef unsigned int uint32_t;

struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

template <int RANK>
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* m, int c0, int c1, int c2, uint32_t bar) {
    const uint64_t map = reinterpret_cast<uint64_t>(m);
    if (RANK == 1)
        asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];"
                     :: "r"(dst), "l"(map), "r"(c0), "r"(bar) : "memory");
    else if (RANK == 2)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
    else
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                     :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}

template <int RANK>
__device__ __forceinline__ void tma_store(const CUtensorMap* m, int c0, int c1, int c2, uint32_t src) {
    const uint64_t map = reinterpret_cast<uint64_t>(m);
    if (RANK == 1)
        asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%1}], [%2];"
                     :: "l"(map), "r"(c0), "r"(src) : "memory");
    else if (RANK == 2)
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(map), "r"(c0), "r"(c1), "r"(src) : "memory");
    else
        asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];"
                     :: "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(src) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

template <int RANK>
__global__ void tma_box(const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst,
                        unsigned char* dump, int nbytes, int c0, int c1, int c2, int d0, int d1, int d2, int shift) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full;
    const uint32_t base = ((smem_addr(smem_raw) + 1023u) & ~1023u) + shift;   // 1024-byte aligned, + shift
    const unsigned char* box = smem_raw + (base - smem_addr(smem_raw));
    const uint32_t bar = smem_addr(&full);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(nbytes) : "memory");
        tma_load<RANK>(base, &src, c0, c1, c2, bar);
    }
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar) : "memory");
    } while (!done);
    for (int i = threadIdx.x; i < nbytes; i += blockDim.x) dump[i] = box[i];
    __syncthreads();
    if (threadIdx.x == 0) tma_store<RANK>(&dst, d0, d1, d2, base);
}
