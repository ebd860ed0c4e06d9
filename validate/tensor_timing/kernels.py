"""CUDA C++ sources of the tensor-pipe microbenchmarks (issue 29.3), generated per case:
each kernel times its own loop with clock64() and writes, per warp, the cycles it took.

- `mma_latency`: one warp, a chain of dependent mma.sync (each accumulates into the last's
  result): cycles per instruction = the tensor.mma_latency_cycles of that type and shape;
- `mma_throughput`: W warps per SM (1..16), each with 4 independent accumulators: FLOP per
  cycle per SM = tensor.<type>_dense_*_per_cycle_per_sm once enough warps issue;
- `wgmma`: W warpgroups per SM issuing wgmma.mma_async m64nNk16 (N 64..256, A and B from
  shared memory through descriptors), committed and waited every 4: FLOP per cycle per SM
  (and its dependent chain, W=1: tensor.wgmma_latency_cycles);
- `wgmma_group`: as `wgmma` (f16, m64nNk16) with 8 wgmma an iteration in groups of G, each group
  fenced, committed and waited on its own (G=1: every wgmma waited alone, as the loop of Triton's
  `tl.dot` on sm_90 does), optionally with a __syncthreads after each wait (`_bar`, the stage loop
  of a TMA GEMM): the latency of a lone wgmma, and what a wait and a barrier behind it cost;
- `ldmatrix`: W warps each issuing ldmatrix.x4 from shared memory: bytes per cycle per SM
  = tensor.shared_operand_bytes_per_cycle_per_sm;
- `cp_async`: W warps copying 16 B per thread global -> shared with cp.async.cg (L2
  resident source): bytes per cycle per SM.

The operand values are whatever shared memory holds: only the time matters. Compiled for
sm_90a (wgmma needs the architecture-specific target). Needs no GPU to compile
(`compile_ptx`, NVRTC); `run.py` launches them on one.
"""
from __future__ import annotations

# type -> (PTX shape, A/B type, C/D type, A regs, B regs, C/D regs (per thread), C++ reg type, constraint, FLOP)
MMA_TYPES = {
    "f16": ("m16n8k16", "f16.f16", "f32", 4, 2, 4, "float", "f", 2 * 16 * 8 * 16),
    "bf16": ("m16n8k16", "bf16.bf16", "f32", 4, 2, 4, "float", "f", 2 * 16 * 8 * 16),
    "tf32": ("m16n8k8", "tf32.tf32", "f32", 4, 2, 4, "float", "f", 2 * 16 * 8 * 8),
    "e4m3": ("m16n8k32", "e4m3.e4m3", "f32", 4, 2, 4, "float", "f", 2 * 16 * 8 * 32),
    "s8": ("m16n8k32", "s8.s8", "s32", 4, 2, 4, "int", "r", 2 * 16 * 8 * 32),
    "f64": ("m8n8k4", "f64.f64", "f64", 1, 1, 2, "double", "d", 2 * 8 * 8 * 4),
}
WGMMA_TYPES = {"f16": ("f16.f16", 16, "f32", "float", "f"), "bf16": ("bf16.bf16", 16, "f32", "float", "f"),
               "e4m3": ("e4m3.e4m3", 32, "f32", "float", "f"), "s8": ("s8.s8", 32, "s32", "int", "r")}
WGMMA_N = (64, 128, 256)
HEADER = """

typedef unsigned long long u64;
__device__ __forceinline__ u64 clk() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
"""


def _mma_asm(kind: str, d: str) -> str:
    """One mma.sync statement accumulating into the array `d` (A, B: arrays a, b)."""
    shape, ab, cd, na, nb, nc, ctype, con, _ = MMA_TYPES[kind]
    ab_con = "d" if kind == "f64" else "r"
    regs = lambda first, n: ", ".join(f"%{first + i}" for i in range(n))            # noqa: E731
    text = (f"mma.sync.aligned.{shape}.row.col.{cd}.{ab}.{cd} {{{regs(0, nc)}}}, {{{regs(nc, na)}}}, "
            f"{{{regs(nc + na, nb)}}}, {{{regs(0, nc)}}};")
    outs = ", ".join(f'"+{con}"({d}[{i}])' for i in range(nc))
    ins = ", ".join([f'"{ab_con}"(a[{i}])' for i in range(na)] + [f'"{ab_con}"(b[{i}])' for i in range(nb)])
    return f'asm volatile("{text}" : {outs} : {ins});'


def mma_source(kind: str, chains: int) -> str:
    """`mma_<kind>_<chains>(out, iters)`: each warp runs `iters` x `chains` mma.sync, `chains`
    independent accumulators (1: the dependent chain)."""
    _, _, _, na, nb, nc, ctype, _, _ = MMA_TYPES[kind]
    ab_type = "double" if kind == "f64" else "unsigned"
    body = "\n".join("        " + _mma_asm(kind, f"d{c}") for c in range(chains))
    decl = "\n".join(f"    {ctype} d{c}[{nc}] = {{0}};" for c in range(chains))
    use = " + ".join(f"(double)d{c}[0]" for c in range(chains))
    return f"""
extern "C" __global__ void mma_{kind}_{chains}(u64 *out, int iters, double *sink) {{
    {ab_type} a[{na}], b[{nb}];
    for (int i = 0; i < {na}; i++) a[i] = ({ab_type})(threadIdx.x + i);
    for (int i = 0; i < {nb}; i++) b[i] = ({ab_type})(threadIdx.x * 3 + i);
{decl}
    __syncthreads();
    u64 t0 = clk();
    for (int it = 0; it < iters; it++) {{
{body}
    }}
    u64 t1 = clk();
    if ((threadIdx.x & 31) == 0) out[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = t1 - t0;
    if ({use} == 12345.0) sink[0] = 1.0;
}}
"""


def wgmma_source(kind: str, n: int) -> str:
    """`wgmma_<kind>_<n>(out, iters)`: each warpgroup issues 4 wgmma m64n<n> per iteration into
    one accumulator, commits them and waits for the group."""
    ab, k, cd, ctype, con = WGMMA_TYPES[kind]
    nacc = n // 2                                   # f32/s32 accumulator registers per thread
    regs = ", ".join(f"%{i}" for i in range(nacc))
    scale = {"s8": "", "e4m3": ", 1, 1"}.get(kind, ", 1, 1, 0, 0")     # scale-a, scale-b (, transpose a, b)
    text = (f"{{ .reg .pred p; setp.ne.b32 p, %{nacc + 2}, 0; wgmma.mma_async.sync.aligned.m64n{n}k{k}.{cd}.{ab} "
            f"{{{regs}}}, %{nacc}, %{nacc + 1}, p{scale}; }}")
    outs = ", ".join(f'"+{con}"(d[{i}])' for i in range(nacc))
    one = f'asm volatile("{text}" : {outs} : "l"(da), "l"(db), "r"(1));'
    body = "\n".join("        " + one for _ in range(4))
    return f"""
extern "C" __global__ void wgmma_{kind}_{n}(u64 *out, int iters, double *sink) {{
    extern __shared__ __align__(1024) unsigned char smem[];          // 64 KiB, dynamic (static stops at 48 KiB)
    for (int i = threadIdx.x; i < 64 * 1024 / 4; i += blockDim.x) ((unsigned *)smem)[i] = i;
    __syncthreads();
    unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    u64 da = ((u64)((base >> 4) & 0x3FFF)) | (1ull << 16) | (64ull << 32);
    u64 db = ((u64)(((base + 16384) >> 4) & 0x3FFF)) | (1ull << 16) | (64ull << 32);
    {ctype} d[{nacc}];
    for (int i = 0; i < {nacc}; i++) d[i] = 0;
    u64 t0 = clk();
    for (int it = 0; it < iters; it++) {{
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
{body}
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }}
    u64 t1 = clk();
    if ((threadIdx.x & 31) == 0) out[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = t1 - t0;
    if ((double)d[0] == 12345.0) sink[0] = 1.0;
}}
"""


WGMMA_GROUPS = (1, 2, 8)            # wgmma per commit and wait of `wgmma_group` (4 is `wgmma`'s)
WGMMA_BAR_GROUPS = (1, 4)           # ... with a __syncthreads after each wait


def wgmma_group_source(n: int, g: int, bar: bool) -> str:
    """`wgmma_g<g>_<n>[_bar](out, iters)`: each warpgroup issues 8 f16 wgmma m64n<n>k16 per
    iteration into one accumulator, in 8/g groups of g, each fenced, committed and waited
    (`bar`: then a __syncthreads)."""
    nacc = n // 2
    regs = ", ".join(f"%{i}" for i in range(nacc))
    text = (f"{{ .reg .pred p; setp.ne.b32 p, %{nacc + 2}, 0; wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 "
            f"{{{regs}}}, %{nacc}, %{nacc + 1}, p, 1, 1, 0, 0; }}")
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(nacc))
    one = f'asm volatile("{text}" : {outs} : "l"(da), "l"(db), "r"(1));'
    group = "\n".join(['        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");']
                      + ["        " + one] * g
                      + ['        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");',
                         '        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");']
                      + (["        __syncthreads();"] if bar else []))
    body = "\n".join([group] * (8 // g))
    return f"""
extern "C" __global__ void wgmma_g{g}_{n}{'_bar' if bar else ''}(u64 *out, int iters, double *sink) {{
    extern __shared__ __align__(1024) unsigned char smem[];
    for (int i = threadIdx.x; i < 64 * 1024 / 4; i += blockDim.x) ((unsigned *)smem)[i] = i;
    __syncthreads();
    unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    u64 da = ((u64)((base >> 4) & 0x3FFF)) | (1ull << 16) | (64ull << 32);
    u64 db = ((u64)(((base + 16384) >> 4) & 0x3FFF)) | (1ull << 16) | (64ull << 32);
    float d[{nacc}];
    for (int i = 0; i < {nacc}; i++) d[i] = 0;
    u64 t0 = clk();
    for (int it = 0; it < iters; it++) {{
{body}
    }}
    u64 t1 = clk();
    if ((threadIdx.x & 31) == 0) out[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = t1 - t0;
    if ((double)d[0] == 12345.0) sink[0] = 1.0;
}}
"""


LDMATRIX_SOURCE = """
extern "C" __global__ void ldmatrix_x4(u64 *out, int iters, double *sink) {
    __shared__ __align__(128) unsigned short smem[16 * 1024];
    for (int i = threadIdx.x; i < 16 * 1024; i += blockDim.x) smem[i] = i;
    __syncthreads();
    int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    unsigned addr = (unsigned)__cvta_generic_to_shared(smem + ((warp * 32 + lane) % 512) * 8);
    unsigned r0 = 0, r1 = 0, r2 = 0, r3 = 0, acc = 0;
    u64 t0 = clk();
    for (int it = 0; it < iters; it++) {
        #pragma unroll
        for (int u = 0; u < 8; u++) {
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                         : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr + u * 4096 % 16384));
            acc ^= r0 ^ r1 ^ r2 ^ r3;
        }
    }
    u64 t1 = clk();
    if (lane == 0) out[blockIdx.x * (blockDim.x / 32) + warp] = t1 - t0;
    if (acc == 0x12345) sink[0] = 1.0;
}
"""

CP_ASYNC_SOURCE = """
extern "C" __global__ void cp_async_16(u64 *out, int iters, const int4 *src, double *sink) {
    extern __shared__ __align__(128) int4 smem_raw[];               // 64 KiB, dynamic (static stops at 48 KiB)
    int4 (*smem)[1024] = reinterpret_cast<int4 (*)[1024]>(smem_raw);
    int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    unsigned dst = (unsigned)__cvta_generic_to_shared(&smem[0][threadIdx.x % 1024]);
    const int4 *p = src + (blockIdx.x * blockDim.x + threadIdx.x) % (1 << 16);
    u64 t0 = clk();
    for (int it = 0; it < iters; it++) {
        #pragma unroll
        for (int s = 0; s < 4; s++)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst + s * 16384), "l"(p + s * 4096));
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
    }
    u64 t1 = clk();
    if (lane == 0) out[blockIdx.x * (blockDim.x / 32) + warp] = t1 - t0;
    if (smem[0][threadIdx.x % 1024].x == 0x12345) sink[0] = 1.0;
}
"""


def source() -> str:
    """All the kernels in one translation unit."""
    parts = [HEADER]
    for kind in MMA_TYPES:
        parts += [mma_source(kind, 1), mma_source(kind, 4)]
    for kind in WGMMA_TYPES:
        parts += [wgmma_source(kind, n) for n in WGMMA_N]
    for n in WGMMA_N:
        parts += [wgmma_group_source(n, g, False) for g in WGMMA_GROUPS]
        parts += [wgmma_group_source(n, g, True) for g in WGMMA_BAR_GROUPS]
    parts += [LDMATRIX_SOURCE, CP_ASYNC_SOURCE]
    return "\n".join(parts)


def compile_ptx(arch: str = "sm_90a") -> str:
    """PTX of `source()` from NVRTC (no GPU needed); raises RuntimeError with NVRTC's log."""
    from cuda.bindings import nvrtc     # here, not at the top: only compiling needs CUDA's NVRTC
    src = source().encode()
    err, prog = nvrtc.nvrtcCreateProgram(src, b"tensor_timing.cu", 0, [], [])
    opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17", b"-default-device"]
    (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC failed ({res}):\n{log.decode(errors='replace')}")
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(prog, ptx)
    nvrtc.nvrtcDestroyProgram(prog)
    return ptx.decode(errors="replace").rstrip("\x00")
