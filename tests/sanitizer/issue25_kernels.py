"""Racy, uninitialised and mis-synchronised kernels written for issue 25, each with a
clean counterpart. Line numbers matter: the expected hazards name lines by the marker
comments (`# L:name`, found by `line_of`).

A block spinning on a flag another block sets is launched with one block per batch
(`batch_lanes`), so the writer's block has finished when the reader's starts (one of the
schedules a GPU may run); a warp spinning on another warp of its block relies on the
functional core's scheduler running the writer's code (lower basic blocks) first.
"""
from __future__ import annotations

import inspect

from numba import cuda, int32

N = 64


def line_of(marker: str) -> int:
    lines, _ = inspect.getsourcelines(inspect.getmodule(line_of))
    for i, text in enumerate(lines):
        if text.rstrip().endswith(f"# L:{marker}"):
            return i + 1
    raise KeyError(marker)


# ----------------------------------------------------------------------------- racecheck: shared memory
@cuda.jit
def shared_rotate_no_sync(a, out):
    s = cuda.shared.array(N, int32)
    t = cuda.threadIdx.x
    s[t] = a[t]                                       # L:rot_w
    out[t] = s[(t + 32) % N]                          # L:rot_r


@cuda.jit
def shared_rotate(a, out):
    s = cuda.shared.array(N, int32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[(t + 32) % N]


@cuda.jit
def shared_shift_war(a, out):
    s = cuda.shared.array(N, int32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    v = s[(t + 32) % N]                               # L:war_r
    s[t] = v + 1                                      # L:war_w
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def shared_shift(a, out):
    s = cuda.shared.array(N, int32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    v = s[(t + 32) % N]
    cuda.syncthreads()
    s[t] = v + 1
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def shared_every_warp_writes_slot0(out):
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t % 32 == 0:
        s[0] = t                                      # L:slot0
    cuda.syncthreads()
    out[t] = s[0]


@cuda.jit
def shared_one_thread_writes_slot0(out):
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        s[0] = 7
    cuda.syncthreads()
    out[t] = s[0]


@cuda.jit
def warp_reverse_no_syncwarp(a, out):
    s = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    s[t] = a[t]                                       # L:wrev_w
    out[t] = s[31 - t]                                # L:wrev_r


@cuda.jit
def warp_reverse(a, out):
    s = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncwarp()
    out[t] = s[31 - t]


# ----------------------------------------------------------------------------- racecheck: global memory
@cuda.jit
def global_neighbour_block(a, out):
    i = cuda.grid(1)
    a[i] = i                                          # L:gnb_w
    out[i] = a[(i + 32) % a.size]                     # L:gnb_r


@cuda.jit
def message_passing(data, flag, out):
    """Block 0's threads store, meet at a barrier, and thread 0 fences and raises the flag;
    block 1's thread 0 spins, fences, and a barrier passes what it acquired to the block."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0:
        data[t] = t + 1
        cuda.syncthreads()
        if t == 0:
            cuda.threadfence()
            cuda.atomic.exch(flag, 0, 1)
    if b == 1:
        if t == 0:
            while cuda.atomic.cas(flag, 0, 0, 0) == 0:
                pass
        cuda.syncthreads()
        cuda.threadfence()
        out[t] = data[t]


@cuda.jit
def message_passing_one_thread(data, flag, out):
    """The hostile trial's form: one writer thread, one reader thread, fences on both sides."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0 and t == 0:
        data[0] = 42
        cuda.threadfence()
        cuda.atomic.exch(flag, 0, 1)
    if b == 1 and t == 0:
        while cuda.atomic.cas(flag, 0, 0, 0) == 0:
            pass
        cuda.threadfence()
        out[0] = data[0]


@cuda.jit
def mp_no_writer_fence(data, flag, out):
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0 and t == 0:
        data[0] = 42                                  # L:nwf_w
        cuda.atomic.exch(flag, 0, 1)
    if b == 1 and t == 0:
        while cuda.atomic.cas(flag, 0, 0, 0) == 0:
            pass
        cuda.threadfence()
        out[0] = data[0]                              # L:nwf_r


@cuda.jit
def mp_no_reader_fence(data, flag, out):
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0 and t == 0:
        data[0] = 42                                  # L:nrf_w
        cuda.threadfence()
        cuda.atomic.exch(flag, 0, 1)
    if b == 1 and t == 0:
        while cuda.atomic.cas(flag, 0, 0, 0) == 0:
            pass
        out[0] = data[0]                              # L:nrf_r


@cuda.jit
def mp_block_fence_across_blocks(data, flag, out):
    """threadfence_block orders within the block only: no synchronisation with block 1."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0 and t == 0:
        data[0] = 42                                  # L:bfb_w
        cuda.threadfence_block()
        cuda.atomic.exch(flag, 0, 1)
    if b == 1 and t == 0:
        while cuda.atomic.cas(flag, 0, 0, 0) == 0:
            pass
        cuda.threadfence_block()
        out[0] = data[0]                              # L:bfb_r


@cuda.jit
def mp_plain_flag(data, flag, out):
    """The flag is set with a plain store: not a release, and a race on the flag itself."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0 and t == 0:
        data[0] = 42                                  # L:pf_dw
        cuda.threadfence()
        flag[0] = 1                                   # L:pf_fw
    if b == 1 and t == 0:
        while cuda.atomic.cas(flag, 0, 0, 0) == 0:    # L:pf_fr
            pass
        cuda.threadfence()
        out[0] = data[0]                              # L:pf_dr


@cuda.jit
def mp_store_after_fence(data, flag, out):
    """data[1] is stored after the fence: the flag does not release it."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0 and t == 0:
        data[0] = 42
        cuda.threadfence()
        data[1] = 43                                  # L:saf_w
        cuda.atomic.exch(flag, 0, 1)
    if b == 1 and t == 0:
        while cuda.atomic.cas(flag, 0, 0, 0) == 0:
            pass
        cuda.threadfence()
        out[0] = data[0]
        out[1] = data[1]                              # L:saf_r


@cuda.jit
def mp_shared_flag_in_block(out):
    """Warp 0 passes shared data to warp 1 through a shared-memory flag and threadfence_block."""
    s = cuda.shared.array(32, int32)
    flag = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        flag[0] = 0
    cuda.syncthreads()
    if t < 32:
        s[t] = t * 3
        cuda.syncwarp()
        if t == 0:
            cuda.threadfence_block()
            cuda.atomic.exch(flag, 0, 1)
    if t >= 32:
        while cuda.atomic.cas(flag, 0, 0, 0) == 0:
            pass
        cuda.threadfence_block()
        out[t - 32] = s[t - 32]


@cuda.jit
def mp_chain(data, flags, out):
    """Block 0 -> block 1 -> block 2: block 2 reads what block 0 wrote (happens-before is transitive)."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0 and t == 0:
        data[0] = 5
        cuda.threadfence()
        cuda.atomic.exch(flags, 0, 1)
    if b == 1 and t == 0:
        while cuda.atomic.cas(flags, 0, 0, 0) == 0:
            pass
        cuda.threadfence()
        cuda.atomic.exch(flags, 1, 1)
    if b == 2 and t == 0:
        while cuda.atomic.cas(flags, 1, 0, 0) == 0:
            pass
        cuda.threadfence()
        out[0] = data[0]


@cuda.jit
def mp_release_sequence(data, flag, out):
    """Block 1's relaxed atomic add continues block 0's release sequence on the flag."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0 and t == 0:
        data[0] = 9
        cuda.threadfence()
        cuda.atomic.add(flag, 0, 1)
    if b == 1 and t == 0:
        cuda.atomic.add(flag, 0, 1)
    if b == 2 and t == 0:
        while cuda.atomic.cas(flag, 0, 2, 2) != 2:
            pass
        cuda.threadfence()
        out[0] = data[0]


@cuda.jit
def mp_warp_partials_syncwarp(data, flag, out):
    """Every lane of block 0 writes its partial; syncwarp; lane 0 fences and raises the flag."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0:
        data[t] = t
        cuda.syncwarp()
        if t == 0:
            cuda.threadfence()
            cuda.atomic.exch(flag, 0, 1)
    if b == 1:
        if t == 0:
            while cuda.atomic.cas(flag, 0, 0, 0) == 0:
                pass
            cuda.threadfence()
        cuda.syncwarp()
        out[t] = data[t]


@cuda.jit
def mp_warp_partials_no_syncwarp(data, flag, out):
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if b == 0:
        data[t] = t                                   # L:wp_w
        if t == 0:
            cuda.threadfence()
            cuda.atomic.exch(flag, 0, 1)
    if b == 1:
        if t == 0:
            while cuda.atomic.cas(flag, 0, 0, 0) == 0:
                pass
            cuda.threadfence()
        cuda.syncwarp()
        out[t] = data[t]                              # L:wp_r


@cuda.jit
def last_block_sum(a, partial, count, out):
    """The CUDA Programming Guide's "Memory Fence Functions" idiom: the last block to finish sums."""
    last = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if t == 0:
        partial[b] = a[b]
        cuda.threadfence()
        ticket = cuda.atomic.add(count, 0, 1)
        last[0] = ticket == cuda.gridDim.x - 1
    cuda.syncthreads()
    if last[0] and t == 0:
        s = 0
        for k in range(cuda.gridDim.x):
            s += partial[k]
        out[0] = s


@cuda.jit
def last_block_sum_no_fence(a, partial, count, out):
    last = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if t == 0:
        partial[b] = a[b]                             # L:lb_w
        ticket = cuda.atomic.add(count, 0, 1)
        last[0] = ticket == cuda.gridDim.x - 1
    cuda.syncthreads()
    if last[0] and t == 0:
        s = 0
        for k in range(cuda.gridDim.x):
            s += partial[k]                           # L:lb_r
        out[0] = s


@cuda.jit
def grid_sync_rotate(a, out):
    i = cuda.grid(1)
    a[i] = i
    cuda.cg.this_grid().sync()
    out[i] = a[(i + 32) % a.size]


@cuda.jit
def grid_sync_rotate_then_race(a, out):
    """Ordered across the grid barrier; the write after it races with other blocks' reads."""
    i = cuda.grid(1)
    a[i] = i
    cuda.cg.this_grid().sync()
    out[i] = a[(i + 32) % a.size]                     # L:gs_r
    a[i] = 0                                          # L:gs_w


@cuda.jit
def atomic_histogram(keys, hist):
    i = cuda.grid(1)
    cuda.atomic.add(hist, keys[i] % 8, 1)


# ----------------------------------------------------------------------------- initcheck
@cuda.jit
def shared_sum_partial_fill(out):
    """Only the block's 48 threads fill the 64-slot table, then thread 0 sums all 64."""
    s = cuda.shared.array(N, int32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    if t == 0:
        acc = 0
        for k in range(N):
            acc += s[k]                               # L:psum
        out[0] = acc


@cuda.jit
def shared_sum_full_fill(out):
    s = cuda.shared.array(N, int32)
    t = cuda.threadIdx.x
    s[t] = t
    s[t + 32] = t
    cuda.syncthreads()
    if t == 0:
        acc = 0
        for k in range(N):
            acc += s[k]
        out[0] = acc


@cuda.jit
def write_even(d):
    i = cuda.grid(1)
    if i < d.size and i % 2 == 0:
        d[i] = i


@cuda.jit
def write_all(d):
    i = cuda.grid(1)
    if i < d.size:
        d[i] = i


@cuda.jit
def read_all(src, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = src[i]                               # L:ra


@cuda.jit
def read_all_2d(src, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = src[i, j]                         # L:ra2


# ----------------------------------------------------------------------------- synccheck
@cuda.jit
def shfl_half_mask_all_lanes(a, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_xor_sync(0xFFFF, a[t], 1)      # L:s_half


@cuda.jit
def shfl_half_mask_half_lanes(a, out):
    t = cuda.threadIdx.x
    v = a[t]
    if t < 16:
        v = cuda.shfl_xor_sync(0xFFFF, v, 1)
    out[t] = v


@cuda.jit
def shfl_down_zero_mask(a, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(0, a[t], 1)          # L:s_zero


@cuda.jit
def shfl_read_inactive_lane(a, out):
    t = cuda.threadIdx.x
    v = a[t]
    if t < 16:
        v = cuda.shfl_sync(0xFFFF, v, 20)             # L:s_inact
    out[t] = v


@cuda.jit
def shfl_read_lane_outside_mask_all_active(a, out):
    """All 32 lanes run it: lanes 16-31 are outside the mask, lanes 0-15 read lane 20."""
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_sync(0xFFFF, a[t], 20)         # L:s_out


@cuda.jit
def shfl_read_lane_in_mask(a, out):
    t = cuda.threadIdx.x
    v = a[t]
    if t < 16:
        v = cuda.shfl_sync(0xFFFF, v, 5)
    out[t] = v


@cuda.jit
def ballot_half_mask_all_lanes(a, out):
    t = cuda.threadIdx.x
    out[t] = cuda.ballot_sync(0xFFFF, a[t] > 3)       # L:s_ballot


@cuda.jit
def syncwarp_mask_without_lane0(out):
    t = cuda.threadIdx.x
    out[t] = t
    cuda.syncwarp(0xFFFFFFFE)                         # L:s_sw


@cuda.jit
def shfl_down_past_small_block(a, out):
    """A 16-thread block: lane 15 reads lane 16, which does not exist and the mask does not name."""
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(0xFFFF, a[t], 1)     # L:s_small


@cuda.jit
def shfl_down_past_warp_end(a, out):
    """Lanes 16-31 shift past lane 31: out of range, they keep their own value (defined)."""
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(0xFFFFFFFF, a[t], 16)


@cuda.jit
def shfl_activemask_in_branch(a, out):
    t = cuda.threadIdx.x
    v = a[t]
    if t % 3 == 0:
        v = cuda.shfl_sync(cuda.activemask(), v, 0)
    out[t] = v


@cuda.jit
def barrier_in_partial_branch(out):
    t = cuda.threadIdx.x
    if t < 48:
        cuda.syncthreads()                            # L:s_bar
    out[t] = t
