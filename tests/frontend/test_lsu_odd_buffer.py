"""The global heap's size need not be a multiple of an access's width: a kernel whose
last argument is a 1-byte array still reads and writes 8-byte values (issue 12: numpy's
ValueError from viewing the heap as float64)."""
from __future__ import annotations

import numpy as np

from gpusim import cuda
from gpusim.functional.lsu import typed_view


@cuda.jit
def scale_if(out, x, flag):
    i = cuda.grid(1)
    if i < out.size and flag[0]:
        out[i] = x[i] * 3.0


def test_float64_access_with_a_one_byte_last_allocation():
    x = np.arange(5, dtype=np.float64)
    out = np.zeros(5, np.float64)
    scale_if[1, 32](out, x, np.array([True]))
    assert out[4] == 12.0


def test_typed_view_keeps_whole_elements():
    buf = np.arange(19, dtype=np.uint8)
    v = typed_view(buf, np.dtype(np.uint64))
    assert v.size == 2 and int(v[1]) == int.from_bytes(bytes(range(8, 16)), "little")
