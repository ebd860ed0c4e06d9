"""FP64 and ALU instructions take turns on one dispatch on Hopper (`PipesSpec.fp64_shares_alu_dispatch`:
the two pipes' busy cycles add up to at most the SMSP's on every FP64-bound mechanism kernel,
docs/mechanisms_24.md section 7): a DFMA holds the alu pipe for the fp64 interval, with the
fp64 latency."""
import dataclasses

import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim import specs
from gpusim.frontend.sass import SassInstr
from gpusim.timing.engine import TimingOptions
from gpusim.timing.static import sass_classifier

H100 = specs.get("h100")


def _spec(shared):
    return dataclasses.replace(H100, sm=dataclasses.replace(
        H100.sm, pipes=dataclasses.replace(H100.sm.pipes, fp64_shares_alu_dispatch=shared)))


def _classified(text, spec):
    opcode, ops = text.split(" ", 1)
    return sass_classifier(spec)(0, SassInstr(0, opcode, text, None, operands=ops), None)


def test_a_dfma_holds_the_alu_dispatch_for_the_fp64_interval_with_the_fp64_latency():
    d = _classified("DFMA R10, R6, R10, R8", _spec(True))
    assert (d.unit, d.interval, d.latency) == (("alu",), 2.0, 8)
    d = _classified("DFMA R10, R6, R10, R8", _spec(False))
    assert (d.unit, d.interval, d.latency) == (("fp64",), -1.0, 8)
    assert _classified("IADD3 R0, P0, R4, R15, RZ", _spec(True)).unit == ("alu",)


@cuda.jit
def chains(x, out, iters):
    i = cuda.grid(1)
    a, b = x[i], x[i] + 1.0
    k = np.int64(i)
    for _ in range(iters):                  # DFMAs and the 64-bit counter's ALU work side by side
        a = a * 0.999 + 1.0
        b = b * 0.999 + 1.0
        k = (k ^ 0x5DEECE66D) + (k >> 3)
    out[i] = a + b + k


def _cycles(shared):
    x = np.arange(1024, dtype=np.float64)
    r = gpusim.launch(chains, 1, 1024, (x, np.zeros(1024), 256), gpu=_spec(shared), timing=True,
                      timing_options=TimingOptions(mode="full"))
    return r.metrics["sm__cycles_elapsed.max"]


@pytest.mark.slow
def test_fp64_and_alu_work_taking_turns_take_longer_than_overlapping():
    assert _cycles(True) > 1.2 * _cycles(False)
