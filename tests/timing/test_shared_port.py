"""A sub-partition's port to the SM's shared-memory data path (gpusim/timing/issue_loop.py,
`shared_access`): one sub-partition's wavefronts come one every `sm.shared_wavefront_latency_cycles`
(2), the path takes one a cycle, so one warp's conflicted accesses run at half the rate two
sub-partitions' reach. Measured on an H100 by validate/shared_banks_probe.py
(data/measurements/shared_banks_h100.json); gpusim runs the probe's own kernels."""
import pytest

from validate import shared_banks_probe as probe

CASES = {c["case"]: c for c in probe.CASES}


def cycles_per_access_per_sm(case: str) -> float:
    """The slope of the SM's cycles over 16 more repetitions, per warp access of the loop."""
    c = CASES[case]
    cycles = [r["cycles"] for r in probe.predict("h100", cases=[dict(c, reps=n) for n in (8, 24)])]
    return (cycles[1] - cycles[0]) / (16 * probe.UNROLL * c["warps"])


def test_one_warp_s_32_way_conflicted_loads_take_two_cycles_a_wavefront():
    # measured 64.8 cycles a load (the model before: 33)
    assert cycles_per_access_per_sm("ld_k32_w1_same") == pytest.approx(64.0, abs=1.0)


def test_two_warps_on_two_sub_partitions_fill_the_path_at_one_wavefront_a_cycle():
    # measured 32.1 cycles a load a SM (a naive port model's queue gave 61)
    assert cycles_per_access_per_sm("ld_k32_w2_diff") == pytest.approx(32.0, abs=1.0)
