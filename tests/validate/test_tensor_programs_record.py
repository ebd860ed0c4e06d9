"""validate/tensor_programs/record.py, the GPU recording of the CUDA C++ GEMMs, run here against a
stand-in for CuPy that launches in gpusim: it writes the inputs, the output and the provenance of
each case, and compare.py finds gpusim's outputs equal to what was recorded."""
import json
import sys
import types

import numpy as np

import gpusim
import validate.tensor_programs.record as R
from validate.tensor_programs.compare import main as compare


class _Array:
    def __init__(self, a):
        self.a = np.array(a)

    def get(self):
        return self.a.copy()


class _Module:
    def __init__(self, code, options=(), name_expressions=(), backend="nvrtc"):
        self.code, self.options = code, tuple(o for o in options if not o.startswith("-I"))

    def get_function(self, name):
        def launch(grid, block, args, shared_mem=0):
            host = tuple(a.a if isinstance(a, _Array) else a for a in args)
            gpusim.launch(gpusim.CudaSource(self.code, name, options=self.options), grid, block, host,
                          shared_bytes=shared_mem)
        return launch


def _fake_cupy():
    event = type("Event", (), {"record": lambda self: None, "synchronize": lambda self: None})
    runtime = types.SimpleNamespace(
        getDeviceProperties=lambda i: {"name": b"NVIDIA H100 (stand-in)", "major": 9, "minor": 0,
                                       "multiProcessorCount": 132},
        driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: 13000)
    cuda = types.SimpleNamespace(Event=event, get_elapsed_time=lambda a, b: 0.5, runtime=runtime,
                                 Device=lambda: types.SimpleNamespace(id=0),
                                 nvrtc=types.SimpleNamespace(getVersion=lambda: (13, 0)))
    return types.SimpleNamespace(__version__="stand-in", asarray=_Array, RawModule=_Module, cuda=cuda)


def test_record_writes_inputs_output_provenance_and_compare_agrees(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(R, "RECORDED", [("sgemm", "default")])
    monkeypatch.setattr(R, "TIMED", [("sgemm", "default")])
    assert R.main(["--out", str(tmp_path)]) == 0
    data = np.load(tmp_path / "tensor_programs_h100.npz")
    doc = json.loads((tmp_path / "tensor_programs_h100.json").read_text())
    assert sorted(data.files) == ["provenance", "sgemm/default/A", "sgemm/default/B", "sgemm/default/C"]
    assert doc["cases"][0]["kernel"] == "sgemm<64, 64, 8, 4, 4>"
    assert doc["cases"][0]["numpy_check"] == "within the program's tolerance of numpy"
    assert doc["timings"][0]["ms_median"] == 0.5 and doc["provenance"]["command"].startswith(
        "python -m validate.tensor_programs.record")
    assert compare([str(tmp_path / "tensor_programs_h100.npz")]) == 0
