"""Every program of programs/ at its default size: no report from any tool, and the same
outputs as without the tools."""
import pytest

import gpusim
import programs


@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_program_has_no_hazards_and_right_outputs(name):
    c = programs.get(name).case()
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, shared_bytes=c.shared_bytes, check="all")
    assert [str(h) for h in r.hazards] == []
    c.check()
