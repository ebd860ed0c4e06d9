"""Triton fused softmax (Triton's tutorial 02): one program per row, the row in registers.

Reference: float32 numpy with the same order of operations (max, subtract, exp, sum, divide).
Not bit-exact: Triton's `tl.exp` lowers to ex2.approx.f32 of x*log2(e) (about 2 ulp), and
the row sum is a tree reduction whose order numpy does not reproduce: rtol 1e-5."""
import numpy as np
import triton
import triton.language as tl

from programs.base import Case, ProgramSpec


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, out, mask=mask)


def build(rng, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    z = x - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    block = triton.next_power_of_2(cols)
    return Case("triton_softmax", softmax_kernel, (rows,), None, (out, x, cols, cols, cols), {0: want},
                rtol=1e-5, atol=1e-7,
                options={"constexprs": {"BLOCK_SIZE": block}, "num_warps": 4 if block <= 2048 else 8})


PROGRAM = ProgramSpec("triton_softmax", "row softmax in Triton, one program per row", build,
                      sizes={"default": {"rows": 64, "cols": 781}, "large": {"rows": 4096, "cols": 1024}},
                      tags=("triton", "reduction"))
