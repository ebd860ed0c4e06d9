"""Triton vector add (Triton's tutorial 01): out = x + y, BLOCK_SIZE elements per program.

Exact: float32 addition of values whose exponents differ by < 29 rounds once, as float64
then float32 does."""
import numpy as np
import triton
import triton.language as tl

from programs.base import Case, ProgramSpec


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def build(rng, n, block_size=1024):
    x = (rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    y = (rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    want = (x.astype(np.float64) + y).astype(np.float32)
    return Case("triton_vector_add", add_kernel, lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),), None,
                (x, y, out, n), {2: want},
                options={"constexprs": {"BLOCK_SIZE": block_size}, "num_warps": 4, "num_stages": 3})


PROGRAM = ProgramSpec("triton_vector_add", "out = x + y in Triton (masked tail)", build,
                      sizes={"default": {"n": 98_432}, "large": {"n": 1 << 24}}, tags=("triton", "elementwise"))
