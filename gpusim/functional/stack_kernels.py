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
