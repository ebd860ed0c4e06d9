"""The L2's own clock (gpusim/timing/clock_domain.py, `ClockSpec.l2_clock_mhz`): the slices' and
the partition fabric's bandwidths are per L2 cycle and every launch gets them per SM cycle of
the clock it runs at, so an L2-bound kernel's bytes per second do not follow the SM clock."""
from types import SimpleNamespace

import pytest

from gpusim import specs
from gpusim.specs.overrides import apply
from gpusim.timing.clock_domain import launch_spec

H100 = specs.get("h100")
HMMA = [SimpleNamespace(base="HMMA")]
FFMA = [SimpleNamespace(base="FFMA")]


def test_the_hopper_presets_put_the_l2_on_its_measured_clock():
    assert H100.clocks.l2_clock_mhz == 1707.5 and specs.get("h200").clocks.l2_clock_mhz == 1707.5


def test_a_slice_gives_its_l2_cycle_bytes_times_l2_over_sm_clock_per_sm_cycle():
    s = apply(H100, {"clock_mhz": 1500})
    got = s.in_sm_cycles().l2.bandwidth_bytes_per_cycle_per_slice
    assert got == pytest.approx(H100.l2.bandwidth_bytes_per_cycle_per_slice * 1707.5 / 1500)


def test_the_slices_bytes_per_second_do_not_follow_the_sm_clock():
    per_ns = []
    for mhz in (1500, 1980):
        s = apply(H100, {"clock_mhz": mhz}).in_sm_cycles()
        per_ns.append(s.l2.bandwidth_bytes_per_cycle_per_slice * mhz / 1000.0)
    assert per_ns[0] == pytest.approx(per_ns[1])


def test_writes_and_the_fabric_are_on_the_l2_clock_too():
    s = apply(H100, {"clock_mhz": 1500}).in_sm_cycles().l2
    assert s.write_bandwidth_bytes_per_cycle_per_slice == pytest.approx(
        H100.l2.write_bandwidth_bytes_per_cycle_per_slice * 1707.5 / 1500)
    assert s.fabric_bandwidth_bytes_per_cycle == pytest.approx(H100.l2.fabric_bandwidth_bytes_per_cycle * 1707.5 / 1500)


def test_the_l2_latency_stays_in_sm_cycles():
    s = apply(H100, {"clock_mhz": 1500}).in_sm_cycles()
    assert s.l2.hit_latency_cycles == H100.l2.hit_latency_cycles


def test_l2_clock_0_means_the_bandwidths_are_per_sm_cycle():
    s = apply(H100, {"clocks.l2_clock_mhz": 0})
    assert s.in_sm_cycles() is s


def test_restating_twice_changes_nothing():
    once = H100.in_sm_cycles()
    assert once.in_sm_cycles() == once and once.clocks.l2_clock_mhz == 0.0


def test_a_tensor_kernel_gets_more_l2_bytes_a_cycle_than_a_cuda_core_kernel():
    tensor = launch_spec(H100, HMMA).l2.bandwidth_bytes_per_cycle_per_slice
    cuda_core = launch_spec(H100, FFMA).l2.bandwidth_bytes_per_cycle_per_slice
    assert tensor / cuda_core == pytest.approx(H100.clocks.sm_clock_mhz / H100.clocks.tensor_mhz)
