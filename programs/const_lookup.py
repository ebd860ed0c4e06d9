"""const_lookup: out[i] = 3 * TABLE[idx[i]] + x[i] with TABLE in constant memory.

TABLE is a fixed 256-entry int32 table baked into the kernel with
`cuda.const.array_like` (a module-level numpy array, copied into the constant bank
at compile time). What it teaches: the constant cache serves one address per
request; when all 32 lanes of a warp read the same entry it is broadcast in one
go, but a warp reading d distinct entries is serialised into d requests. The
`distinct` size parameter sets how many different entries each warp reads:
1 = broadcast (ideal), 32 = fully serialised (a plain global load, through L1,
would be better then). Measured on an H200 ('large' size, 2^24 elements): distinct
1, 2, 4: 64 us (memory bound), 8: 67 us, 16: 95 us, 32: 156 us. Exact int32.

Launch: 1-D, 256 threads per block, ceil(n / 256) blocks.
"""
import numpy as np
from numba import cuda

from programs.base import Case, ProgramSpec

BLOCK = 256
# A fixed, deterministic table (Knuth multiplicative hash of the index, mod a prime).
TABLE = ((np.arange(256, dtype=np.int64) * 2654435761) % 100_003).astype(np.int32)


@cuda.jit
def const_lookup(idx, x, out):
    table = cuda.const.array_like(TABLE)
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 3 * table[idx[i]] + x[i]     # serialised over distinct idx in the warp


def build(rng, n, distinct=4):
    if not 1 <= distinct <= 32:
        raise ValueError(f"const_lookup: distinct must be in 1..32, got {distinct}")
    warps = -(-n // 32)
    # Each warp reads `distinct` different entries base + j*step (mod 256, step odd, so
    # j = 0..distinct-1 give distinct entries); lane l reads entry j = l % distinct.
    base = rng.integers(0, 256, warps)[:, None]
    step = (2 * rng.integers(0, 128, warps) + 1)[:, None]
    j = (np.arange(32) % distinct)[None, :]
    idx = ((base + j * step) % 256).reshape(-1)[:n].astype(np.int32)
    x = rng.integers(-1000, 1001, n).astype(np.int32)
    out = np.full(n, np.iinfo(np.int32).min, np.int32)      # sentinel outside the value range
    want = (3 * TABLE[idx].astype(np.int64) + x).astype(np.int32)
    return Case("const_lookup", const_lookup, ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                (idx, x, out), {2: want})


PROGRAM = ProgramSpec(
    "const_lookup", "table lookup from constant memory, `distinct` addresses per warp",
    build, sizes={"default": {"n": 16_384, "distinct": 4},
                  "medium": {"n": 65_536, "distinct": 4},
                  "large": {"n": 1 << 24, "distinct": 4}},
    tags=("constant-memory", "broadcast"))
