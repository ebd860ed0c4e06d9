"""The cp.async counting rules compiled per warp (copy_counts._per_warp) count what the numpy rules
count on the rebased lanes (copy_counts._rebased), which the remembered counts also are, on copies
with zero-fills, partial warps, repeated sectors and shared rows off a sector."""
import numpy as np
import pytest

from gpusim.functional import copy_counts as A


def _empty_memo(slots=A.WARP_MEMO_SLOTS):
    return np.full((slots, A.WARP_MEMO.shape[1]), -1, np.int64)


def _copy(rng, warps):
    """A cp.async of `warps` warps, some missing and some partial, 16 B a lane (some 4 or 8 B),
    rows of 64 B at a pitch of 80 B in shared memory, sources scattered over a few lines."""
    lanes = np.sort(rng.choice(32 * warps, int(rng.integers(1, 32 * warps + 1)), replace=False))
    w = (lanes >> 5).astype(np.int64)
    size = int(rng.choice([4, 8, 16]))
    src = (rng.integers(0, 64, len(lanes)) * size + rng.integers(0, 1 << 30) * 128).astype(np.int64)
    dst = ((lanes // 4) * 80 + (lanes % 4) * 16 + rng.integers(0, 64) * 128).astype(np.int64)
    zero = rng.random(len(lanes)) < 0.1
    src[zero] = dst[zero] | A.ZERO_FILL_SOURCE
    return w, src, dst


@pytest.mark.parametrize("rule, public", [(A._fill_wavefronts, A.fill_wavefronts), (A._copy_pieces, A.copy_pieces)])
def test_compiled_counts_equal_the_rule_on_the_rebased_copy(rule, public):
    rng = np.random.default_rng(11)
    for _ in range(300):
        warps = int(rng.integers(1, 9))
        w, src, dst = _copy(rng, warps)
        want = rule(*A._rebased(w, src, dst), warps).tolist()
        got, ok = A._per_warp(w, src, dst, warps, rule is A._fill_wavefronts, _empty_memo())
        assert ok and got.tolist() == want
        assert public(w, src, dst, warps).tolist() == want


def test_warps_out_of_order_take_the_remembered_counts():
    w = np.array([1, 0], np.int64)
    src, dst = np.array([0, 4096], np.int64), np.array([16, 48], np.int64)
    assert A._per_warp(w, src, dst, 2, True, _empty_memo())[1] is False
    assert A.fill_wavefronts(w, src, dst, 2).tolist() == A._fill_wavefronts(*A._rebased(w, src, dst), 2).tolist()


@pytest.mark.parametrize("slots", [1, 7, A.WARP_MEMO_SLOTS])
def test_remembered_warp_counts_equal_the_counts_found_again(slots):
    """Copies seen before (the same lanes moved by whole lines and windows), in a table small
    enough that warps of different patterns evict each other, count as they do afresh."""
    rng = np.random.default_rng(5)
    memo = _empty_memo(slots)
    copies = [(_copy(rng, int(rng.integers(1, 5))), bool(rng.integers(0, 2))) for _ in range(40)]
    for _ in range(3):
        for (w, src, dst), fill in copies:
            shift = int(rng.integers(0, 64)) * 128
            nw = int(w[-1]) + 1
            want = A._per_warp(w, src, dst, nw, fill, _empty_memo())[0].tolist()
            assert A._per_warp(w, src + shift, dst + shift, nw, fill, memo)[0].tolist() == want
    assert (memo[:, 0] >= 0).any()


def test_warps_alike_count_as_each_does_alone():
    """Consecutive warps with the same rebased lanes (the next line and window) take the count of
    the warp before; a warp that differs in one lane is counted afresh."""
    rng = np.random.default_rng(9)
    (w, src, dst), = [_copy(rng, 1)]
    w = np.zeros_like(w)
    ws = np.concatenate([w, w + 1, w + 2])
    srcs = np.concatenate([src, src + 128, src + 256])
    dsts = np.concatenate([dst, dst + 128, dst + 256 + 16 * (np.arange(len(dst)) == 0)])
    for fill in (True, False):
        got = A._per_warp(ws, srcs, dsts, 3, fill, _empty_memo())[0].tolist()
        alone = [A._per_warp(w, srcs[ws == k], dsts[ws == k], 1, fill, _empty_memo())[0][0] for k in range(3)]
        assert got == alone
