"""The TMA unit's fill of shared memory (`tensor.tma_fill_bytes_per_cycle`, gpusim/timing/tma.py):
one thread's bulk copies from the L2, each waited for on its mbarrier, take longer with their
size at the rate measured on an H200 (validate/tensor_timing/tma_latency.cu, the same kernel;
data/measurements/tma_latency_h200.json)."""
import json
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim import specs
from gpusim.specs.overrides import apply
from validate.datadir import DATA_DIR

CU = Path(__file__).resolve().parents[2] / "validate" / "tensor_timing" / "tma_latency.cu"
H200 = specs.get("h200")
REPS = 32
MEASURED = {r["bytes"]: r["median"] for r in json.loads((DATA_DIR / "tma_latency_h200.json").read_text())["runs"]
            if r["kind"] == "bulk" and r["where"] == "l2"}


@pytest.fixture(scope="module")
def kernel():
    return gpusim.CudaSource(CU, "bulk_latency")


def _cycles_per_copy(kernel, nbytes, gpu=H200):
    src = np.ones(1 << 16, np.uint8)
    out = np.zeros(REPS, np.uint64)
    m = gpusim.launch(kernel, 1, 32, (src, np.uint32(nbytes), np.uint64(0), np.int32(REPS), out), gpu=gpu,
                      timing=True, outputs=False).metrics
    return m["sm__cycles_elapsed.max"] / REPS


def test_a_16k_copy_takes_the_measured_cycles_more_than_a_1k_one(kernel):
    extra = _cycles_per_copy(kernel, 16384) - _cycles_per_copy(kernel, 1024)
    assert extra == pytest.approx(MEASURED[16384] - MEASURED[1024], rel=0.15)


def test_a_faster_fill_shortens_a_16k_copy(kernel):
    fast = apply(H200, {"tensor.tma_fill_bytes_per_cycle": 4 * H200.tensor.tma_fill_bytes_per_cycle})
    assert _cycles_per_copy(kernel, 16384, fast) < _cycles_per_copy(kernel, 16384) - 100
