"""The cp.async fill and piece counts remembered by the lanes' pattern (copy_counts._memoized):
each warp's copy moved by whole 128-byte lines and windows counts the same, and the remembered
counts equal the rule's on the copy as given."""
import numpy as np
import pytest

from gpusim.functional import copy_counts as A


def _copy(rng, warps=4):
    """A cp.async of `warps` warps, 16 B a lane, rows of 64 B at a pitch of 80 B in shared memory
    (every other row 16 B off a sector), sources scattered over a few lines; some lanes zero-fill."""
    lanes = np.arange(32 * warps)
    w = lanes >> 5
    src = (rng.integers(0, 64, len(lanes)) * 16 + rng.integers(0, 1 << 30) * 128).astype(np.int64)
    dst = ((lanes // 4) * 80 + (lanes % 4) * 16 + rng.integers(0, 64) * 128).astype(np.int64)
    zero = rng.random(len(lanes)) < 0.1
    src[zero] = dst[zero] | A.ZERO_FILL_SOURCE
    return w, src, dst


@pytest.mark.parametrize("rule", [A._fill_wavefronts, A._copy_pieces])
def test_counts_remembered_by_pattern_equal_the_rule_on_the_copy_as_given(rule):
    rng = np.random.default_rng(7)
    for _ in range(40):
        w, src, dst = _copy(rng)
        assert A._memoized(rule, w, src, dst, 4).tolist() == rule(w, src, dst, 4).tolist()


@pytest.mark.parametrize("rule", [A._fill_wavefronts, A._copy_pieces])
def test_a_warps_copy_moved_by_whole_lines_counts_the_same(rule):
    rng = np.random.default_rng(3)
    w, src, dst = _copy(rng)
    real = src < A.ZERO_FILL_SOURCE
    moved_src = src + np.where(real, w * 128 * 1001, 0)
    moved_dst = dst + w * 128 * 3
    moved_src[~real] = moved_dst[~real] | A.ZERO_FILL_SOURCE
    assert rule(w, moved_src, moved_dst, 4).tolist() == rule(w, src, dst, 4).tolist()
