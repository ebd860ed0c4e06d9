"""programs/hopper_kernels/tma_wgmma_gemm: the TMA + wgmma GEMM against numpy and (once
recorded) bit for bit against the GPU; `gpusim run` times it. One property per test."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpusim
from programs.hopper_kernels import _tma_cases as C
from programs.hopper_kernels.tma_wgmma_gemm import PROGRAM
from validate.datadir import DATA_DIR

ROOT = Path(__file__).resolve().parents[2]
DATA = sorted(p for p in DATA_DIR.glob("tma_h*.npz")
              if not p.stem.endswith("_rules"))     # the rule probe records boxes, not the GEMM


def run(size: str, **kw):
    c = PROGRAM.case(size)
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", shared_bytes=c.shared_bytes, **kw)
    return c, r


def test_gpu_script_builds_the_programs_inputs():
    spec = importlib.util.spec_from_file_location("tma_record", ROOT / "validate" / "semantics" / "tma_record.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cases = mod.load_cases()
    p = C.GEMM_SIZES["tiny"]
    A, B = cases.gemm_inputs(np.random.default_rng(0), p["m"], p["n"], p["k"])
    c = PROGRAM.case("tiny")
    assert (A.tobytes(), B.tobytes()) == (c.args[0].array.tobytes(), c.args[1].array.tobytes())


@pytest.mark.slow
def test_tiny_gemm_equals_numpy_within_tensor_core_rounding():
    c, _ = run("tiny")
    c.check()


@pytest.mark.slow
def test_tiny_gemm_counts_its_tma_and_wgmma_instructions():
    _, r = run("tiny")
    m = r.metrics
    # 2 k-slices x (1 A box + 1 B box) loads, 1 store; 2 slices x 2 k16 steps x 4 warps of wgmma
    assert (m["smsp__sass_inst_executed_op_tma_ld.sum"], m["smsp__sass_inst_executed_op_tma_st.sum"],
            m["sm__inst_executed_pipe_tensor_op_gmma.sum"]) == (4, 1, 16)


@pytest.mark.slow
@pytest.mark.skipif(not DATA, reason="GPU outputs not recorded yet (validate/semantics/tma_record.py)")
@pytest.mark.parametrize("size", C.GEMM_RECORDED)
def test_gemm_equals_the_gpu_bit_for_bit(size):
    c, _ = run(size)
    for path in DATA:
        rec = np.load(path)
        assert rec[f"gemm:{size}:A"].tobytes() == c.args[0].array.tobytes(), path.name
        assert c.args[2].array.view(np.uint32).tobytes() == rec[f"gemm:{size}:C"].tobytes(), path.name


@pytest.mark.slow
def test_gpusim_run_times_the_gemm():
    p = subprocess.run([sys.executable, "-m", "gpusim.cli", "run", str(ROOT / "programs" / "hopper_kernels" /
                        "tma_wgmma_gemm.py"), "--size", "tiny", "--gpu", "h100"], capture_output=True, text=True,
                       cwd=ROOT, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "predicted time" in p.stdout
