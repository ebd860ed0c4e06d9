"""Example kernels with one bug each (and their fixed twins), for the sanitizer tests.

Line numbers matter: tests find the lines of the racing accesses by the marker comments
(`# L:name`) through `line_of`.
"""
from __future__ import annotations

import inspect

import numpy as np
from numba import cuda, float32, int32, uint8

TPB = 128


def line_of(marker: str) -> int:
    """The source line of this file carrying the comment `# L:<marker>`."""
    lines, _ = inspect.getsourcelines(inspect.getmodule(line_of))
    for i, text in enumerate(lines):
        if text.rstrip().endswith(f"# L:{marker}"):
            return i + 1
    raise KeyError(marker)


@cuda.jit
def tree_reduce_no_sync(a, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]                     # L:tree
        stride //= 2                                  # the syncthreads() belongs here
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def tree_reduce(a, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def warp_reduce_no_syncwarp(a, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]
    cuda.syncwarp()
    if t < 16:
        s[t] += s[t + 16]                             # L:warp16
    if t < 8:
        s[t] += s[t + 8]                              # L:warp8
    if t < 4:
        s[t] += s[t + 4]
    if t < 2:
        s[t] += s[t + 2]
    if t < 1:
        s[t] += s[t + 1]
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def warp_reduce(a, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]
    cuda.syncwarp()
    k = 16
    while k > 0:
        v = s[t + k] if t < k else 0.0
        cuda.syncwarp()
        if t < k:
            s[t] += v
        cuda.syncwarp()
        k //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def neighbour_blocks(a):
    """Each block reads the first element of the next block's slice, which that block writes."""
    i = cuda.grid(1)
    a[i] = a[i] * 2                                   # L:nb_write
    if cuda.threadIdx.x == cuda.blockDim.x - 1 and i + 1 < a.size:
        a[i] += a[i + 1]                              # L:nb_read


@cuda.jit
def every_block_stores_flag(flag, out):
    out[cuda.grid(1)] = 1
    if cuda.threadIdx.x == 0:
        flag[0] = cuda.blockIdx.x                     # L:flag


@cuda.jit
def atomic_count(counter):
    cuda.atomic.add(counter, 0, 1)


@cuda.jit
def atomic_then_plain_read(counter, out):
    cuda.atomic.add(counter, 0, 1)                    # L:atom
    out[cuda.grid(1)] = counter[0]                    # L:atom_read


@cuda.jit
def shared_read_before_store(out):
    s = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    if t < 32:
        s[t] = t
    cuda.syncthreads()
    out[t] = s[t]                                     # L:uninit_shared


@cuda.jit
def copy(src, dst):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]                               # L:copy


@cuda.jit
def past_the_end(a):
    i = cuda.grid(1)
    a[i] = 1.0                                        # L:oob


@cuda.jit
def misaligned(a):
    b = a[1:65].view(np.int32)
    b[cuda.threadIdx.x] = 1                           # L:misaligned


@cuda.jit
def divergent_barrier(a):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()                            # L:divbar
    a[t] = t


@cuda.jit
def shfl_after_exit(a, out):
    t = cuda.threadIdx.x
    if t >= 16:
        return
    out[t] = cuda.shfl_down_sync(0xFFFFFFFF, a[t], 1)  # L:shfl_exit


@cuda.jit
def shfl_in_branch(a, out):
    t = cuda.threadIdx.x
    v = a[t]
    if t < 16:
        v = cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)      # L:shfl_div
    out[t] = v


@cuda.jit
def shfl_half_warp(a, out):
    t = cuda.threadIdx.x
    v = a[t]
    if t < 16:
        v = cuda.shfl_xor_sync(0x0000FFFF, v, 1)
    out[t] = v


@cuda.jit
def byte_per_thread(out):
    s = cuda.shared.array(128, uint8)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    out[t] = s[127 - t]


@cuda.jit
def global_shift_no_sync(a, out):
    t = cuda.threadIdx.x
    a[t] = t                                          # L:gs_write
    out[t] = a[(t + 32) % 64]                         # L:gs_read


@cuda.jit
def global_shift(a, out):
    t = cuda.threadIdx.x
    a[t] = t
    cuda.syncthreads()
    out[t] = a[(t + 32) % 64]


@cuda.jit
def shfl_caller_outside_mask(a, out):
    """All 32 lanes shuffle with a mask naming only lanes 0-15."""
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_xor_sync(0xFFFF, a[t], 1)      # L:shfl_caller


@cuda.jit
def shfl_zero_mask(a, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(0, a[t], 1)          # L:shfl_zero


@cuda.jit
def shfl_reads_inactive_lane(a, out):
    """Lanes 0-15 read lane 20, which neither executes the shuffle nor is in its mask."""
    t = cuda.threadIdx.x
    v = a[t]
    if t < 16:
        v = cuda.shfl_sync(0xFFFF, v, 20)             # L:shfl_src
    out[t] = v


@cuda.jit
def fill_first_half(d):
    i = cuda.grid(1)
    if i < d.size // 2:
        d[i] = 1


@cuda.jit
def fill(d):
    i = cuda.grid(1)
    if i < d.size:
        d[i] = 1


@cuda.jit
def copy2d(src, dst):
    i, j = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = src[i, j]                         # L:copy2d
