"""print() in a drop-in kernel: the device printf FIFO is printed to stdout after the launch,
in lane order, with C varargs layout (4-byte ints packed, 8-byte ints/doubles/strings aligned)."""
from __future__ import annotations

import numpy as np

from gpusim import cuda


@cuda.jit
def greet(a):
    i = cuda.grid(1)
    if i < 3:
        print("lane", i, a[i], cuda.threadIdx)


def test_print_in_lane_order_with_mixed_argument_sizes(capsys):
    greet[1, 32](np.array([0.5, 1.25, -2.0]))
    out = capsys.readouterr().out.splitlines()
    assert out == ["lane 0 0.500000 (0, 0, 0)", "lane 1 1.250000 (1, 0, 0)", "lane 2 -2.000000 (2, 0, 0)"]


def test_format_c_reads_packed_32_bit_arguments():
    from gpusim.frontend.printf import format_c
    payload = (7).to_bytes(4, "little") + (-3 & 0xFFFFFFFF).to_bytes(4, "little") + (2 ** 40).to_bytes(8, "little")
    assert format_c(None, "%u %d %lld\n", payload) == "7 -3 1099511627776\n"
