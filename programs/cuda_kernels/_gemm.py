"""Shared parts of the GEMM programs of this package: inputs, the numpy reference, the checks
of the sizes against a kernel's tile."""
from __future__ import annotations

import numpy as np

from isa.semantics import mma_numerics as M

# tensor-core results vs numpy's float64 product rounded to f32: the tensor cores truncate each
# 16-product block's sum to f32 (docs/tensor_numerics.md), a relative error of a few 2^-23 per block
RTOL, ATOL = 1e-4, 1e-4


def atol(k: int) -> float:
    """The absolute tolerance for a K-deep product: the truncation error of each 16-product
    block adds up over k/16 blocks while the sum grows as sqrt(k) (inputs of unit scale), so
    the bound grows with k: 1.6e-3 at 4096, 3.2e-3 at 8192, against results of about
    sqrt(k)/3 (the H100's first differences beyond 1e-4 were 1.2e-4 at 4096 and 2.4e-4 at 8192);
    a wrong tile still differs by O(1)."""
    return ATOL * max(1.0, k / 256)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even (finite inputs)."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns -> float32 values (exact)."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def inputs(rng, m: int, n: int, k: int, dtype: str = "f16"):
    """(A, B) as the kernel takes them (float16, or bfloat16 bit patterns as uint16), and their
    exact float32 values: uniform in [-1, 1), quantised to the input type."""
    a = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, (k, n)).astype(np.float32)
    if dtype == "f16":
        A, B = a.astype(np.float16), b.astype(np.float16)
        return A, B, A.astype(np.float32), B.astype(np.float32)
    if dtype == "bf16":
        A, B = bf16_bits(a), bf16_bits(b)
        return A, B, bf16_values(A), bf16_values(B)
    if dtype == "f32":
        return a, b, a, b
    raise ValueError(f"input type {dtype!r}: f16, bf16 or f32")


def reference(a32: np.ndarray, b32: np.ndarray) -> np.ndarray:
    """The exact product (float64 accumulation of exact products) rounded to float32."""
    return (a32.astype(np.float64) @ b32.astype(np.float64)).astype(np.float32)


def check_tile(program: str, m: int, n: int, k: int, bm: int, bn: int, bk: int) -> None:
    """A ValueError naming the program if the sizes are not whole tiles (the kernels have no edge code)."""
    for name, v, t in (("m", m, bm), ("n", n, bn), ("k", k, bk)):
        if v <= 0 or v % t:
            raise ValueError(f"{program}: {name}={v} must be a positive multiple of {t} (the kernel's tile)")


def tensor_reference(A: np.ndarray, B: np.ndarray, dtype: str = "f16") -> np.ndarray:
    """C = A B as the tensor-core kernels compute it, bit for bit, by gpusim's own model of the
    instruction they issue (`isa.semantics.mma_numerics`, HMMA.16816 with f32 accumulation): a chain
    over K in blocks of 16 from C = +0, each block one block-FMA. Slow (pure Python per element)."""
    a = np.asarray(A).view(np.uint16).astype(np.uint64)
    b = np.asarray(B).view(np.uint16).astype(np.uint64)
    model = M.hopper_model("mma", dtype, "f32", 16)
    c = np.zeros((a.shape[0], b.shape[1]), np.uint64)
    for k0 in range(0, a.shape[1], 16):
        c = M.mma(a[:, k0:k0 + 16], b[k0:k0 + 16], c, dtype, dtype, "f32", model)
    return c.astype(np.uint32).view(np.float32)
