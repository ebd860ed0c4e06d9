"""The compiled per-warp reductions of the functional streams (gpusim/timing/stream_kernels.py) equal the
numpy definitions they replace: one property per test."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusim.functional.shared_banks import shared_wavefronts
from gpusim.timing import stream_kernels as K

U64 = np.uint64


@st.composite
def warp_accesses(draw, max_warps=4):
    """Lanes of a few warps (increasing, some inactive) and one byte offset each."""
    nwarps = draw(st.integers(1, max_warps))
    lanes = sorted(draw(st.sets(st.integers(0, 32 * nwarps - 1), min_size=1, max_size=32 * nwarps)))
    spread = draw(st.sampled_from([64, 1024, 1 << 16]))
    offsets = [draw(st.integers(0, spread)) for _ in lanes]
    return np.array(lanes, np.int64), np.array(offsets, np.uint64)


@settings(max_examples=100, deadline=None)
@given(warp_accesses(), st.sampled_from([1, 4, 8, 16]), st.sampled_from([(32, 4), (32, 8), (64, 4)]))
def test_warp_wavefronts_equal_the_numpy_count_of_distinct_words_per_bank(acc, nbytes, geometry):
    lanes, offsets = acc
    banks, width = geometry
    offsets = offsets & ~U64(nbytes - 1)
    rel = lanes >> 5
    nw = int(rel[-1]) + 1
    want = shared_wavefronts(rel, offsets, nbytes, nw, banks, width)
    words = (offsets >> U64(width.bit_length() - 1)).astype(np.int64)
    warps, wf = K.warp_wavefronts(rel, words, max(1, nbytes // width), banks)
    assert warps.tolist() == np.unique(rel).tolist()
    assert wf.tolist() == want[warps].tolist()


@settings(max_examples=100, deadline=None)
@given(warp_accesses(), st.booleans())
def test_warp_sectors_are_each_warps_sorted_distinct_sectors_with_their_byte_masks_ored(acc, store):
    lanes, offsets = acc
    rel = lanes >> 5
    sectors = offsets >> U64(5)
    lane_masks = (U64(0xF) << (offsets & U64(28))).astype(np.uint32)
    warps, starts, vals, masks = K.warp_sectors(rel, sectors, lane_masks, store)
    assert warps.tolist() == np.unique(rel).tolist()
    for q, w in enumerate(warps.tolist()):
        mine = rel == w
        want = np.unique(sectors[mine])
        assert vals[starts[q]:starts[q + 1]].tolist() == want.tolist()
        if store:
            ored = [int(np.bitwise_or.reduce(lane_masks[mine][sectors[mine] == s])) for s in want]
            assert masks[starts[q]:starts[q + 1]].tolist() == ored
