"""Sampled timing's DRAM floor (`Extrapolation._dram_floor_cycles`): what loop sampling and the
unsimulated waves extrapolate cannot move the DRAM's bytes faster than the simulated share of its
peak, and the bytes a store stream's left-out part writes are every sector it makes dirty, not
the kept part's write-backs scaled (those lag the stores: the L2 took them first)."""
from types import SimpleNamespace

import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.specs.overrides import resolve
from gpusim.timing.engine import TimingOptions
from gpusim.timing.sampling.extrapolation import Extrapolation, SampleShape

SPEC = resolve("h100", []).in_sm_cycles()
SMS = 8


class _Issue:
    """Loop sampling kept 1 in 4 of the stores (and of the loads)."""

    def traffic_scale(self, counter):
        return 4.0


def _floor(written_bytes, dirtied_sectors, read_bytes=0.0):
    memory = SimpleNamespace(
        l2=SimpleNamespace(slices=SimpleNamespace(dirtied_sectors=dirtied_sectors)),
        counters=lambda: {"dram__bytes_read.sum": read_bytes, "dram__bytes_write.sum": written_bytes})
    shape = SampleShape(mode="sampled", nblocks=SPEC.sm_count * 2, warps_per_block=4, sms_simulated=SMS,
                        blocks_share=16, blocks_simulated=16, blocks_per_sm=2, wave_blocks=2 * SMS,
                        block_ptx_work=100, functional_budget=None)
    e = Extrapolation(SPEC, shape, SimpleNamespace(block_end={}, block_start={}), [], memory, _Issue(), None)
    h = SPEC.hbm
    peak = SPEC.hbm_bytes_per_cycle * SMS / SPEC.sm_count * (1.0 - h.t_rfc_ns / h.t_refi_ns)
    return e._dram_floor_cycles(1.0) * peak                     # the bytes the floor moves


def test_the_left_out_iterations_write_back_every_sector_they_make_dirty():
    # the kept part made 1,000 sectors dirty and wrote 100 of them back so far: the three left-out
    # quarters write back 3,000 more sectors, not 3 x 100 bytes' worth
    assert _floor(100 * 32.0, 1000) == pytest.approx(100 * 32.0 + 3 * 1000 * 32.0)


def test_write_backs_beyond_what_the_stores_dirtied_are_scaled_as_they_are():
    # lines dirty before the kernel (or phantom stand-ins) written back: more than the stores dirtied
    assert _floor(5000 * 32.0, 1000) == pytest.approx(4 * 5000 * 32.0)


def test_reads_scale_with_what_loop_sampling_kept():
    assert _floor(0.0, 0, read_bytes=1e6) == pytest.approx(4e6)


@cuda.jit
def fill(out, v):
    i = cuda.grid(1)
    while i < out.size:                   # a grid-stride store stream: loop sampling keeps its first iterations
        out[i] = v
        i += cuda.gridsize(1)


def _fill(instruction_budget):
    gpu = resolve("h100", ["l2.size_bytes=8388608"])                  # 64 MiB written through an 8 MiB L2
    r = gpusim.launch(fill, 132, 1024, (np.zeros(1 << 24, np.float32), np.float32(1)), gpu=gpu, timing=True,
                      timing_options=TimingOptions(instruction_budget=instruction_budget), outputs=False)
    return r.metrics


@pytest.mark.slow
def test_a_loop_sampled_store_stream_is_not_faster_than_the_dram_writes_it_leaves():
    # whole loop 24.0 us; loop-sampled 21.3 us (19.9 us with the kept part's write-backs scaled)
    sampled, whole = _fill(3_000_000), _fill(None)
    assert sampled["timing__loop_sampled_fraction"] < 0.6
    ratio = sampled["gpu__time_duration.sum"] / whole["gpu__time_duration.sum"]
    assert 0.86 < ratio <= 1.02, ratio
