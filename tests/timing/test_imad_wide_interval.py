"""An IMAD.WIDE(.U32) (a 64-bit result) keeps the fmaheavy pipe of its SMSP
`PipesSpec.imad_wide_issue_interval_cycles` (4 on Hopper, measured: docs/mechanisms_24.md),
an IMAD its pipe's interval (2); its result comes the extra 2 cycles later (the second pass)."""
import dataclasses

import numpy as np
import pytest
from numba import cuda, uint32, uint64

import gpusim
from gpusim import specs
from gpusim.frontend.sass import SassInstr
from gpusim.timing.engine import TimingOptions
from gpusim.timing.static import sass_classifier

H100 = specs.get("h100")


def _classified(text, spec=H100):
    opcode, ops = text.split(" ", 1)
    return sass_classifier(spec)(0, SassInstr(0, opcode, text, None, operands=ops), None)


def test_imad_wide_keeps_fmaheavy_twice_as_long_as_imad_and_its_result_comes_a_pass_later():
    wide, imad = _classified("IMAD.WIDE.U32 R4, R15, R4, R4"), _classified("IMAD R5, R2, UR4, RZ")
    assert (wide.interval, wide.latency, imad.latency) == (4.0, 6, 4)
    assert _classified("IMAD.WIDE R14, R3, UR4, R14").interval == 4.0
    assert _classified("IMAD R5, R2, UR4, RZ").interval < 0          # the pipe's own interval (2)
    assert _classified("IMAD.X R5, R2, UR4, R3, P0").interval < 0


@cuda.jit
def wide_chains(x, out, iters):
    i = cuda.grid(1)
    c0, c1, c2, c3 = x[i], x[i] + uint64(1), x[i] + uint64(2), x[i] + uint64(3)
    for _ in range(iters):
        c0 = uint64(uint32(c0)) * uint64(uint32(c1)) + c0
        c1 = uint64(uint32(c1)) * uint64(uint32(c2)) + c1
        c2 = uint64(uint32(c2)) * uint64(uint32(c3)) + c2
        c3 = uint64(uint32(c3)) * uint64(uint32(c0)) + c3
    out[i] = c0 + c1 + c2 + c3


def _cycles(interval):
    spec = dataclasses.replace(H100, sm=dataclasses.replace(
        H100.sm, pipes=dataclasses.replace(H100.sm.pipes, imad_wide_issue_interval_cycles=interval)))
    x = np.arange(1024, dtype=np.uint64)
    r = gpusim.launch(wide_chains, 1, 1024, (x, np.zeros(1024, np.uint64), 64), gpu=spec, timing=True,
                      timing_options=TimingOptions(mode="full"))
    return r.metrics["sm__cycles_elapsed.max"]


@pytest.mark.slow
def test_a_wide_multiply_bound_loop_slows_with_the_wide_interval():
    # 8 warps an SMSP, four IMAD.WIDE.U32 a pass: 2 cycles more a WIDE is 8 x 4 x 2 x 64 = 4096
    # cycles more on fmaheavy, most of which the loop cannot hide (launch, loads and stores aside)
    slow, fast = _cycles(4.0), _cycles(2.0)
    assert slow - fast > 0.75 * 4096
