"""Compiled loops over the warps' reconvergence stacks (`warps.WarpStacks`) that every step of a
batch runs: the scheduler's pick of the lowest block a runnable warp waits at, a uniform move of
warps' top entries, the pops after a step, and the release of blocks waiting at CTA barriers. Each is the numpy code it replaces, warp by warp
(the tests compare them on random stacks); per step it is one call instead of ten to twenty
numpy calls, most of a step's cost on a small batch (a 128-thread Triton program).

Compiled once per machine (numba, `cache=True`, as the fast core's kernels); `nogil`.
"""
from __future__ import annotations

import numpy as np
from numba import njit


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
def settle(pc, rpc, mask, depth, warps):
    """Pop, for each of `warps`, the entries that reached their reconvergence pc or have no
    lanes left, top first, until one stays (or the stack is empty)."""
    for w in warps:
        d = depth[w]
        while d > 0 and (pc[w, d - 1] == rpc[w, d - 1] or mask[w, d - 1] == 0):
            d -= 1
        depth[w] = d


@njit(cache=True, nogil=True)
def release_blocked(blocked, wait_at, arrived, depth, pc, mask, exit_only, launched, exited, wpc, key):
    """`collectives.Collectives.release` where nothing but CTA barriers is in play: every
    blocked warp's lanes at its barrier, with those parked at exit-only blocks (`exit_only`,
    indexed by block, EXIT last), must be all its live lanes, and the blocked warps of a block
    must wait at one barrier; then all of them are released (arrived cleared) and 0 returned.
    1 (nothing changed) when a rule is broken: the numpy code finds it again and raises.
    `key`: scratch of one int64 per block."""
    unset = np.int64(-(1 << 62))
    for c in range(len(key)):
        key[c] = unset
    nb = len(exit_only)
    for w in range(len(blocked)):
        if not blocked[w]:
            continue
        parked = np.uint32(0)
        for d in range(depth[w]):
            p = pc[w, d]
            if exit_only[p if p >= 0 else nb + p]:
                parked |= mask[w, d]
        if (arrived[w] | parked) != (launched[w] & ~exited[w]):
            return 1
        c = w // wpc
        if key[c] == unset:
            key[c] = wait_at[w]
        elif key[c] != wait_at[w]:
            return 1
    for w in range(len(blocked)):
        if blocked[w]:
            arrived[w] = 0
    return 0


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
def arrive(arrived, wait_at, warps, masks, index, pc, rpc, mask, depth, launched, exited):
    """`executor.BatchExecutor._arrive`'s common case: lanes `masks` of `warps` wait at barrier
    `index` (recorded in arrived / wait_at), the warps' stacks settle; returns 0, or 2 when some
    warp has live lanes not at the barrier (the caller lets a sibling path run first), or 1
    (nothing changed) when a warp's lanes already wait at another barrier (the caller raises)."""
    for t in range(len(warps)):
        w = warps[t]
        if arrived[w] != 0 and wait_at[w] != index:
            return 1
    short = 0
    for t in range(len(warps)):
        w = warps[t]
        arrived[w] |= masks[t]
        wait_at[w] = index
        d = depth[w]
        while d > 0 and (pc[w, d - 1] == rpc[w, d - 1] or mask[w, d - 1] == 0):
            d -= 1
        depth[w] = d
        if launched[w] & ~exited[w] & ~arrived[w]:
            short = 2
    return short


@njit(cache=True, nogil=True)
def blocked(depth, mask, arrived, out):
    """out[w]: warp w's top entry holds lanes that wait at a barrier (`arrived`); returns whether any
    does (`executor.BatchExecutor.blocked`)."""
    anyb = False
    for w in range(len(depth)):
        d = depth[w]
        b = d > 0 and (mask[w, d - 1] & arrived[w]) != 0
        out[w] = b
        anyb |= b
    return anyb
