"""Every program of programs/ runs in the simulator at its default size and its
outputs equal the numpy reference (integers exactly, floats within the program's
stated tolerance)."""
import pytest

import gpusim
import programs


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_program_matches_numpy_reference(name):
    case = programs.get(name).case("default", seed=1)
    gpusim.launch(case.kernel, case.grid, case.block, case.args, shared_bytes=case.shared_bytes)
    case.check()


def test_same_launch_gives_identical_counters():
    spec = programs.get("reduce_interleaved_divergent")
    c1, c2 = spec.case(seed=3), spec.case(seed=3)
    r1 = gpusim.launch(c1.kernel, c1.grid, c1.block, c1.args)
    r2 = gpusim.launch(c2.kernel, c2.grid, c2.block, c2.args)
    assert r1.metrics == r2.metrics
