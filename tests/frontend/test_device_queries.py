"""numba-cuda's own device queries answer the simulated device where no CUDA driver is
present (gpusim/cuda/_hostcompile.py): what numba-cuda's tests ask before they run."""
from __future__ import annotations

import pytest

from gpusim import cuda


@pytest.mark.parametrize("gpu, fp8", [("h100", True), ("a100", False)])
def test_is_fp8_supported_follows_the_presets_compute_capability(gpu, fp8):
    from numba.cuda.api import is_fp8_supported
    from gpusim.cuda._hostcompile import install_when_no_driver
    if not install_when_no_driver():
        pytest.skip("a CUDA driver answers Numba's device queries on this machine")
    before = cuda.get_gpu()
    cuda.set_gpu(gpu)
    try:
        assert is_fp8_supported() is fp8          # sm_90 >= 8.9; sm_80 < 8.9
    finally:
        cuda.set_gpu(before)
