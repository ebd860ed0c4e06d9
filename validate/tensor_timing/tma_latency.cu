// The latency of one TMA copy on Hopper (issue 29, `tensor.tma_latency_cycles`): one thread
// issues a copy into shared memory, waits on its mbarrier, and reads %clock64 around the pair;
// copies one after another, each from data the L2 holds (the first of each run warms it), or
// each from a line not read before (DRAM). Beside it the ld.global.cg chase the L2 hit latency
// of the presets comes from. Device code only: NVRTC (gpusim.CudaSource) and nvcc
// (tma_latency_main.cu) compile it alike. validate/tensor_timing/tma_latency.py runs it.
// helpers: begin (validate/dram_concurrency_probe.py uses them too)
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 clk() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory"); return t; }
__device__ __forceinline__ u32 saddr(const void *p) { return (u32)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bar_init(u64 *bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(saddr(bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void bar_expect(u64 *bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(saddr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_wait(u64 *bar, u32 phase) {
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}"
                 :: "r"(saddr(bar)), "r"(phase) : "memory");
}

// helpers: end

// cycles[r] = cycles of the r-th bulk copy of `bytes` from src + r * stride (stride 0: the same
// bytes), by thread 0 of the block
__device__ __forceinline__ void bulk_loop(const char *src, u32 bytes, u64 stride, int reps, u64 *cycles) {
    __shared__ __align__(128) char buf[16384];
    __shared__ __align__(8) u64 bar;
    if (threadIdx.x != 0) return;
    bar_init(&bar);
    u32 phase = 0;
    for (int r = 0; r < reps; r++) {
        const char *g = src + r * stride;
        u64 t0 = clk();
        bar_expect(&bar, bytes);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(saddr(buf)), "l"(g), "r"(bytes), "r"(saddr(&bar)) : "memory");
        bar_wait(&bar, phase);
        u64 t1 = clk();
        phase ^= 1;
        cycles[r] = t1 - t0;
    }
}

extern "C" __global__ void bulk_latency(const char *src, u32 bytes, u64 stride, int reps, u64 *cycles) {
    bulk_loop(src, bytes, stride, reps, cycles);
}

// The same from `gridDim.x` blocks at once, block b's r-th copy from src + b * band + r * stride:
// cycles[b * reps + r]
extern "C" __global__ void bulk_latency_blocks(const char *src, u32 bytes, u64 stride, u64 band, int reps, u64 *cycles) {
    bulk_loop(src + (size_t)blockIdx.x * band, bytes, stride, reps, cycles + (size_t)blockIdx.x * reps);
}

// cycles[0] = the cycles of `reps` dependent ld.global.cg (each u64 the byte offset of the next);
// cycles[1] = the last offset (so the chain is not removed)
extern "C" __global__ void cg_chase(const u64 *src, int reps, u64 *cycles) {
    if (threadIdx.x != 0) return;
    u64 off = 0;
    u64 t0 = clk();
    for (int r = 0; r < reps; r++)
        asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(off) : "l"((const char *)src + off) : "memory");
    u64 t1 = clk();
    cycles[0] = t1 - t0;
    cycles[1] = off;
}

// A 2-D tensor map (CUtensorMap: 128 opaque bytes, 64-B aligned) as a __grid_constant__ parameter.
struct __align__(64) TensorMap { u64 opaque[16]; };

// cycles[r] = cycles of the r-th 2-D tensor copy of the box at (x, y + r * dy) (dy 0: the same
// box), by thread 0 of the block
__device__ __forceinline__ void tensor_loop(const TensorMap *map, u32 bytes, int x, int y, int dy, int reps,
                                            u64 *cycles) {
    __shared__ __align__(128) char buf[16384];
    __shared__ __align__(8) u64 bar;
    if (threadIdx.x != 0) return;
    bar_init(&bar);
    u32 phase = 0;
    for (int r = 0; r < reps; r++) {
        u64 t0 = clk();
        bar_expect(&bar, bytes);
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(saddr(buf)), "l"((u64)map), "r"(x), "r"(y + r * dy), "r"(saddr(&bar)) : "memory");
        bar_wait(&bar, phase);
        u64 t1 = clk();
        phase ^= 1;
        cycles[r] = t1 - t0;
    }
}

extern "C" __global__ void tensor_latency(const __grid_constant__ TensorMap map, u32 bytes, int x, int y, int dy,
                                          int reps, u64 *cycles) {
    tensor_loop(&map, bytes, x, y, dy, reps, cycles);
}

// The same from `gridDim.x` blocks at once, block b's boxes at (x, y + b * by + r * dy):
// cycles[b * reps + r] (rows of DRAM pages and channels shared by concurrent copies)
extern "C" __global__ void tensor_latency_blocks(const __grid_constant__ TensorMap map, u32 bytes, int x, int y, int dy,
                                                 int by, int reps, u64 *cycles) {
    tensor_loop(&map, bytes, x, y + (int)blockIdx.x * by, dy, reps, cycles + (size_t)blockIdx.x * reps);
}
