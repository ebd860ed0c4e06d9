"""An error raised while the SimPy processes run (here from the caller's progress callback,
as the time limit is) reaches the caller as itself, with its fields: SimPy's own re-raise
rebuilds exceptions as `type(e)(*e.args)`, which gpusim's keyword-field errors do not survive
(issue 24: 'KernelError.__init__() missing 1 required keyword-only argument')."""
import numpy as np
import pytest

import gpusim
import programs
from gpusim.errors import KernelError


def test_a_kernel_error_raised_while_blocks_are_timed_keeps_its_fields():
    case = programs.get("vector_add").case("default")

    def stop(p):
        if p.phase == "timing" and p.blocks_done:
            raise KernelError("stopped by the caller", kernel="vector_add", detail="at a timed block")

    with pytest.raises(KernelError) as info:
        gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu="h100", timing=True, progress=stop)
    assert info.value.kernel == "vector_add" and "at a timed block" in str(info.value)
    assert np.isfinite(case.args[0]).all()
