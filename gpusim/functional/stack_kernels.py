"""Compiled loops over the warps' reconvergence stacks (`warps.WarpStacks`) that every step of a
batch runs: the scheduler's pick of the lowest block a runnable warp waits at, a uniform move of
warps' top entries, a conditional branch's pushes and the pops after a step (the barriers' passes:
`barrier_kernels`). Each is the numpy code it replaces, warp by warp
(the tests compare them on random stacks); per step it is one call instead of ten to twenty
numpy calls, most of a step's cost on a small batch (a 128-thread Triton program).

Compiled once per machine (numba, `cache=True`, as the fast core's kernels); `nogil`.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def popcount32(m):
    """The set bits of a 32-bit lane mask (SWAR, on int64: numba widens uint32 products, which
    would carry the byte sums into the count)."""
    v = np.int64(m)
    v = v - ((v >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    return ((v * 0x01010101) & 0xFFFFFFFF) >> 24


@njit(cache=True, nogil=True)
def lowest_runnable(depth, pc, mask, arrived, out):
    """(b, k): the lowest top-entry pc b of the runnable warps (a stack entry left and no lane of
    the top entry waiting at a barrier), and out[:k] the runnable warps whose top entry is at b,
    in increasing order; (0, 0) when no warp is runnable."""
    found = False
    best = np.int64(0)
    for w in range(len(depth)):
        d = depth[w]
        if d > 0 and (mask[w, d - 1] & arrived[w]) == 0:
            t = np.int64(pc[w, d - 1])
            if not found or t < best:
                best = t
                found = True
    k = 0
    if found:
        for w in range(len(depth)):
            d = depth[w]
            if d > 0 and (mask[w, d - 1] & arrived[w]) == 0 and pc[w, d - 1] == best:
                out[k] = w
                k += 1
    return best, k


@njit(cache=True, nogil=True)
def goto(pc, depth, warps, target):
    """The top entry of each of `warps` moves to block `target`."""
    for w in warps:
        pc[w, depth[w] - 1] = target


@njit(cache=True, nogil=True)
def exit_lanes(exited, mask, warps, lanes):
    """`warps.WarpStacks.exit_lanes`: lanes[t] of warp warps[t] (distinct warps) finish, cleared from
    every entry of its stack."""
    for t in range(len(warps)):
        w = warps[t]
        keep = ~lanes[t]
        exited[w] |= lanes[t]
        for d in range(mask.shape[1]):
            mask[w, d] &= keep


@njit(cache=True, nogil=True)
def settle(pc, rpc, mask, depth, warps):
    """Pop, for each of `warps`, the entries that reached their reconvergence pc or have no
    lanes left, top first, until one stays (or the stack is empty)."""
    for w in warps:
        d = depth[w]
        while d > 0 and (pc[w, d - 1] == rpc[w, d - 1] or mask[w, d - 1] == 0):
            d -= 1
        depth[w] = d


@njit(cache=True, nogil=True)
def branch(pc, rpc, mask, depth, warps, masks, taken, target, fallthrough, reconverge):
    """`warps.WarpStacks.branch`: per warp, all lanes taken -> its top entry goes to `target`,
    none -> `fallthrough`, some -> the top becomes the reconvergence entry and the not-taken then
    the taken side are pushed. Returns the warps that diverged, or -1 (nothing changed) when a
    stack would need to grow (the numpy code grows it)."""
    width = pc.shape[1]
    for t in range(len(warps)):
        m, k = masks[t], taken[t]
        if k != m and k != 0 and depth[warps[t]] + 2 > width:
            return -1
    ndiv = 0
    for t in range(len(warps)):
        w = warps[t]
        m, k = masks[t], taken[t]
        d = depth[w]
        if k == m:
            pc[w, d - 1] = target
        elif k == 0:
            pc[w, d - 1] = fallthrough
        else:
            pc[w, d - 1] = reconverge
            pc[w, d] = fallthrough
            rpc[w, d] = reconverge
            mask[w, d] = m & ~k
            pc[w, d + 1] = target
            rpc[w, d + 1] = reconverge
            mask[w, d + 1] = k
            depth[w] = d + 2
            ndiv += 1
    return ndiv


@njit(cache=True, nogil=True)
def step_masks(mask, depth, g, span, top):
    """A step's lane masks: top[i] the top-entry mask of warp g[i] (g increasing), span[w - g[0]]
    the same over the span g[0] .. g[-1] (0 for a warp of the span not in g; `span` may be `top`
    itself when g is the whole span); returns (whether every lane of the span runs, how many run)."""
    w0 = g[0]
    nspan = g[len(g) - 1] - w0 + 1
    if nspan != len(g):
        for i in range(nspan):
            span[i] = 0
    full = nspan == len(g)
    lanes = 0
    for i in range(len(g)):
        w = g[i]
        m = mask[w, depth[w] - 1]
        top[i] = m
        span[w - w0] = m
        full = full and m == 0xFFFFFFFF
        lanes += popcount32(m)
    return full, lanes


@njit(cache=True, nogil=True)
def taken_masks(p, uniform, value, neg, g, w0, masks, out):
    """A conditional branch's (or exit's) taken lanes: out[i] the lanes of masks[i] (warp g[i], of a
    span whose first warp is w0) whose predicate differs from `neg`, the predicate p[lane] over
    the span's lanes, or `value` for every lane where `uniform`; returns (the taken threads, the
    warps with one), what `executor.BatchExecutor._terminate` counts."""
    threads = 0
    nw = 0
    for i in range(len(g)):
        if uniform:
            v = np.uint32(0xFFFFFFFF) if value != neg else np.uint32(0)
        else:
            v = np.uint32(0)
            base = (g[i] - w0) * 32
            for lane in range(32):
                if p[base + lane] != neg:
                    v |= np.uint32(1) << np.uint32(lane)
        v &= masks[i]
        out[i] = v
        threads += popcount32(v)
        nw += v != 0
    return threads, nw


@njit(cache=True, nogil=True)
def full_warps(masks, out):
    """out[:n] the warps (indices into `masks`) whose lane mask is full, n returned; -1 where a
    warp has only some of its lanes active (a `.sync.aligned` instruction's error, which the
    caller's numpy code finds and reports)."""
    n = 0
    for w in range(len(masks)):
        mk = masks[w]
        if mk == 0:
            continue
        if mk != 0xFFFFFFFF:
            return -1
        out[n] = w
        n += 1
    return n


@njit(cache=True, nogil=True)
def same_top(depth, pc, mask, arrived, g, masks):
    """The block every warp of g is at with top-entry mask masks[i] as before the step just run
    and no lane of it waiting at a barrier (what the scheduler would run next for them all,
    `executor.BatchExecutor.execute`'s run-on), or -1."""
    b = -1
    for i in range(len(g)):
        w = g[i]
        d = depth[w]
        if d == 0:
            return -1
        m = mask[w, d - 1]
        p = pc[w, d - 1]
        if m != masks[i] or (m & arrived[w]) != 0 or p < 0 or (i and p != b):
            return -1
        b = p
    return b
