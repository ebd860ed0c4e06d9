"""gpusim.cupy against CuPy on a GPU (validate/cupy_dropin.py): every output of the recorded
cases (flush-to-zero, FMA contraction, libdevice expf/sinf/sqrtf/division, templates through
name expressions, a shuffle reduction) is bit-identical, and CuPy compiled with the options
gpusim.cupy gives NVRTC."""
import json
from pathlib import Path

import pytest

from gpusim.cupy._kernel import CPP_STANDARD, FTZ
from validate import cupy_dropin

DATA = Path(__file__).resolve().parents[2] / "validate" / "data"
RECORDED = sorted(DATA.glob("cupy_dropin_*.npz"))


@pytest.mark.skipif(not RECORDED, reason="no recording yet: python -m validate.cupy_dropin --out validate/data "
                                         "on a machine with a GPU and CuPy")
@pytest.mark.parametrize("npz", RECORDED, ids=lambda p: p.stem)
def test_every_recorded_output_is_bit_identical(npz):
    gpu = "h200" if "h200" in npz.stem else "h100"
    assert cupy_dropin.compare(npz, gpu) == {c: 0 for c in cupy_dropin.NAMES_OF_CASES}


@pytest.mark.skipif(not RECORDED, reason="no recording yet: python -m validate.cupy_dropin --out validate/data "
                                         "on a machine with a GPU and CuPy")
@pytest.mark.parametrize("npz", RECORDED, ids=lambda p: p.stem)
def test_cupy_compiled_with_the_options_gpusim_gives_nvrtc(npz):
    meta = json.loads(npz.with_suffix(".json").read_text())
    assert meta["nvrtc_options"] and all(o[-1] == FTZ for o in meta["nvrtc_options"])
    standards = {o.lstrip("-") for opts in meta["nvrtc_options_given_none"] for o in opts if "std=c++" in o}
    assert standards == {CPP_STANDARD.lstrip("-")}
