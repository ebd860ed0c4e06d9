"""The compiled stack loops (gpusim.functional.stack_kernels) do what the numpy code they replace
does, on random reconvergence stacks: the scheduler's lowest runnable block, a uniform goto, the
pops of settle."""
from __future__ import annotations

import numpy as np
import pytest

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
