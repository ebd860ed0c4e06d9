"""bank_conflict_demo: shared-memory reads at a chosen word stride.

Each block copies 1024 float32 of `data` into shared memory (conflict-free: lane l
writes word k + l), then thread tid sums `reps` reads of
shared[(tid * stride + r) % 1024], r = 0 .. reps-1, and writes the sum to
out[blockIdx.x * blockDim.x + tid]. What it teaches: shared memory has 32 banks of
4 bytes, word w lives in bank w % 32. The 32 lanes of a warp read words
tid*stride + r, so for 1 <= stride <= 32 the read is gcd(stride, 32)-way
conflicted: any odd stride is conflict-free, 2 is 2-way, 4 is 4-way, ..., 32 is
32-way (all lanes in one bank, 32 different words, replayed 32 times). Lanes that
read the same word are a broadcast and do not conflict (stride 0, or strides past
32 where `% 1024` wraps lanes onto the same word). Change `stride` to see it:
`PROGRAM.case({"stride": 1})`.

The kernel wraps the index with `& 1023` rather than `% 1024` (equal for a power
of two, also for negative strides): Numba's Python-semantics `%` costs several
integer instructions per read, enough to hide the smaller conflicts behind
instruction issue. Measured on an H200 (Numba 0.68, CUDA events, 'large' size):
stride 0-4: 0.72 ms (issue-bound), 8: 1.06 ms, 16: 2.09 ms, 32: 4.15 ms, 64: 2.09 ms
(16-way: the % 1024 wrap puts lane pairs on one word). With `%`: 1.54 ms up to 8.

Values are integers stored as float32 (|v| <= 1000, reps <= 64), so the sums are
exact.

Launch: 1-D, 256 threads per block, `blocks` blocks; data has 1024 * blocks floats.
Shared: 1024 float32 = 4 KiB per block.
"""
import numpy as np
from numba import cuda, float32

from programs.base import Case, ProgramSpec

BLOCK = 256
WORDS = 1024


@cuda.jit
def bank_conflict_demo(data, out, stride, reps):
    sh = cuda.shared.array(WORDS, float32)
    tid = cuda.threadIdx.x
    base = cuda.blockIdx.x * WORDS
    for k in range(tid, WORDS, cuda.blockDim.x):
        sh[k] = data[base + k]                 # consecutive words: conflict-free
    cuda.syncthreads()
    acc = float32(0)
    for r in range(reps):
        acc += sh[(tid * stride + r) & (WORDS - 1)]   # gcd(stride, 32)-way bank conflict
    out[cuda.blockIdx.x * cuda.blockDim.x + tid] = acc


def build(rng, blocks, stride, reps):
    if not 1 <= reps <= 64:
        raise ValueError(f"bank_conflict_demo: reps must be in 1..64 (exact float32 sums), got {reps}")
    data = rng.integers(-1000, 1001, blocks * WORDS).astype(np.float32)
    out = np.full(blocks * BLOCK, np.nan, np.float32)
    # sum_{r < reps} sh[(a + r) % 1024] as a difference of prefix sums over the block's
    # words extended circularly by `reps` (exact: integers in float64).
    sh = data.reshape(blocks, WORDS).astype(np.float64)
    prefix = np.zeros((blocks, WORDS + reps + 1))
    np.cumsum(np.concatenate([sh, sh[:, :reps]], axis=1), axis=1, out=prefix[:, 1:])
    a = (np.arange(BLOCK) * stride) % WORDS
    want = (prefix[:, a + reps] - prefix[:, a]).reshape(-1).astype(np.float32)
    return Case("bank_conflict_demo", bank_conflict_demo, (blocks,), (BLOCK,),
                (data, out, stride, reps), {1: want})


PROGRAM = ProgramSpec(
    "bank_conflict_demo", "shared-memory reads at word stride `stride` (gcd(stride,32)-way conflicts)",
    build, sizes={"default": {"blocks": 64, "stride": 32, "reps": 4},
                  "medium": {"blocks": 256, "stride": 32, "reps": 4},
                  "large": {"blocks": 65_536, "stride": 32, "reps": 64}},
    tags=("bank-conflicts", "shared-memory"))
