"""Sampled simulation: a shared region whose sharing blocks come within a span of the grid (a grouped
tile order) stays in the whole L2 where the same sharing spread over the grid does not
(gpusim/timing/sampling/warming.py, `span`; gpusim/timing/sampling/sharing_span.py)."""
import numpy as np

from gpusim.timing.payloads import owned_sectors
from gpusim.timing.sampling.sharing_span import SPAN_BLOCKS, sharing_spans, span_sample
from gpusim.timing.sampling.warming import SharedFootprint
from gpusim.timing.tma import CopyPayload

# an 8192^3 GEMM's A in 128-row strips, 64 blocks per line, against a 4x smaller L2
D, M, C = 1_048_576, 64.0, 262_144.0


def test_sharing_spread_over_the_grid_beyond_the_l2_is_mostly_cold():
    fp = SharedFootprint([0], [D], [M * D], capacity_lines=C)
    assert fp.probability(3, 0.5) < 0.35


def test_the_same_sharing_within_an_eighth_of_the_grid_is_held_but_for_first_touches():
    fp = SharedFootprint([0], [D], [M * D], capacity_lines=C, span=[0.125])
    assert fp.window > 0.125 / M                   # a group's strips (D / 8 lines) fit
    assert fp.probability(3, 0.5) > 0.9            # later groups: held but for each line's first touch


def test_a_span_of_the_whole_grid_changes_nothing():
    a = SharedFootprint([0], [D], [M * D], capacity_lines=C)
    b = SharedFootprint([0], [D], [M * D], capacity_lines=C, span=[1.0])
    assert a.window == b.window and a.probability(3, 0.5) == b.probability(3, 0.5)


def _grouped_lines(pid, n_m=64, n_n=64, group=8, strip=16):
    """Lines of A one block of a GROUP_M-swizzled GEMM grid touches (its row strip)."""
    in_group = group * n_n
    pid_m = pid // in_group * group + pid % in_group % group
    return np.arange(pid_m * strip, (pid_m + 1) * strip, dtype=np.int64)


def _rows_lines(pid, n_n=64, strip=16):
    """... and of a row-major grid's B column strip (each column once per block row)."""
    return np.arange(pid % n_n * strip, (pid % n_n + 1) * strip, dtype=np.int64)


# blocks sampled as extrapolation.sampled_blocks deals them: 8 of every 132 (rounds 0-2, then spread)
SAMPLED = [b for k in (0, 1, 2, 8, 14, 19, 25, 31) for b in range(k * 132, k * 132 + 8)]


def test_a_grouped_tile_order_confines_its_a_strip_sharing_to_its_group():
    span = sharing_spans(np.array([0]), np.array([1024]), [(b, _grouped_lines(b)) for b in SAMPLED], 4096, 132)
    assert 0.08 < span[0] < 0.2                    # the group is 512 of 4096 blocks


def test_sharing_spread_over_the_grid_keeps_a_span_of_one():
    span = sharing_spans(np.array([0]), np.array([1024]), [(b, _rows_lines(b)) for b in SAMPLED], 4096, 132)
    assert span[0] == 1.0


def test_a_bulk_copys_sectors_count_in_a_blocks_footprint():
    # a TMA GEMM's tiles arrive by cp.async.bulk.tensor: the footprint must see them (cuda_tma_wgmma n2048 on the
    # H100: with them, sampled DRAM reads 155 -> 17.6 MB, 16.8 measured)
    mem = {0: CopyPayload(np.array([40, 41, 42], dtype=np.int64))}
    assert owned_sectors([[mem]], copies=True)[1].tolist() == [40, 41, 42]
    assert owned_sectors([[mem]])[1].size == 0                 # by default left out


def test_the_span_reads_at_most_span_blocks_of_the_sampled_blocks_spread_over_them():
    # warming.shared_footprint reads the lines of only these blocks: the span is the one all of them give
    assert span_sample(10) == list(range(10))
    pick = span_sample(200)
    assert len(pick) == SPAN_BLOCKS and pick[0] == 0 and pick[-1] == 199 and pick == sorted(set(pick))
    sampled = [b for k in range(25) for b in range(k * 132, k * 132 + 8)]          # 200 blocks
    every = [(b, _grouped_lines(b)) for b in sampled]
    spans = sharing_spans(np.array([0]), np.array([1024]), every, 4096, 132)
    picked = sharing_spans(np.array([0]), np.array([1024]), [every[i] for i in pick], 4096, 132)
    assert spans.tolist() == picked.tolist()
    assert 0.08 < spans[0] < 0.2
