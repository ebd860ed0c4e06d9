"""gpusim.cupy against CuPy on a GPU (validate/cupy_dropin.py, recorded on an H100 with CuPy
14.2 and NVRTC 13.0): every output of the recorded cases (flush-to-zero, FMA contraction,
libdevice sinf/sqrtf/division, templates through name expressions, a shuffle reduction) is
bit-identical, except `expf`, whose MUFU.EX2 approximation gpusim does not model bit for bit
(isa/semantics/transcendental.py, DEVIATIONS.md): there every output is within 2 ulp. And the
recording decides CuPy's flush-to-zero: without `-ftz=true` the same kernels differ.

(The recording's `nvrtc_options` list came back empty: CuPy 14 does not call the patched
`compiler.compile_using_nvrtc`; the outputs, not the option list, are the evidence here.)"""
from pathlib import Path

import numpy as np
import pytest

import gpusim.cupy._kernel as K
from validate import cupy_dropin
from validate.datadir import DATA_DIR

DATA = DATA_DIR
RECORDED = sorted(DATA.glob("cupy_dropin_*.npz"))
EXPF = 2                 # float_math's output column computed by expf (out[4 * i + 2])

needs_recording = pytest.mark.skipif(not RECORDED, reason="no recording yet: python -m validate.cupy_dropin --out "
                                                          "data/measurements on a machine with a GPU and CuPy")


def _gpu(npz: Path) -> str:
    return "h200" if "h200" in npz.stem else "h100"


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ia, ib = (np.asarray(x, np.float32).view(np.int32).astype(np.int64) for x in (a, b))
    ia, ib = (np.where(i < 0, -(1 << 31) - i, i) for i in (ia, ib))      # monotonic integer order
    return np.abs(ia - ib)


@needs_recording
@pytest.mark.parametrize("npz", RECORDED, ids=lambda p: p.stem)
def test_every_recorded_output_but_expf_is_bit_identical(npz):
    got, data = cupy_dropin.outputs(npz, _gpu(npz))
    diff = {c: cupy_dropin._differing(got[c], data[f"out:{c}"]) for c in got if c != "float_math"}
    assert diff == {c: 0 for c in cupy_dropin.NAMES_OF_CASES if c != "float_math"}
    fm_got = got["float_math"].reshape(-1, 4)
    fm_gpu = data["out:float_math"].reshape(-1, 4)
    other = [k for k in range(4) if k != EXPF]
    assert np.array_equal(fm_got[:, other].view(np.uint32), fm_gpu[:, other].view(np.uint32))


@needs_recording
@pytest.mark.parametrize("npz", RECORDED, ids=lambda p: p.stem)
def test_expf_outputs_are_within_two_ulp_of_the_gpu(npz):
    got, data = cupy_dropin.outputs(npz, _gpu(npz))
    u = _ulps(got["float_math"].reshape(-1, 4)[:, EXPF], data["out:float_math"].reshape(-1, 4)[:, EXPF])
    assert u.max() <= 2


@needs_recording
@pytest.mark.parametrize("npz", RECORDED, ids=lambda p: p.stem)
def test_without_flush_to_zero_the_recorded_saxpy_differs(npz, monkeypatch):
    monkeypatch.setattr(K, "FTZ", "-ftz=false")
    got, data = cupy_dropin.outputs(npz, _gpu(npz))
    assert cupy_dropin._differing(got["saxpy"], data["out:saxpy"]) > 0
