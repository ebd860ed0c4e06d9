"""PTX predefined identifiers that are constants (gpusim/functional/decode.py)."""
import numpy as np

from gpusim import cuda


@cuda.jit
def warp_size(out):
    out[0] = cuda.warpsize          # `mov.u32 %r, WARP_SZ`


def test_warp_sz_is_32():
    out = np.zeros(1, np.int32)
    warp_size[1, 1](out)
    assert out[0] == 32
