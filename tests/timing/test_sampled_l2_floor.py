"""Sampled timing's L2 floor (`Extrapolation._l2_floor_cycles`): what loop sampling and the
unsimulated waves extrapolate cannot take the L2 slices' lookups faster than the simulated
slices' peak. One property per test, on stand-ins for the engine's units."""
from types import SimpleNamespace

import pytest

from gpusim.specs.overrides import resolve
from gpusim.timing.sampling.extrapolation import Extrapolation, SampleShape

SPEC = resolve("h100", []).in_sm_cycles()
SMS = 8


class _Issue:
    """What loop sampling kept: loads 1 in 4 (scale 4), stores all (scale 1)."""

    def traffic_scale(self, counter):
        return 1.0 if "write" in counter else 4.0


def _memory(read_bytes, write_sectors, port=True):
    """The engine's memory as the floor reads it: the slices' reads' servers and, with `port` (the
    H100's `l2.write_port`), write ports of their own; without, the writes booked on the same servers."""
    l2 = SPEC.l2
    per_cycle = l2.slices * l2.bandwidth_bytes_per_cycle_per_slice * SMS / SPEC.sm_count
    write_cost = l2.bandwidth_bytes_per_cycle_per_slice / l2.write_bandwidth_bytes_per_cycle_per_slice
    written = write_sectors * l2.sector_bytes * write_cost
    if port:
        reads = [SimpleNamespace(bytes_served=read_bytes / 2)] * 2
        writes = [SimpleNamespace(bytes_served=written / 2)] * 2
    else:
        reads = writes = [SimpleNamespace(bytes_served=(read_bytes + written) / 2)] * 2
    slices = SimpleNamespace(servers=reads, write_servers=writes, bytes_per_cycle=per_cycle, dirtied_sectors=0)
    return SimpleNamespace(l2=SimpleNamespace(slices=slices), counters=lambda: {
        "lts__t_sectors_op_write.sum": float(write_sectors), "dram__bytes_read.sum": 0.0, "dram__bytes_write.sum": 0.0})


def _extrapolation(memory, t_sim, stretch_inst=0.0, rate=1.0, blocks=16, share=16):
    shape = SampleShape(mode="sampled", nblocks=share * SPEC.sm_count // SMS, warps_per_block=4, sms_simulated=SMS,
                        blocks_share=share, blocks_simulated=blocks, blocks_per_sm=2, wave_blocks=2 * SMS,
                        block_ptx_work=100, functional_budget=None)
    stats = SimpleNamespace(block_end={b: t_sim for b in range(blocks)}, block_start={b: 0.0 for b in range(blocks)})
    sm = SimpleNamespace(loop_skipped=stretch_inst, loop_windows=[(rate * 1000.0, 1000.0)], loop_kept=1.0, loop_start=0.0, loop_end=t_sim,
                         l1=SimpleNamespace(drain_time=0.0))
    return Extrapolation(SPEC, shape, stats, [sm], memory, _Issue(), None)


def test_the_floor_is_the_booked_bytes_scaled_as_loop_sampling_left_them_out_over_the_slices_peak():
    mem = _memory(read_bytes=1.0e6, write_sectors=1000, port=False)
    written = 1000 * SPEC.l2.sector_bytes * (SPEC.l2.bandwidth_bytes_per_cycle_per_slice /
                                              SPEC.l2.write_bandwidth_bytes_per_cycle_per_slice)
    want = (1.0e6 * 4.0 + written) / mem.l2.slices.bytes_per_cycle
    assert _extrapolation(mem, 1000.0)._l2_floor_cycles(1.0) == pytest.approx(want)


def test_with_write_ports_of_their_own_the_floor_is_the_busier_of_reads_and_writes():
    mem = _memory(read_bytes=1.0e4, write_sectors=100_000)
    written = 100_000 * SPEC.l2.sector_bytes * (SPEC.l2.bandwidth_bytes_per_cycle_per_slice /
                                                 SPEC.l2.write_bandwidth_bytes_per_cycle_per_slice)
    assert written > 1.0e4 * 4.0
    assert _extrapolation(mem, 1000.0)._l2_floor_cycles(1.0) == pytest.approx(written / mem.l2.slices.bytes_per_cycle)


def test_left_out_iterations_cannot_take_the_l2_faster_than_its_peak():
    mem = _memory(read_bytes=2.0e6, write_sectors=0)
    x = _extrapolation(mem, t_sim=10_000.0, stretch_inst=1000.0, rate=1.0)       # the loop's rate: 1,000 cycles more
    floor = x._l2_floor_cycles(1.0)
    assert floor > 11_000.0
    assert x.cycles() == pytest.approx(floor)


def test_a_sample_within_the_slices_peak_keeps_its_own_time():
    mem = _memory(read_bytes=1.0e4, write_sectors=0)
    assert _extrapolation(mem, t_sim=10_000.0, stretch_inst=1000.0, rate=1.0).cycles() == pytest.approx(11_000.0)
