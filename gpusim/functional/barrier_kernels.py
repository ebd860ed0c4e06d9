"""Compiled passes of the CTA barriers over a batch's warps (`executor`, `collectives`): the lanes
of a step arriving at a barrier, the warps blocked at one, and the release of blocks whose live
warps all wait at one. Each is the numpy code it replaces, warp by warp (tests/functional/
test_stack_kernels.py compares them); a rule they find broken is left to that code, which raises
its error.

Compiled once per machine (numba, `cache=True`, as the fast core's kernels); `nogil`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from gpusim.functional.stack_kernels import lowest_runnable


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


@njit(cache=True, nogil=True)
def lowest_or_release(depth, pc, mask, arrived, out, blocked_out, wait_at, exit_only, launched, exited, wpc, key,
                      may_release):
    """The scheduler's pick of the lowest block (`stack_kernels.lowest_runnable`: (b, k), out[:k]
    the warps), where no warp can run first releasing the blocks waiting at CTA barriers
    (`blocked`, then `release_blocked`, as `Collectives.release` does when `may_release`: nothing
    but CTA barriers in play) and picking again; k = 0 when every warp has finished, -1 where
    warps wait and the release is left to `Collectives.release` (not `may_release`, or a rule
    `release_blocked` finds broken: nothing changed)."""
    while True:
        b, k = lowest_runnable(depth, pc, mask, arrived, out)
        if k:
            return b, k
        if not blocked(depth, mask, arrived, blocked_out):
            return b, 0
        if not may_release or release_blocked(blocked_out, wait_at, arrived, depth, pc, mask, exit_only, launched,
                                              exited, wpc, key) != 0:
            return b, -1


@njit(cache=True, nogil=True)
def arrive_all(wait_at, warps, masks, index, pc, rpc, mask, depth, launched, exited, arrived):
    """`arrive` where lanes `masks` of `warps` are every live lane of each, none waiting at a barrier
    yet: the barrier is complete as they arrive, so they wait at it (wait_at) and are released at
    once (arrived stays clear), their stacks settled, as `arrive` and then `release_blocked` leave
    them; returns whether that was so (False: nothing changed)."""
    for t in range(len(warps)):
        w = warps[t]
        if masks[t] != launched[w] & ~exited[w] or arrived[w] != 0:
            return False
    for t in range(len(warps)):
        w = warps[t]
        wait_at[w] = index
        d = depth[w]
        while d > 0 and (pc[w, d - 1] == rpc[w, d - 1] or mask[w, d - 1] == 0):
            d -= 1
        depth[w] = d
    return True
