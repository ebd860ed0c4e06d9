"""Sampled simulation keeps a shared footprint in the whole GPU's L2 (gpusim/timing/sampling/warming.py)."""
import math

import numpy as np
import pytest
from numba import cuda

import gpusim
import programs
from gpusim.api import prepare
from gpusim.specs.overrides import apply
from gpusim.timing.engine import TimingOptions
from gpusim.timing.functional_streams import TraceSource
from gpusim.timing.sampling.warming import (COLD, HASH_MULT, HELD, IN_FLIGHT, MASK64, SharedFootprint, _blocks_lines,
                                            _held)


def test_a_stream_region_is_never_warm():
    fp = SharedFootprint([0], [1000], [1000.0], capacity_lines=100.0)   # each line one block's
    assert fp.probability(500, 0.9) == 0.0


def test_a_shared_region_that_fits_is_warm_once_the_grid_has_touched_it():
    fp = SharedFootprint([0], [1000], [32_000.0], capacity_lines=5000.0)  # 32 blocks per line, fits
    assert fp.window == 1.0
    assert math.isclose(fp.probability(7, 0.5), 1.0 - math.exp(-31 * 0.5))
    assert fp.probability(7, 0.0) == 0.0                                  # the kernel's first blocks find it cold


def test_a_shared_region_larger_than_the_l2_keeps_what_lru_keeps():
    # Che's approximation: D (1 - exp(-m w)) = C for one region, so w = -ln(1 - C / D) / m
    d, m, c = 100_000, 32.0, 40_000.0
    fp = SharedFootprint([0], [d], [m * d], capacity_lines=c)
    assert math.isclose(fp.window, -math.log(1 - c / d) / m, rel_tol=1e-6)


def test_the_warm_draw_is_deterministic_and_follows_the_probability():
    fp = SharedFootprint([0], [100_000], [400_000.0], capacity_lines=1e9)   # m = 4, fits
    p = fp.probability(0, 0.2)
    share = np.mean([fp.warm(line, 0.2) for line in range(100_000)])
    assert abs(share - p) < 0.01
    assert [fp.warm(line, 0.2) for line in range(50)] == [fp.warm(line, 0.2) for line in range(50)]


@cuda.jit
def scatter(x, perm, out):
    i = cuda.grid(1)
    if i < x.size:
        out[perm[i]] = x[i]


def test_a_sampled_scatter_into_an_l2_resident_array_reads_each_line_about_once():
    n = 1 << 21                                   # three 8 MiB arrays: the whole H200 L2 (60 MiB) holds them
    rng = np.random.default_rng(1)
    x = rng.integers(0, 1 << 30, n, dtype=np.int32)
    perm = rng.permutation(n).astype(np.int32)
    r = gpusim.launch(scatter, n // 256, 256, (x, perm, np.zeros(n, np.int32)), gpu="h200", timing=True,
                      timing_options=TimingOptions(mode="sampled", functional="sampled"))
    footprint = 3 * 4 * n                         # x and perm streamed, out filled once for its partial writes
    assert r.metrics["gpusim__l2_warm_fill_lines.sum"] > 0
    assert r.metrics["dram__bytes_read.sum"] < 1.3 * footprint


def test_a_warm_line_is_whole_only_in_a_region_the_blocks_read():
    fp = SharedFootprint([0, 1000], [1000, 2000], [32_000.0, 32_000.0], capacity_lines=5000.0, read=[True, False])
    assert (fp.whole(10), fp.whole(1010), fp.whole(5000)) == (True, False, True)   # 5000: no region's


def _scatter_2m(gpu, mode="sampled"):
    n = 1 << 21
    rng = np.random.default_rng(1)
    x = rng.integers(0, 1 << 30, n, dtype=np.int32)
    perm = rng.permutation(n).astype(np.int32)
    return n, gpusim.launch(scatter, n // 256, 256, (x, perm, np.zeros(n, np.int32)), gpu=gpu, timing=True,
                            timing_options=TimingOptions(mode=mode, functional="sampled")).metrics


def test_without_a_partial_line_limit_a_sampled_scatters_4_byte_stores_each_find_their_sector_partly_written():
    # the whole L2 holds what the other blocks' stores wrote, not whole lines: every store of a random
    # 4-byte scatter (8 a sector) is a partial write into a sector not held whole (the ECC granule's read),
    # as in full simulation; a warm line filled whole made later stores free (held-out scatter_store/medium
    # 56.1 us sampled against 72.5 in full simulation, docs/mechanisms_24.md section 47)
    n, m = _scatter_2m(apply("h200", {"l2.partial_lines_per_slice": 0}))
    assert m["gpusim__l2_partial_write_sectors.sum"] > 0.95 * n


@pytest.mark.slow                                      # the full simulation: about a minute
def test_with_the_partial_line_limit_a_sampled_scatter_completes_what_full_simulation_completes():
    # the H200's limit (section 49): the whole L2 has completed the sectors the other blocks' stores
    # reached while a line was held (warming.held_sectors), so the sample's partial writes, DRAM reads and
    # time come within 12% of full simulation's (1.46 / 1.34 M, 21.9 / 20.6 MB, 33.4 / 31.5 us at 183b4ad)
    _, sampled = _scatter_2m("h200")
    _, full = _scatter_2m("h200", "full")
    for metric in ("gpusim__l2_partial_write_sectors.sum", "dram__bytes_read.sum", "gpu__time_duration.sum"):
        assert abs(sampled[metric] / full[metric] - 1) < 0.12, metric


def test_a_regular_region_walked_in_order_beyond_the_l2_is_never_warm():
    # matmul 4096^3: B (64 MB) is walked once per block row; LRU keeps none of a cyclic walk larger than it
    d, m, c = 100_000, 64.0, 40_000.0
    fp = SharedFootprint([0], [d], [m * d], capacity_lines=c, regular=[True])
    assert math.isclose(fp.window, c / (m * d), rel_tol=1e-6)      # D min(1, m w) = C
    assert fp.probability(7, 0.9) == 0.0


def test_a_regular_region_that_fits_is_warm_from_its_first_reuse_on():
    fp = SharedFootprint([0], [1000], [32_000.0], capacity_lines=5000.0, regular=[True])
    assert fp.probability(7, 1 / 32 - 1e-9) == 0.0                 # before the grid comes back to it
    assert fp.probability(7, 1 / 32) == 1.0


def test_a_block_lines_at_one_stride_make_a_region_regular():
    from gpusim.timing.sampling.warming import _count_gaps
    gaps, common = np.zeros(2), np.zeros(2)
    _count_gaps(np.array([0, 128, 256, 384, 1000, 1003, 1100, 1500]), np.array([0, 0, 0, 0, 1, 1, 1, 1]),
                gaps, common)
    assert list(gaps) == [3, 3] and list(common) == [3, 1]        # region 0: one stride; region 1: scattered


def test_a_block_lines_in_one_contiguous_run_do_not_make_a_region_regular():
    from gpusim.timing.sampling.warming import _count_gaps
    gaps, common = np.zeros(1), np.zeros(1)
    _count_gaps(np.arange(100, 132), np.zeros(32, dtype=np.int64), gaps, common)   # a row of 32 lines
    assert (gaps[0], common[0]) == (31, 0)


def test_the_first_blocks_of_a_one_wave_grid_find_the_lines_its_other_blocks_share():
    # 256 GEMM tiles on 132 SMs x 2: one wave; each line of A read by 16 tiles. The first-numbered
    # blocks run with all the others, so they hit (m - 1) / m of the lines, not none (tau = 0)
    fp = SharedFootprint([0], [1000], [16_000.0], capacity_lines=1e6, wave_share=1.0)
    assert fp.probability(7, 0.0) > 0.9
    assert fp.probability(7, 0.0) == fp.probability(7, 0.99)           # one wave: one span of positions
    walked = SharedFootprint([0], [1000], [16_000.0], capacity_lines=1e6, regular=[True], wave_share=1.0)
    assert math.isclose(walked.probability(7, 0.0), 15 / 16)


def test_blocks_of_later_waves_find_more_of_a_shared_region_held_than_the_first_wave():
    fp = SharedFootprint([0], [1000], [4_000.0], capacity_lines=1e6, wave_share=0.25)   # four waves, m = 4
    first, last = fp.probability(7, 0.1), fp.probability(7, 0.9)
    assert 0.0 < first < last
    assert fp.probability(7, 0.0) == first                              # the whole first wave alike


def test_a_line_first_touched_within_the_wave_is_in_flight_and_one_from_earlier_waves_held():
    one_wave = SharedFootprint([0], [100_000], [1_600_000.0], capacity_lines=1e9, wave_share=1.0)   # m = 16
    states = [one_wave.warm_state(line, 0.0) for line in range(100_000)]
    assert HELD not in states                                          # nothing before the first wave
    assert abs(states.count(IN_FLIGHT) / len(states) - one_wave.probability(0, 0.0)) < 0.01
    later = SharedFootprint([0], [100_000], [200_000.0], capacity_lines=1e9, wave_share=0.25)    # m = 2
    states = [later.warm_state(line, 0.8) for line in range(100_000)]
    assert states.count(HELD) > states.count(IN_FLIGHT) > 0 and COLD in states


def test_a_lines_state_is_in_flight_where_its_draw_falls_between_its_waves_first_position_and_mean():
    # two regions, four waves: the state each (region, wave) remembers is the one its probabilities give
    fp = SharedFootprint([0, 50_000], [50_000, 100_000], [100_000.0, 400_000.0], capacity_lines=1e9,
                         regular=[False, True], wave_share=0.25)
    for tau in (0.1, 0.3, 0.3, 0.6, 0.9):
        for line in range(0, 100_000, 7):
            u = ((line * HASH_MULT) & MASK64) / 2.0 ** 64
            r = int(line >= 50_000)
            a, b, extra, gap, regular, span = fp._list[r]
            t0 = int(tau / 0.25 + 1e-9) * 0.25
            want = COLD if u >= fp.probability(line, tau) else \
                HELD if u < _held(t0, t0, extra, gap, regular, fp.window, span) else IN_FLIGHT
            assert fp.warm_state(line, tau) == want


def test_the_lines_of_blocks_read_together_are_each_blocks_own_distinct_lines():
    # a batch's steps hold several blocks' warps: read at once, each block keeps its own lines
    c = programs.get("stencil_1d").case("default")
    src = TraceSource(prepare(c.kernel, c.grid, c.block, c.args, "h200"), 4)
    blocks = [src.peek(b) for b in range(3)]
    got = _blocks_lines(blocks, 2)
    assert len(got) == 3
    for streams, lines in zip(blocks, got):                         # each map built and read on its own
        parts = [p[0] if isinstance(p, tuple) else p for st in streams for v in st.visits for p in v[2].values()]
        want = np.unique(np.concatenate([p.astype(np.int64) >> 2 for p in parts if isinstance(p, np.ndarray)]))
        assert lines.dtype == np.int64 and lines.size and lines.tolist() == want.tolist()
    assert [x.tolist() for x in _blocks_lines([[], blocks[1]], 2)] == [[], got[1].tolist()]


def _b_strip(capacity_lines: float) -> SharedFootprint:
    """A row-major GEMM's B (wmma 4096^3 on an H200): 1000 lines walked in order by 64 blocks
    each (gap 1/64 of the grid), beside a stream of C twice its size, waves of 23% of the grid."""
    return SharedFootprint([0, 1000], [1000, 3000], [64_000.0, 2000.0], capacity_lines=capacity_lines,
                           regular=[True, False], wave_share=0.23)


def test_a_walked_line_an_earlier_wave_touched_beyond_the_window_is_fetched_again_each_wave():
    # the blocks of a wave run at once: the previous touch by a block of an earlier wave came a
    # wave's time before, not the gap to it in the grid (the H200 read B once a wave: 203 MB
    # of DRAM reads, where holding it from the first wave on would give 67 MB)
    fp = _b_strip(1_300.0)
    assert 1 / 64 < fp.window < 0.23
    assert HELD not in {fp.warm_state(line, 0.6) for line in range(1000)}
    assert math.isclose(fp.probability(7, 0.6), 1 - (1 / 64) / 0.23)       # the wave's own sharers: in flight


def test_a_walked_line_an_earlier_wave_touched_within_the_window_is_held():
    fp = _b_strip(1e6)
    assert fp.window == 1.0
    assert {fp.warm_state(line, 0.6) for line in range(1000)} == {HELD}
    assert IN_FLIGHT in {fp.warm_state(line, 0.1) for line in range(1000)}   # the first wave: on its way


def test_a_sample_keeps_room_for_the_shared_lines_its_blocks_touch_beyond_its_part_of_them():
    # a 1,000-line region touched by 500 blocks a line, held by the whole L2 for the whole kernel:
    # a sample of 1/10 of the grid touches nearly every line, 9/10 of them beyond its part
    fp = SharedFootprint([0], [1000], [500_000.0], capacity_lines=1e9)
    assert fp.window == 1.0
    assert math.isclose(fp.share_excess_lines(0.1), 1000 * (-math.expm1(-50.0) - 0.1))


def test_a_sample_keeps_room_only_for_the_shared_lines_touched_within_the_l2_window():
    # 100,000 lines touched by 4 blocks each at random, an L2 of 40,000: a line stays for w of the
    # kernel, the whole L2 holds the lines touched within w, each about 4 w D / T times there
    d, m, c = 100_000, 4.0, 40_000.0
    fp = SharedFootprint([0], [d], [m * d], capacity_lines=c)
    w = fp.window
    held = d * -math.expm1(-m * w)
    k = m * w * d / held
    assert math.isclose(held, c, rel_tol=1e-6)
    assert math.isclose(fp.share_excess_lines(0.1), held * (-math.expm1(-0.1 * k) - 0.1), rel_tol=1e-9)
    assert fp.share_excess_lines(0.1) < 0.05 * c


def test_a_sample_needs_no_room_beyond_its_part_for_streams():
    fp = SharedFootprint([0, 1000], [1000, 2000], [1000.0, 1500.0], capacity_lines=1e9)   # 1 and 1.5 blocks a line
    assert fp.share_excess_lines(0.1) == 0.0


class _Held:
    """A footprint whose every line is held with probability p (what `held_sectors` asks)."""

    def __init__(self, p):
        self.p = p

    def probability(self, line, tau, convoy=False):
        return self.p


def test_a_held_line_of_a_store_only_region_holds_the_sectors_its_touches_reached():
    # a line held with p = 1 - e^-4 expects 4 touches in the window, one sector of 4 each: a sector was
    # touched with probability (1 - e^-1) / p = 0.644 given the line is held
    p = 1 - math.exp(-4)
    masks = [SharedFootprint.held_sectors(_Held(p), line, 0.5, 4) for line in range(20_000)]
    share = sum(bin(m).count("1") for m in masks) / (4 * len(masks))
    assert abs(share - (1 - math.exp(-1)) / p) < 0.01


def test_a_line_held_for_certain_holds_every_sector_and_one_never_held_none():
    assert SharedFootprint.held_sectors(_Held(1.0), 7, 0.5, 4) == 0b1111
    assert SharedFootprint.held_sectors(_Held(0.0), 7, 0.5, 4) == 0
