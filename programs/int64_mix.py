"""int64_mix: a mix of 64-bit integer operations per element.

For a in [-2^31, 2^31) and b in [1, 2^20] (both int64):
    p = a * b                       # up to 2^51 in magnitude: needs 64 bits
    q = p // divisor                # floor division (Python semantics in Numba)
    r = p % modulus                 # non-negative remainder for negative p
    s = (p >> 17) ^ (a << 7)        # arithmetic shift right, shift left, xor
    out = q + r - s
divisor and modulus are kernel arguments (int64 scalars). What it teaches: 64-bit
integer arithmetic is not native on the GPU. PTX has mul.lo.s64, div.s64 and
rem.s64, but the SASS behind them is a chain of 32-bit IMADs for the multiply and
a subroutine of dozens of instructions for each division/modulo by a runtime
value (NVVM adds a div.u32 fast path taken when both operands fit in 32 bits; by
a compile-time constant it would use a mul.hi "magic number" instead); Numba's Python floor semantics add a sign fix-up around PTX's
truncating div/rem, and 64-bit shifts become pairs of 32-bit funnel shifts.
Compare its instruction count with vector_add's. Exact (no value overflows int64).

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
"""
import numpy as np
from numba import cuda

from programs.base import Case, ProgramSpec

BLOCK = 256


@cuda.jit
def int64_mix(a, b, divisor, modulus, out):
    i = cuda.grid(1)
    if i < out.size:
        p = a[i] * b[i]
        q = p // divisor                       # runtime divisor: div.s64
        r = p % modulus                        # runtime modulus: rem.s64
        s = (p >> 17) ^ (a[i] << 7)
        out[i] = q + r - s


def build(rng, n, divisor=1_000_003, modulus=65_537):
    if divisor <= 0 or modulus <= 0:
        raise ValueError(f"int64_mix: divisor and modulus must be positive, got {divisor}, {modulus}")
    a = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int64)
    b = rng.integers(1, (1 << 20) + 1, n, dtype=np.int64)
    out = np.full(n, np.iinfo(np.int64).min, np.int64)      # sentinel: |out| < 2^53
    p = a * b
    want = p // divisor + p % modulus - ((p >> 17) ^ (a << 7))
    return Case("int64_mix", int64_mix, ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                (a, b, divisor, modulus, out), {4: want})


PROGRAM = ProgramSpec(
    "int64_mix", "64-bit integer multiply, floor div/mod, shifts and xor per element", build,
    sizes={"default": {"n": 16_384}, "medium": {"n": 65_536}, "large": {"n": 1 << 24}},
    tags=("int64", "integer", "elementwise"))
