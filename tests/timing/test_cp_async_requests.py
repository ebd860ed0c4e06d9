"""Padded shared rows make a cp.async GEMM's copies ask the L2 for more (gpusim/timing/memory/
copy_requests.py): `mma_gemm`'s tile copies alone (validate/tensor_timing/gemm_parts.py, PARTS 1)
into rows 16 B off a 32-B boundary every other row take 1.78 (H100) and 1.80 (H200) times as long
as into unpadded rows at 2048^3, where the operands stay in the L2
(data/measurements/gemm_parts_h100.json, gemm_parts_h200.json); their requests are 2.8 times,
their sectors 1.8 times (joins included)."""
import numpy as np
import pytest

import gpusim
from validate.tensor_timing import gemm_parts as G

N = 2048


def _copies_us(pad: int) -> float:
    args = (np.zeros((N, N), np.float16), np.zeros((N, N), np.float16), np.zeros((N, N), np.float32),
            np.int32(N), np.int32(N), np.int32(N))
    r = gpusim.launch(gpusim.CudaSource(G.source(), G.gemm_name(2, 1, pad), options=("-std=c++17",)),
                      (N // G.TILE, N // G.TILE), (128,), args, gpu="h100", timing=True, outputs=False)
    return r.metrics["gpu__time_duration.sum"] / 1e3


@pytest.mark.slow
def test_copies_into_padded_rows_take_the_l2_requests_of_their_second_reads():
    ratio = _copies_us(8) / _copies_us(0)
    assert 1.6 < ratio < 2.0                          # the GPUs: 1.78, 1.80; one request a line for them all: 1.39
