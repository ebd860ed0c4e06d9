"""The microbenchmarks' kernels (`microbench.py` has what each measures, its sizes and
builders): Numba CUDA kernels and the `clock64` intrinsic, importable on a GPU machine
without gpusim (`validate measure`) and run by gpusim from the same source.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import cuda, float32, int64, types, uint32, uint64
from numba.cuda.extending import intrinsic

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
FILL_BLOCKS = 1056                       # 8 blocks of 256 threads per SM, 132 SMs
BW_BLOCKS, THREADS = 1024, 256           # bandwidth grid: 2^18 threads, divides the sizes
SMEM_WORDS = 4096                        # 16 KiB: 8 blocks fit an SM
SMEM_PER_ITER = 4                        # shared accesses per thread per iteration: w + k * 1024
CHAINS = 8                               # independent dependency chains per thread
STEPS = 4                                # steps of each chain per loop iteration (fully unrolled)
OMEGA = 0.5671432904097838               # x = exp(-x), the fixed point of the SFU chain


@intrinsic
def clock64(typingctx):
    """The SM cycle counter (`mov.u64 %rd, %clock64`), as a volatile read."""
    def codegen(context, builder, signature, args):
        asm = ir.InlineAsm(ir.FunctionType(ir.IntType(64), []), "mov.u64 $0, %clock64;",
                           "=l,~{memory}", side_effect=True)
        return builder.call(asm, [])
    return types.int64(), codegen


# ---- kernels ---------------------------------------------------------------------

@cuda.jit
def pointer_chase(nxt, last, cycles, warm, hops):
    j = uint64(0)
    for _ in range(warm):
        j = nxt[j]
    t0 = clock64()
    for _ in range(hops):
        j = nxt[j]
    t1 = clock64()
    last[0] = j
    cycles[0] = t1 - t0


@cuda.jit
def bw_read(x, out, reps):
    t = cuda.grid(1)
    T = cuda.gridsize(1)
    acc = int64(0)
    for _ in range(reps):
        i = t
        while i < x.size:                       # 4 independent loads in flight per thread
            acc += x[i] + x[i + T] + x[i + 2 * T] + x[i + 3 * T]
            i += 4 * T
    out[t] = acc


@cuda.jit
def bw_write(x, reps):
    t = cuda.grid(1)
    T = cuda.gridsize(1)
    for r in range(reps):
        i = t
        while i < x.size:
            x[i] = i + r
            x[i + T] = i + T + r
            x[i + 2 * T] = i + 2 * T + r
            x[i + 3 * T] = i + 3 * T + r
            i += 4 * T


@cuda.jit
def bw_copy(x, y, reps):
    t = cuda.grid(1)
    T = cuda.gridsize(1)
    for _ in range(reps):
        i = t
        while i < x.size:                       # 4 loads issued before the stores (x, y may alias)
            a, b, c, d = x[i], x[i + T], x[i + 2 * T], x[i + 3 * T]
            y[i], y[i + T], y[i + 2 * T], y[i + 3 * T] = a, b, c, d
            i += 4 * T


@cuda.jit
def random_read(x, out, iters, shift):
    i = cuda.grid(1)
    h = uint32(uint32(i) * uint32(2654435761) + uint32(12345))
    acc = uint32(0)
    for _ in range(iters):                      # every lane a random element: a random line and sector each
        h = uint32(h * uint32(1664525) + uint32(1013904223))
        acc = uint32(acc + uint32(x[h >> shift]))
    out[i] = acc


@cuda.jit
def random_write(x, iters, shift):
    i = cuda.grid(1)
    h = uint32(uint32(i) * uint32(2654435761) + uint32(12345))
    for _ in range(iters):                      # 4-byte stores to random sectors: partial-sector writes
        h = uint32(h * uint32(1664525) + uint32(1013904223))
        x[h >> shift] = 1


def _random_indices(threads: int, iters: int, shift: int) -> np.ndarray:
    """The (threads, iters) element indices the random_* kernels visit (their LCG, on the host)."""
    h = (np.arange(threads, dtype=np.uint64) * 2654435761 + 12345) & 0xFFFFFFFF
    out = np.empty((threads, iters), np.uint32)
    for k in range(iters):
        h = (h * 1664525 + 1013904223) & 0xFFFFFFFF
        out[:, k] = h >> shift
    return out


@cuda.jit
def smem_load_stride(out, stride, reps):
    sh = cuda.shared.array(SMEM_WORDS, float32)
    tid = cuda.threadIdx.x
    for k in range(tid, SMEM_WORDS, cuda.blockDim.x):
        sh[k] = float32(k & 255)
    cuda.syncthreads()
    base = uint64((tid & 31) * stride)          # lanes l*stride: gcd(stride, 32)-way conflict
    a0 = a1 = a2 = a3 = float32(0)
    for r in range(reps):                       # unsigned indices: no negative-index wraparound code
        w = base + uint64(r & 31)               # < 1024; w + k*1024 is in the same bank
        a0 += sh[w]
        a1 += sh[w + uint64(1024)]
        a2 += sh[w + uint64(2048)]
        a3 += sh[w + uint64(3072)]
    out[cuda.grid(1)] = (a0 + a1) + (a2 + a3)


@cuda.jit
def smem_store_stride(out, stride, reps):
    sh = cuda.shared.array(SMEM_WORDS, float32)
    tid = cuda.threadIdx.x
    for k in range(tid, SMEM_WORDS, cuda.blockDim.x):
        sh[k] = float32(k & 255)
    base = uint64((tid & 31) * stride)
    for r in range(reps):
        w = base + uint64(r & 31)
        v = float32(w & uint64(255))            # same value every writer: race-free result
        sh[w] = v
        sh[w + uint64(1024)] = v
        sh[w + uint64(2048)] = v
        sh[w + uint64(3072)] = v
    cuda.syncthreads()
    for k in range(tid, SMEM_WORDS, cuda.blockDim.x):
        out[cuda.blockIdx.x * SMEM_WORDS + k] = sh[k]


@cuda.jit(device=True)
def _fma_steps(c, m, d):
    for _ in range(STEPS):                      # constant trip count: unrolled, no loop overhead
        c = c * m + d
    return c


def _fma_chains(x, m, d, out, iters):
    i = cuda.grid(1)
    mi, di = m[i], d[i]
    c0, c1, c2, c3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
    c4, c5, c6, c7 = x[i, 4], x[i, 5], x[i, 6], x[i, 7]
    for _ in range(iters):
        c0 = _fma_steps(c0, mi, di)
        c1 = _fma_steps(c1, mi, di)
        c2 = _fma_steps(c2, mi, di)
        c3 = _fma_steps(c3, mi, di)
        c4 = _fma_steps(c4, mi, di)
        c5 = _fma_steps(c5, mi, di)
        c6 = _fma_steps(c6, mi, di)
        c7 = _fma_steps(c7, mi, di)
    out[i] = ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7))


issue_fp32_fma = cuda.jit(_fma_chains)
issue_fp64_fma = cuda.jit(_fma_chains)


@cuda.jit(device=True)
def _add_steps(a, b):
    for _ in range(STEPS // 2):                 # a += b; b += a: no closed form for LLVM
        a = uint32(a + b)
        b = uint32(b + a)
    return a, b


@cuda.jit
def issue_int32_add(x, y, out, iters):
    i = cuda.grid(1)
    a0, a1, a2, a3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
    b0, b1, b2, b3 = y[i, 0], y[i, 1], y[i, 2], y[i, 3]
    for _ in range(iters):
        a0, b0 = _add_steps(a0, b0)
        a1, b1 = _add_steps(a1, b1)
        a2, b2 = _add_steps(a2, b2)
        a3, b3 = _add_steps(a3, b3)
    out[i, 0], out[i, 1], out[i, 2], out[i, 3] = a0, a1, a2, a3
    out[i, 4], out[i, 5], out[i, 6], out[i, 7] = b0, b1, b2, b3


@cuda.jit(device=True)
def _mul_steps(c, m):
    for _ in range(STEPS):
        c = uint32(c * m)
    return c


@cuda.jit
def issue_int32_mul(x, m, out, iters):
    i = cuda.grid(1)
    mi = m[i]
    c0, c1, c2, c3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
    c4, c5, c6, c7 = x[i, 4], x[i, 5], x[i, 6], x[i, 7]
    for _ in range(iters):
        c0 = _mul_steps(c0, mi)
        c1 = _mul_steps(c1, mi)
        c2 = _mul_steps(c2, mi)
        c3 = _mul_steps(c3, mi)
        c4 = _mul_steps(c4, mi)
        c5 = _mul_steps(c5, mi)
        c6 = _mul_steps(c6, mi)
        c7 = _mul_steps(c7, mi)
    out[i, 0], out[i, 1], out[i, 2], out[i, 3] = c0, c1, c2, c3
    out[i, 4], out[i, 5], out[i, 6], out[i, 7] = c4, c5, c6, c7


@cuda.jit(device=True, fastmath=True)
def _exp_steps(c):
    for _ in range(STEPS):                      # fastmath: ex2.approx (MUFU.EX2) per exp
        c = math.exp(-c)
    return c


@cuda.jit(fastmath=True)
def issue_sfu_exp(x, out, iters):
    i = cuda.grid(1)
    c0, c1, c2, c3 = x[i, 0], x[i, 1], x[i, 2], x[i, 3]
    c4, c5, c6, c7 = x[i, 4], x[i, 5], x[i, 6], x[i, 7]
    for _ in range(iters):
        c0 = _exp_steps(c0)
        c1 = _exp_steps(c1)
        c2 = _exp_steps(c2)
        c3 = _exp_steps(c3)
        c4 = _exp_steps(c4)
        c5 = _exp_steps(c5)
        c6 = _exp_steps(c6)
        c7 = _exp_steps(c7)
    out[i] = ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7))


@cuda.jit
def atomic_global(counts, mask, iters):
    slot = cuda.grid(1) & mask                  # mask 0: one address; -1: one per thread
    for _ in range(iters):
        cuda.atomic.add(counts, slot, 1)


@cuda.jit
def atomic_shared(out, mask, iters):
    sh = cuda.shared.array(THREADS, types.int32)
    tid = cuda.threadIdx.x
    sh[tid] = 0
    cuda.syncthreads()
    slot = tid & mask
    for _ in range(iters):
        cuda.atomic.add(sh, slot, 1)
    cuda.syncthreads()
    out[cuda.blockIdx.x * cuda.blockDim.x + tid] = sh[tid]


@cuda.jit
def launch_empty(out):
    if cuda.grid(1) == 0:
        out[0] = 1


@cuda.jit
def block_dispatch(out):
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = cuda.blockIdx.x
