"""validate/tensor_timing/gemm_parts.py: the probe's kernel with every part kept is the program's
GEMM (its output bit for bit), and the committed measurements hold every case with its counters."""
import json
from pathlib import Path

import numpy as np
import pytest

import gpusim
from programs.cuda_kernels import mma_gemm
from validate.tensor_timing import gemm_parts as G

ROOT = Path(__file__).resolve().parents[2]


def test_the_probe_with_every_part_is_the_programs_gemm_bit_for_bit():
    n = 128
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype(np.float16), rng.standard_normal((n, n)).astype(np.float16)
    got, want = np.zeros((n, n), np.float32), np.zeros((n, n), np.float32)
    grid, size = (n // G.TILE, n // G.TILE), (np.int32(n),) * 3
    gpusim.launch(gpusim.CudaSource(G.source(), G.gemm_name(2, 7), options=("-std=c++17",)), grid, (128,),
                  (a, b, got) + size, gpu="h100")
    gpusim.launch(gpusim.CudaSource(mma_gemm.CU, mma_gemm.kernel_name(G.TILE, 2, G.PAD)), grid, (128,),
                  (a, b, want) + size, gpu="h100")
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_committed_measurements_hold_every_case_with_its_l2_requests(gpu):
    doc = json.loads((ROOT / "data" / "measurements" / f"gemm_parts_{gpu}.json").read_text())
    assert [r["case"] for r in doc["rows"]] == [c[0] for c in G.cases()]
    copies = [r for r in doc["rows"] if "/p1" in r["case"]]
    assert all(r["metrics"]["lts__t_requests_srcunit_tex_op_read.sum"] > 0 for r in copies)
