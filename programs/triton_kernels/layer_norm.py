"""Triton layer norm forward (Triton's tutorial 05): one program per row, the row reduced in
BLOCK_SIZE chunks for mean and variance, then normalised, scaled and shifted; mean and
1/std stored per row.

Reference: float64 numpy rounded to float32. Not bit-exact: the chunked tree sums and
`1 / tl.sqrt(var + eps)` (sqrt.approx / div.full order) differ from numpy's by a few ulp:
rtol 1e-5, atol 1e-6."""
import numpy as np
import triton
import triton.language as tl

from programs.base import Case, ProgramSpec


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=mask)


def build(rng, rows, cols, block_size=256, eps=1e-5):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    y = np.full((rows, cols), np.nan, np.float32)
    mean = np.full(rows, np.nan, np.float32)
    rstd = np.full(rows, np.nan, np.float32)
    x64 = x.astype(np.float64)
    m = x64.mean(axis=1)
    r = 1 / np.sqrt(((x64 - m[:, None]) ** 2).mean(axis=1) + np.float32(eps))
    want_y = ((x64 - m[:, None]) * r[:, None] * w + b).astype(np.float32)
    return Case("triton_layer_norm", layer_norm_fwd, (rows,), None, (x, y, w, b, mean, rstd, cols, cols, eps),
                {1: want_y, 4: m.astype(np.float32), 5: r.astype(np.float32)}, rtol=1e-5, atol=1e-6,
                options={"constexprs": {"BLOCK_SIZE": block_size}, "num_warps": 4})


PROGRAM = ProgramSpec("triton_layer_norm", "layer norm forward in Triton (mean, rstd, y)", build,
                      sizes={"default": {"rows": 32, "cols": 1000}, "large": {"rows": 4096, "cols": 4096}},
                      tags=("triton", "reduction"))
