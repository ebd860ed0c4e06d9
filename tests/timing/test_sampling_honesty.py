"""Sampled timing says how far to trust it: its error estimates cover the difference to full
simulation, across an L2 capacity sweep too, and where its sample cannot see a reuse distance
the L2 hit rate depends on it says so, and 'auto' mode simulates in full instead, or, asked to, with
more SMs where full simulation is past its budget (gpusim/timing/sampling/: extrapolation.py, warming.py; the wider comparison is
benchmarks/sampling_error.py)."""
import numpy as np
import pytest
from numba import cuda

import gpusim
import programs
from gpusim.errors import ConfigError
from gpusim.specs.overrides import resolve
from gpusim.timing.engine import TimingOptions
from gpusim.timing.sampling.extrapolation import Extrapolation, SampleShape
from sampling_kernels import reread, skewed

MIB = 1 << 20


def reread_launch(l2_mib: float, mode: str, **options):
    n = MIB // 4                          # a 1 MiB working set
    r = gpusim.launch(reread, (4 * n + 255) // 256, 256, (np.ones(n, np.float32), np.zeros(1, np.float32), n),
                      gpu=resolve("h100", [f"l2.size_bytes={int(l2_mib * MIB)}"]), timing=True,
                      timing_options=TimingOptions(mode=mode, functional="sampled", **options))
    return r.metrics


def dram(m):
    return m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]


def covered(sampled, full):
    """Full simulation within the sampled run's estimates (percentages of its prediction)."""
    t = abs(full["gpu__time_duration.sum"] / sampled["gpu__time_duration.sum"] - 1) * 100
    d = abs(dram(full) / dram(sampled) - 1) * 100
    return (t <= sampled["timing__sampling_error_pct"] and d <= sampled["timing__sampling_dram_error_pct"]), (t, d)


@pytest.mark.slow
@pytest.mark.parametrize("l2_mib", [0.5, 1, 2])
def test_the_error_estimates_cover_full_simulation_across_an_l2_capacity_sweep(l2_mib):
    # 4 reads of 1 MiB: every read misses with an L2 at or below the working set (LRU over an
    # in-order walk), only the first with a larger one; the sample sees neither reuse
    sampled, full = reread_launch(l2_mib, "sampled"), reread_launch(l2_mib, "full")
    ok, (t, d) = covered(sampled, full)
    assert ok, f"time {t:.1f}% vs {sampled['timing__sampling_error_pct']:.1f}%, DRAM {d:.1f}% vs " \
               f"{sampled['timing__sampling_dram_error_pct']:.1f}%"


@pytest.mark.slow
def test_auto_mode_names_a_reuse_distance_the_sample_cannot_see_and_simulates_in_full():
    auto, full = reread_launch(1, "auto"), reread_launch(1, "full")
    assert auto["timing__mode"] == "full" and dram(auto) == dram(full)
    note = auto["timing__sampling_note"]
    assert "re-reads of a 1.0 MB region touched by 4.0 blocks per line" in note
    assert "whether its reuse distance fits the 1.0 MB L2" in note and note.endswith("simulated in full instead")


@pytest.mark.slow
def test_auto_mode_samples_more_sms_where_full_simulation_is_past_the_functional_budget():
    # 4,096 blocks of some 100 PTX warp instructions each: a budget of 200,000 affords one wave of
    # 32 SMs (8 blocks each) but not the grid
    auto = reread_launch(1, "auto", functional_budget=200_000, denser_sample_factor=4)
    note = auto["timing__sampling_note"]
    assert auto["timing__mode"] == "sampled"
    assert "whether its reuse distance fits the 1.0 MB L2" in note and ": sampled 32 SMs instead of 8" in note


@pytest.mark.slow
def test_auto_mode_keeps_the_sample_where_no_denser_one_is_asked_for():
    auto = reread_launch(1, "auto", functional_budget=200_000)
    assert auto["timing__mode"] == "sampled" and "SMs instead of" not in auto["timing__sampling_note"]
    assert "whether its reuse distance fits the 1.0 MB L2" in auto["timing__sampling_note"]


@pytest.mark.slow
@pytest.mark.parametrize("name, params", [("vector_add", {"n": 1 << 20}), ("transpose_naive", {"rows": 1024,
                                                                                              "cols": 1024})])
def test_the_error_estimates_cover_full_simulation_of_streaming_programs(name, params):
    c = programs.get(name).case(params)

    def run(mode):
        return gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", shared_bytes=c.shared_bytes, timing=True,
                             timing_options=TimingOptions(mode=mode, functional="sampled")).metrics

    sampled, full = run("sampled"), run("full")
    ok, (t, d) = covered(sampled, full)
    assert ok and sampled["timing__sampling_note"] == "", (t, d, sampled["timing__sampling_error_pct"])


NNZ = 16


def rows_gather(vals, x, y):
    r = cuda.grid(1)                      # a thread's own row of 16 values, each times a gathered x
    if r < y.size:
        acc = np.float32(0)
        for k in range(NNZ):
            acc += vals[r * NNZ + k] * x[(r * 7919 + k * 104729) % x.size]
        y[r] = acc


@pytest.mark.slow
def test_a_sampled_gather_of_a_vector_the_share_cannot_hold_reads_its_rows_from_dram_once():
    # 16 SMs, 8 MiB of L2: the whole L2 holds the gathered 1 MiB vector (in both partitions) and
    # every row in flight; a sample of 2 SMs gets 1 MiB of it, which the vector alone would fill,
    # evicting each row between one iteration and the next (3.5x full simulation's DRAM reads)
    # unless its sets have room for the shared lines its blocks touch (`L2Slices.widen`)
    rows = 16 * 2048 * 3
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(rows * NNZ).astype(np.float32), rng.standard_normal(1 << 18).astype(np.float32),
            np.zeros(rows, np.float32))
    gpu = resolve("h100", ["sm_count=16", f"l2.size_bytes={8 * MIB}"])

    def run(mode):
        return gpusim.launch(cuda.jit(rows_gather), rows // 1024, 1024, args, gpu=gpu, timing=True,
                             timing_options=TimingOptions(mode=mode, functional="sampled", sample_sms=2)).metrics

    sampled, full = run("sampled"), run("full")
    assert sampled["gpusim__l2_warm_fill_lines.sum"] > 0
    assert abs(sampled["dram__bytes_read.sum"] / full["dram__bytes_read.sum"] - 1) < 0.2
    ok, (t, d) = covered(sampled, full)
    assert ok, (t, d, sampled["timing__sampling_error_pct"], sampled["timing__sampling_dram_error_pct"])


def _affordable(ptx_work: int, bulk_sectors: float, nblocks: int = 2048, budget: int = 60_000_000) -> bool:
    shape = SampleShape("sampled", nblocks, 4, 8, 125, 125, 1, 8, ptx_work, budget, bulk_sectors)
    return Extrapolation(resolve("h100", []), shape, None, [], None, None, None).full_affordable()


def test_full_simulation_in_place_of_a_sample_counts_the_sectors_bulk_copies_move():
    # a TMA-fed GEMM block of 4096^3 (2,048 blocks): some 10,000 PTX warp instructions, but its 256
    # tensor copies move 49,152 sectors, each costing the simulator what a warp instruction does
    assert _affordable(10_000, 0.0)
    assert not _affordable(10_000, 49_152.0)


def _denser(ptx_work: int, bulk_sectors: float, budget: int | None = 60_000_000, bps: int = 5) -> int:
    shape = SampleShape("sampled", 8192, 4, 8, 497, 40, bps, 8 * bps, ptx_work, budget, bulk_sectors)
    return Extrapolation(resolve("h100", []), shape, None, [], None, None, None).denser_sms(4)


def test_a_denser_sample_takes_four_times_the_sms_where_one_wave_of_them_fits_the_budget():
    # the TMA GEMM at 8192^3 (8,192 blocks, 5 a SM): 12,000 PTX warp instructions and 98,304 sectors a block
    assert _denser(12_000, 98_304.0) == 32
    assert _denser(12_000, 98_304.0, budget=None) == 32


def test_a_denser_sample_takes_the_sms_one_wave_of_which_fits_the_budget_and_none_where_no_more_fit():
    assert _denser(12_000, 98_304.0, budget=15_000_000) == 27      # 15 M / (110,304 x 5 blocks)
    assert _denser(12_000, 98_304.0, budget=4_000_000) == 0        # 7 SMs: fewer than the sample's 8


def test_a_denser_sample_factor_below_one_is_refused():
    with pytest.raises(ConfigError, match="denser_sample_factor"):
        TimingOptions(denser_sample_factor=0)


def skewed_launch(mode: str):
    blocks = 6 * 1056                     # six waves of 8 blocks of 256 threads on every H100 SM
    r = gpusim.launch(skewed, blocks, 256, (np.zeros(blocks * 256, np.float32), 1056, 1), gpu="h100", timing=True,
                      timing_options=TimingOptions(mode=mode, functional="sampled"), outputs=False)
    return r.metrics


@pytest.mark.slow
def test_waves_that_stay_in_step_after_a_light_first_wave_are_said_and_covered():
    # the heavy blocks all start when the idle first wave ends, so the sample's later waves run in step,
    # idle at their tails, where the whole grid's fall out of step: the extrapolated rate may be a
    # transient's (held-out 2's Mandelbrot: +24% on full simulation with an estimate of 12%)
    sampled, full = skewed_launch("sampled"), skewed_launch("full")
    assert "kept the sample's slots busy" in sampled["timing__sampling_note"]
    t = abs(full["gpu__time_duration.sum"] / sampled["gpu__time_duration.sum"] - 1) * 100
    assert t <= sampled["timing__sampling_error_pct"]
