"""Shared-memory float atomics: ptxas makes a compare-and-swap loop of them (LDS, FADD,
ATOMS.CAST.SPIN, a branch back); the timing model gives the loop as many rounds as the most
lanes of a warp in one bank (functional_streams._cas_rounds) and each round `sm.shared_cas_round_cycles`
of the shared data path (sm.py _cas_loop). One property per test."""
import dataclasses

import numpy as np
import pytest
from numba import cuda, float32

import gpusim
from gpusim.frontend.sass.listing import SassInstr
from gpusim.timing.static import sass_classifier
from gpusim.timing.access_payloads import _cas_loop, _cas_rounds


def _rounds(words_per_warp):
    rel = np.repeat(np.arange(len(words_per_warp)), [len(w) for w in words_per_warp])
    return _cas_rounds(rel, np.concatenate([np.asarray(w, np.int64) for w in words_per_warp]), 32).tolist()


def test_lanes_on_one_word_take_a_round_each():
    assert _rounds([[5] * 32]) == [32]


def test_lanes_on_distinct_banks_take_one_round():
    assert _rounds([list(range(32))]) == [1]


def test_lanes_on_different_words_of_one_bank_take_a_round_each():
    # the SPIN compare-and-swap completes one lane a bank a round, whatever its address
    assert _rounds([[0, 32, 64, 96] + list(range(1, 29))]) == [4]


def test_each_warp_gets_its_own_rounds():
    assert _rounds([[0] * 3, list(range(8)), [7, 39]]) == [3, 1, 2]


def test_only_shared_float_adds_are_cas_loops():
    assert _cas_loop("atom.shared.add.f32") and _cas_loop("atom.shared.add.f64")
    assert not _cas_loop("atom.shared.add.u32") and not _cas_loop("atom.shared.inc.u32")


def _static(text):
    classify = sass_classifier(gpusim.specs.get("h200"))
    opcode, _, operands = text.partition(" ")
    return classify(0, SassInstr(offset=0, opcode=opcode, text=text, source_line=None, operands=operands), None)


def test_the_compare_and_swap_is_told_by_its_sass():
    assert _static("ATOMS.CAST.SPIN R15, [R10], R14, R15").cas_loop
    assert not _static("ATOMS.POPC.INC.32 RZ, [R2+URZ], RZ").cas_loop


@cuda.jit
def _fadd_shared(out, stride, iters):
    sh = cuda.shared.array(1024, float32)
    t = cuda.threadIdx.x
    sh[t] = 0
    cuda.syncthreads()
    for _ in range(iters):
        cuda.atomic.add(sh, (t * stride) % 1024, float32(1))
    cuda.syncthreads()
    out[t] = sh[t]


def _cycles(stride, spec="h200"):
    out = np.zeros(32, np.float32)
    r = gpusim.launch(_fadd_shared, 1, 32, (out, np.int32(stride), np.int32(16)), gpu=spec, timing=True)
    return r.metrics["sm__cycles_elapsed.max"]


@pytest.mark.slow
def test_a_warp_on_one_word_is_slower_than_on_32_banks_by_the_rounds():
    same, spread = _cycles(0), _cycles(1)
    rounds_cycles = 16 * 31 * gpusim.specs.get("h200").sm.shared_cas_round_cycles
    assert same - spread == pytest.approx(rounds_cycles, rel=0.25)


@pytest.mark.slow
def test_the_round_cycles_field_is_honoured():
    h200 = gpusim.specs.get("h200")
    slow = dataclasses.replace(h200, sm=dataclasses.replace(h200.sm, shared_cas_round_cycles=6.5))
    assert _cycles(0, slow) - _cycles(0) == pytest.approx(16 * 32 * 3.25, rel=0.25)
