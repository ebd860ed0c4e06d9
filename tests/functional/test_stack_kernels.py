"""The compiled stack and barrier loops (gpusim.functional.stack_kernels, barrier_kernels) do what
the numpy code they replace does, on random reconvergence stacks: the scheduler's lowest runnable
block, a step's lane masks, a uniform goto, the pops of settle, lanes exiting, a branch and its taken
lanes, a barrier's arrival, blocked warps, release, and the pick that releases."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim.functional import barrier_kernels as B
from gpusim.functional import stack_kernels as K

W, D = 40, 6


def _stacks(rng):
    depth = rng.integers(0, D + 1, W).astype(np.int32)
    pc = rng.integers(-1, 6, (W, D)).astype(np.int32)
    rpc = rng.integers(-1, 6, (W, D)).astype(np.int32)
    mask = np.where(rng.random((W, D)) < 0.2, 0, rng.integers(1, 1 << 32, (W, D))).astype(np.uint32)
    arrived = np.where(rng.random(W) < 0.5, 0, rng.integers(0, 1 << 32, W)).astype(np.uint32)
    return depth, pc, rpc, mask, arrived


@pytest.mark.parametrize("seed", range(20))
def test_lowest_runnable_is_the_numpy_pick(seed):
    depth, pc, _, mask, arrived = _stacks(np.random.default_rng(seed))
    top_mask = np.where(depth > 0, mask[np.arange(W), np.maximum(depth - 1, 0)], 0)
    run = (depth > 0) & ((top_mask & arrived) == 0)
    top = np.where(depth > 0, pc[np.arange(W), np.maximum(depth - 1, 0)], -1)
    out = np.empty(W, np.int64)
    b, k = K.lowest_runnable(depth, pc, mask, arrived, out)
    if not run.any():
        assert k == 0
        return
    want = int(np.where(run, top, np.iinfo(np.int32).max).min())
    assert b == want
    assert out[:k].tolist() == np.flatnonzero(run & (top == want)).tolist()


@pytest.mark.parametrize("seed", range(20))
def test_step_masks_are_the_numpy_masks_and_count(seed):
    rng = np.random.default_rng(seed)
    depth, _, _, mask, _ = _stacks(rng)
    mask[rng.random((W, D)) < 0.3] = 0xFFFFFFFF
    live = np.flatnonzero(depth > 0)
    g = live if seed % 2 else live[(rng.random(len(live)) < 0.6)]
    if not len(g):
        return
    g = g.astype(np.int64)
    top = mask[g, depth[g] - 1]                     # executor.execute's numpy code before it
    nspan = int(g[-1] - g[0]) + 1
    span = np.zeros(nspan, np.uint32)
    span[g - g[0]] = top
    masks = np.empty(len(g), np.uint32)
    got_span = masks if nspan == len(g) else np.empty(nspan, np.uint32)
    full, lanes = K.step_masks(mask, depth, g, got_span, masks)
    assert masks.tolist() == top.tolist() and got_span.tolist() == span.tolist()
    assert full == (nspan == len(g) and bool((top == 0xFFFFFFFF).all()))
    assert lanes == int(np.bitwise_count(top).sum())


@pytest.mark.parametrize("seed", range(20))
def test_goto_and_settle_are_the_numpy_updates(seed):
    rng = np.random.default_rng(seed)
    depth, pc, rpc, mask, _ = _stacks(rng)
    warps = np.flatnonzero((depth > 0) & (rng.random(W) < 0.6)).astype(np.int64)
    target = int(rng.integers(-1, 6))
    want_pc, want_depth = pc.copy(), depth.copy()
    want_pc[warps, want_depth[warps] - 1] = target
    w = warps
    while len(w):                                   # WarpStacks.settle's numpy loop
        d = want_depth[w]
        live = d > 0
        w, d = w[live], d[live]
        pop = (want_pc[w, d - 1] == rpc[w, d - 1]) | (mask[w, d - 1] == 0)
        w = w[pop]
        want_depth[w] -= 1
    K.goto(pc, depth, warps, target)
    K.settle(pc, rpc, mask, depth, warps)
    assert (pc == want_pc).all() and (depth == want_depth).all()


@pytest.mark.parametrize("seed", range(10))
def test_exit_lanes_is_the_numpy_update(seed):
    rng = np.random.default_rng(seed)
    _, _, _, mask, exited = _stacks(rng)
    warps = np.flatnonzero(rng.random(W) < 0.6).astype(np.int64)
    lanes = rng.integers(0, 1 << 32, len(warps)).astype(np.uint32)
    want_mask, want_exited = mask.copy(), exited.copy()
    want_exited[warps] |= lanes                     # WarpStacks.exit_lanes's numpy code
    want_mask[warps] &= ~lanes[:, None]
    K.exit_lanes(exited, mask, warps, lanes)
    assert (mask == want_mask).all() and (exited == want_exited).all()


def test_release_blocked_releases_what_the_numpy_release_would():
    """Collectives.release's rules for CTA barriers: every blocked warp's live lanes are at its
    barrier or parked at an exit-only block, and a block's blocked warps share one barrier;
    random cases of both outcomes."""
    outcomes = set()
    for seed in range(200):
        rng = np.random.default_rng(seed)
        depth, pc, _, mask, _ = _stacks(rng)
        wpc, nb = 4, 7
        exit_only = rng.random(nb + 1) < 0.3
        launched = np.full(W, 0xFFFFFFFF, np.uint32)
        exited = np.where(rng.random(W) < 0.3, rng.integers(0, 1 << 32, W), 0).astype(np.uint32)
        wait_at = np.repeat(rng.integers(0, 3, W // wpc), wpc).astype(np.int64)
        wait_at[rng.random(W) < 0.01] = 9
        blocked = rng.random(W) < 0.7
        live = launched & ~exited
        parked = np.array([np.bitwise_or.reduce(np.where(exit_only[pc[w, :depth[w]]], mask[w, :depth[w]], 0)
                                                .astype(np.uint32)) if depth[w] else 0 for w in range(W)], np.uint32)
        arrived = np.where(rng.random(W) < 0.99, live & ~parked, rng.integers(0, 1 << 32, W)).astype(np.uint32)
        w = np.flatnonzero(blocked)
        ok = ((arrived[w] | parked[w]) == live[w]).all() and all(
            len(set(wait_at[w[w // wpc == c]].tolist())) <= 1 for c in range(W // wpc))
        got = arrived.copy()
        code = B.release_blocked(blocked, wait_at, got, depth, pc, mask, exit_only, launched, exited, wpc,
                                 np.empty(W // wpc, np.int64))
        assert code == (0 if ok else 1)
        want = arrived.copy()
        if ok:
            want[w] = 0
        assert (got == want).all()
        outcomes.add(code)
    assert outcomes == {0, 1}


def _numpy_branch(pc, rpc, mask, depth, warps, masks, taken, target, fallthrough, reconverge):
    """WarpStacks.branch's numpy code, on arrays wide enough."""
    all_taken, none_taken = taken == masks, taken == 0
    div = ~(all_taken | none_taken)
    pc[warps, depth[warps] - 1] = np.where(all_taken, target, fallthrough)
    w, t, m = warps[div], taken[div], masks[div]
    d = depth[w]
    pc[w, d - 1] = reconverge
    pc[w, d], rpc[w, d], mask[w, d] = fallthrough, reconverge, m & ~t
    pc[w, d + 1], rpc[w, d + 1], mask[w, d + 1] = target, reconverge, t
    depth[w] = d + 2
    return len(w)


@pytest.mark.parametrize("seed", range(20))
def test_branch_is_the_numpy_branch(seed):
    rng = np.random.default_rng(seed)
    depth, pc, rpc, mask, _ = _stacks(rng)
    depth = np.minimum(depth, D - 2).astype(np.int32)
    warps = np.flatnonzero((depth > 0) & (rng.random(W) < 0.7)).astype(np.int64)
    masks = rng.integers(1, 1 << 32, len(warps)).astype(np.uint32)
    pick = rng.random(len(warps))
    taken = np.where(pick < 0.3, masks, np.where(pick < 0.6, 0, masks & rng.integers(0, 1 << 32, len(warps)))
                     ).astype(np.uint32)
    want = [a.copy() for a in (pc, rpc, mask, depth)]
    nw = _numpy_branch(*want, warps, masks, taken, 5, 3, 4)
    got = [a.copy() for a in (pc, rpc, mask, depth)]
    assert K.branch(*got, warps, masks, taken, 5, 3, 4) == nw
    assert all((a == b).all() for a, b in zip(got, want))


def test_branch_leaves_stacks_that_must_grow_to_the_numpy_code():
    pc, rpc = np.zeros((1, 2), np.int32), np.zeros((1, 2), np.int32)
    mask, depth = np.full((1, 2), 0xF, np.uint32), np.array([1], np.int32)
    assert K.branch(pc, rpc, mask, depth, np.array([0], np.int64), np.array([0xF], np.uint32),
                    np.array([0x3], np.uint32), 5, 3, 4) == -1
    assert depth[0] == 1 and pc[0, 0] == 0


@pytest.mark.parametrize("seed", range(20))
def test_arrive_records_the_barrier_and_settles(seed):
    rng = np.random.default_rng(seed)
    depth, pc, rpc, mask, _ = _stacks(rng)
    warps = np.flatnonzero(rng.random(W) < 0.6).astype(np.int64)
    masks = rng.integers(0, 1 << 32, len(warps)).astype(np.uint32)
    arrived = np.where(rng.random(W) < 0.8, 0, rng.integers(0, 1 << 32, W)).astype(np.uint32)
    wait_at = np.where(rng.random(W) < 0.9, 7, 2).astype(np.int64)
    launched = np.full(W, 0xFFFFFFFF, np.uint32)
    exited = rng.integers(0, 1 << 32, W).astype(np.uint32)
    other = ((arrived[warps] != 0) & (wait_at[warps] != 7)).any()
    a, wa, d = arrived.copy(), wait_at.copy(), depth.copy()
    code = B.arrive(a, wa, warps, masks, 7, pc, rpc, mask, d, launched, exited)
    if other:
        assert code == 1 and (a == arrived).all() and (d == depth).all()
        return
    want_a = arrived.copy()
    want_a[warps] |= masks
    want_d = depth.copy()
    K.settle(pc, rpc, mask, want_d, warps)
    short = (launched[warps] & ~exited[warps] & ~want_a[warps]) != 0
    assert code == (2 if short.any() else 0)
    assert (a == want_a).all() and (wa[warps] == 7).all() and (d == want_d).all()


@pytest.mark.parametrize("seed", range(10))
def test_arrive_all_leaves_what_arriving_and_the_release_leave_or_nothing(seed):
    rng = np.random.default_rng(seed)
    depth, pc, rpc, mask, _ = _stacks(rng)
    warps = np.flatnonzero(rng.random(W) < 0.6).astype(np.int64)
    launched = np.full(W, 0xFFFFFFFF, np.uint32)
    exited = rng.integers(0, 1 << 32, W).astype(np.uint32)
    masks = launched[warps] & ~exited[warps]        # every live lane arrives
    if seed % 3 == 2:
        masks[0] &= masks[0] - 1                    # one lane of the first warp does not (when it has one)
    arrived, wait_at = np.zeros(W, np.uint32), np.full(W, 2, np.int64)
    a, wa, d = arrived.copy(), wait_at.copy(), depth.copy()
    ok = B.arrive_all(wa, warps, masks, 7, pc, rpc, mask, d, launched, exited, a)
    want_a, want_wa, want_d = arrived.copy(), wait_at.copy(), depth.copy()
    code = B.arrive(want_a, want_wa, warps, masks, 7, pc, rpc, mask, want_d, launched, exited)
    assert ok == (code == 0)
    if ok:                                          # the release clears what arrived
        assert (a == 0).all() and (wa == want_wa).all() and (d == want_d).all()
    else:
        assert (a == arrived).all() and (wa == wait_at).all() and (d == depth).all()


@pytest.mark.parametrize("seed", range(10))
def test_blocked_is_the_numpy_blocked(seed):
    rng = np.random.default_rng(seed)
    depth, pc, _, mask, arrived = _stacks(rng)
    top = np.where(depth > 0, mask[np.arange(W), np.maximum(depth - 1, 0)], 0)
    out = np.empty(W, bool)
    anyb = B.blocked(depth, mask, arrived, out)
    assert out.tolist() == ((top & arrived) != 0).tolist() and anyb == out.any()


@pytest.mark.parametrize("seed", range(20))
def test_taken_masks_are_the_packed_predicate_and_its_counts(seed):
    """A conditional branch's taken lanes: the predicate over the span packed per warp (negated
    where the guard is), under each warp's active mask; the threads (every set bit, up to 32 a
    warp: a count that must not carry between bytes) and the warps with one."""
    rng = np.random.default_rng(seed)
    nspan = 6
    p = rng.random(32 * nspan) < (0.5 if seed % 3 else 0.97)
    g = np.flatnonzero(rng.random(nspan) < 0.7).astype(np.int64) + 3
    if not len(g):
        return
    masks = np.where(rng.random(len(g)) < 0.5, 0xFFFFFFFF, rng.integers(0, 1 << 32, len(g))).astype(np.uint32)
    for neg in (False, True):
        q = ~p if neg else p
        want = np.packbits(q.reshape(-1, 32), axis=1, bitorder="little").view(np.uint32).ravel()[g - 3] & masks
        out = np.empty(len(g), np.uint32)
        threads, warps = K.taken_masks(p, False, False, neg, g, 3, masks, out)
        assert out.tolist() == want.tolist()
        assert (threads, warps) == (int(np.bitwise_count(want).sum()), int(np.count_nonzero(want)))
    out = np.empty(len(g), np.uint32)
    threads, warps = K.taken_masks(np.zeros(1, bool), True, True, False, g, 3, masks, out)
    assert out.tolist() == masks.tolist() and threads == int(np.bitwise_count(masks).sum())


def test_lowest_or_release_releases_a_block_at_its_barrier_and_picks_again():
    """No warp runnable, every warp of the one block waiting at barrier 5 with all its lanes: the
    block is released (arrived cleared) and the lowest block picked; with the release left to
    the numpy code, or every warp finished, nothing changes."""
    depth = np.ones(4, np.int32)
    pc = np.array([[3], [3], [2], [3]], np.int32)
    mask = np.full((4, 1), 0xFFFFFFFF, np.uint32)
    launched, exited = np.full(4, 0xFFFFFFFF, np.uint32), np.zeros(4, np.uint32)
    wait_at = np.full(4, 5, np.int64)
    exit_only = np.zeros(8, bool)

    def pick(arrived, may, d=depth):
        out = np.empty(4, np.int64)
        b, k = B.lowest_or_release(d, pc, mask, arrived, out, np.empty(4, bool), wait_at, exit_only, launched,
                                   exited, 4, np.empty(1, np.int64), may)
        return int(b), int(k), out[:max(k, 0)].tolist()
    arrived = np.full(4, 0xFFFFFFFF, np.uint32)
    assert pick(arrived, True) == (2, 1, [2]) and (arrived == 0).all()
    arrived = np.full(4, 0xFFFFFFFF, np.uint32)
    assert pick(arrived, False)[1] == -1 and (arrived == 0xFFFFFFFF).all()
    assert pick(np.zeros(4, np.uint32), True, np.zeros(4, np.int32))[1] == 0
