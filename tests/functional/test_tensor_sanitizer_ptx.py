"""The sanitizer on PTX tensor-core kernels: wgmma.mma_async's shared-memory operands filled by all
threads with no barrier before the wgmma are a race, with the barrier clean, and a descriptor past
the shared memory is a memcheck record naming the instruction and thread; stmatrix rows are shared
writes (read back by other lanes with no syncwarp: a race)."""
import numpy as np
import pytest

import gpusim
from mma_kernels import ldsm_kernel, wgmma_kernel
from validate.semantics.tensor_forms import WGMMA_FORMS
from wgmma_cases import imms

pytestmark = pytest.mark.slow
F = next(f for f in WGMMA_FORMS if f.name == "w_f16_f32_n8")
SMEM = 4096


def _args(descs):
    return (np.zeros((1, SMEM), np.uint8), np.array([descs], np.uint64), np.zeros((128, 4), np.uint32),
            np.zeros((128, F.nacc), np.uint32), np.zeros((128, F.nacc), np.uint32))


def _launch(text, descs, check):
    return gpusim.launch(gpusim.PtxSource(text, "wg_k"), 1, 128, _args(descs), check=check)


def _mnemonics(text, h):
    """The PTX mnemonics of a hazard's accesses (a PTX file without .loc lines has no source lines)."""
    infos = gpusim.prepare(gpusim.PtxSource(text, "wg_k"), 1, 128, _args((0, 0, 1)), "h100").decoded.infos
    return tuple(infos[a.instruction].mnemonic.split(".")[0] for a in h.accesses)


def _text(barrier=True):
    t = wgmma_kernel(F.ptx, F.nacc, F.dtype, False, imms(F), SMEM)
    return t if barrier else t.replace("bar.sync 0;\n", "", 1)


def test_operands_filled_without_a_barrier_race_with_the_wgmma():
    r = _launch(_text(False), (0, 64, 1), "racecheck")
    assert [(h.kind, h.space, _mnemonics(_text(False), h)) for h in r.hazards] == [
        ("RAW", "shared", ("st", "wgmma"))]


def test_operands_after_the_barrier_are_clean():
    assert _launch(_text(), (0, 64, 1), "all").hazards == []


def test_descriptor_past_shared_memory_is_a_memcheck_record():
    r = _launch(_text(), (0, SMEM // 16, 1), "memcheck")
    assert [(h.tool, h.kind, h.space, _mnemonics(_text(), h), h.thread) for h in r.hazards] == [
        ("memcheck", "out-of-bounds", "shared", ("wgmma",), (0, 0, 0))]


def _stmatrix(sync: bool):
    text = ldsm_kernel("stmatrix.sync.aligned.m8n8.x4.shared.b16", 4, True)
    if not sync:                                 # the bar.warp.sync between the stmatrix and the read-back
        i = text.index("stmatrix.sync")
        text = text[:i] + text[i:].replace("bar.warp.sync -1;\n", "", 1)
    args = (np.arange(32, dtype=np.uint32) * 16, np.arange(128, dtype=np.uint32), np.zeros(8192, np.uint16))
    r = gpusim.launch(gpusim.PtxSource(text, "ldsm_k"), 1, 32, args, check="racecheck")
    return r, text, args


def test_stmatrix_read_back_without_syncwarp_is_a_race_between_lanes():
    r, text, args = _stmatrix(False)
    infos = gpusim.prepare(gpusim.PtxSource(text, "ldsm_k"), 1, 32, args, "h100").decoded.infos
    assert [(h.kind, infos[h.accesses[0].instruction].mnemonic.split(".")[0], h.detail) for h in r.hazards] == [
        ("RAW", "stmatrix", "lanes of one warp with no syncwarp between them")]


def test_stmatrix_read_back_after_syncwarp_is_clean():
    assert _stmatrix(True)[0].hazards == []
