"""programs/hopper_kernels/tma_box: every TMA box case equals its numpy reference, the tensor
maps gpusim encodes are the fields the GPU script gives the driver, and (once recorded) the
bytes equal the GPU's. One property per test."""
from pathlib import Path

import numpy as np
import pytest

import gpusim
from programs.hopper_kernels import _tma_cases as C
from programs.hopper_kernels.tma_box import PROGRAM

DATA = sorted((Path(__file__).resolve().parents[2] / "validate" / "data").glob("tma_h*.npz"))


def run(case: str):
    c = PROGRAM.case(case)
    gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", shared_bytes=c.shared_bytes)
    return c


@pytest.mark.parametrize("case", list(C.BOX_CASES))
def test_box_case_equals_the_numpy_reference(case):
    run(case).check()


@pytest.mark.parametrize("case", list(C.BOX_CASES))
def test_gpu_script_encodes_the_map_gpusim_encodes(case):
    spec = C.BOX_CASES[case]
    t = C.box_tensor(spec)
    kw = C.box_map_keywords(spec)
    assert C.fields(t, 0x7000_0000_0100, **kw) == gpusim.TensorMap(t, **kw).fields(0x7000_0000_0100)


@pytest.mark.skipif(not DATA, reason="GPU outputs not recorded yet (validate/semantics/tma_record.py)")
@pytest.mark.parametrize("case", list(C.BOX_CASES))
def test_box_case_equals_the_gpu_byte_for_byte(case):
    c = run(case)
    for path in DATA:
        rec = np.load(path)
        assert c.args[2].tobytes() == rec[f"box:{case}:dump"].tobytes(), path.name
        assert c.args[1].array.tobytes() == rec[f"box:{case}:out"].tobytes(), path.name


@pytest.mark.skipif(not DATA, reason="GPU outputs not recorded yet (validate/semantics/tma_record.py)")
def test_gpusim_refuses_exactly_the_maps_the_driver_refuses():
    import importlib.util
    from isa.semantics import tensor_map as T
    path = Path(__file__).resolve().parents[2] / "validate" / "semantics" / "tma_record.py"
    spec = importlib.util.spec_from_file_location("tma_record", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = np.zeros((64, 64), np.float16)
    for name, kw in mod.ENCODE_CHECKS.items():
        f = C.fields(m, 0x7000_0000_0000 + kw.get("offset", 0),
                     **{k: v for k, v in kw.items() if k not in ("fields", "offset")})
        for k, v in kw.get("fields", {}).items():
            f = T.TensorMapFields(**{**f.__dict__, k: v})
        for rec in DATA:
            assert (int(np.load(rec)[f"driver:{name}"]) == 0) == (T.problems(f) is None), (name, rec.name)
