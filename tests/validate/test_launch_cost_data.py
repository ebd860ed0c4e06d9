"""Small launches against the H100's (data/measurements/launch_cost_h100.json,
`python -m validate.tensor_timing.launch_cost`): one store a thread in 16 blocks takes what the
GPU takes, and shared memory a block costs the launch more, as on the GPU. No GPU needed."""
import json

import numpy as np
import pytest

import gpusim
from validate.datadir import DATA_DIR
from validate.tensor_timing.launch_cost import SOURCE

MEASURED = {r["case"]: r["duration_ns_median"] for r in json.loads((DATA_DIR / "launch_cost_h100.json").read_text())["cases"]}


def _predicted_ns(name, blocks, shared_bytes=0):
    out = np.zeros(blocks * 256, np.float32)
    r = gpusim.launch(gpusim.CudaSource(SOURCE, name), blocks, 256, (out,), gpu="h100", timing=True, outputs=False,
                      shared_bytes=shared_bytes)
    return r.metrics["gpu__time_duration.sum"]


def test_sixteen_blocks_of_one_store_a_thread_take_the_measured_time():
    assert _predicted_ns("tiny", 16) == pytest.approx(MEASURED["tiny_16"], rel=0.05)


def test_shared_memory_a_block_lengthens_a_small_launch():
    assert MEASURED["static48_16"] > MEASURED["tiny_16"] + 200
    assert _predicted_ns("static48", 16) > _predicted_ns("tiny", 16) + 100
