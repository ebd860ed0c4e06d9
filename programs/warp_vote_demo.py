"""warp_vote_demo: warp vote intrinsics and the stream-compaction rank idiom.

Every thread computes pred = x[i] > threshold and records, in out[i, :]:
  0: cuda.activemask()                 the lanes of its warp that exist
  1: cuda.ballot_sync(mask, pred)      bit l set when lane l's pred holds
  2: cuda.any_sync(mask, pred)         1 if any lane's pred holds
  3: cuda.all_sync(mask, pred)         1 if every lane's pred holds
  4: rank = popc(ballot & lanemask_lt) if pred else 32: the slot this lane would
     take in a warp-aggregated stream compaction (one atomic per warp, not per lane)
What it teaches: warp-wide communication in a single instruction (vote.sync),
and partial warps: with the default block of 80 threads the third warp of every
block has only 16 lanes, so its activemask is 0x0000ffff and its ballots never set
bits 16..31. The warps' data is drawn all-above, all-below or mixed, so any/all
take both values.

activemask is read at kernel entry, where every warp is converged (no thread has
taken a branch yet), so it is exactly the set of existing lanes; inside divergent
code it would be implementation-defined. Outputs are exact uint32 (Numba types
the ballot as int32; storing it into a uint32 array keeps its 32 bits).

Launch: 1-D, `block` threads per block (default 80: a partial last warp),
`blocks` blocks; one element per thread, no bounds check (n = blocks * block).
"""
import numpy as np
from numba import cuda

from programs.base import Case, ProgramSpec


@cuda.jit
def warp_vote_demo(x, threshold, out):
    mask = cuda.activemask()                   # converged: the warp's existing lanes
    i = cuda.grid(1)
    pred = x[i] > threshold
    ballot = cuda.ballot_sync(mask, pred)
    out[i, 0] = mask
    out[i, 1] = ballot
    out[i, 2] = cuda.any_sync(mask, pred)
    out[i, 3] = cuda.all_sync(mask, pred)
    lane = cuda.laneid
    below = ballot & ((1 << lane) - 1)         # votes of the lower lanes
    out[i, 4] = cuda.popc(below) if pred else 32


def reference(x, threshold, blocks, block):
    warps = -(-block // 32)
    lanes = np.arange(warps * 32)
    exists = np.broadcast_to(lanes < block, (blocks, warps * 32))
    pred = np.zeros((blocks, warps * 32), bool)
    pred[:, :block] = (x > threshold).reshape(blocks, block)
    pred, exists = pred.reshape(blocks, warps, 32), exists.reshape(blocks, warps, 32)
    bit = np.int64(1) << np.arange(32, dtype=np.int64)
    mask = (exists * bit).sum(axis=2, keepdims=True)
    ballot = (pred * bit).sum(axis=2, keepdims=True)
    anyp = pred.any(axis=2, keepdims=True)
    allp = (pred | ~exists).all(axis=2, keepdims=True)
    rank = np.where(pred, np.cumsum(pred, axis=2) - pred, 32)      # votes of lower lanes
    cols = np.broadcast_arrays(mask, ballot, anyp, allp, rank)
    out = np.stack([c.astype(np.uint32) for c in cols], axis=-1).reshape(blocks, warps * 32, 5)
    return out[:, :block].reshape(blocks * block, 5)


def build(rng, blocks, block=80, threshold=50):
    n = blocks * block
    warps = -(-block // 32)
    # Per warp: 0 = every value above threshold, 1 = every value at or below, 2 = mixed.
    mode = rng.integers(0, 3, (blocks, warps))
    lane_mode = np.repeat(mode, 32, axis=1)[:, :block].reshape(-1)
    high = rng.integers(threshold + 1, 2 * threshold + 1, n)
    low = rng.integers(1, threshold + 1, n)
    mixed = rng.integers(1, 2 * threshold + 1, n)
    x = np.where(lane_mode == 0, high, np.where(lane_mode == 1, low, mixed)).astype(np.int32)
    out = np.full((n, 5), 0xDEADBEEF, np.uint32)   # never a valid activemask (not 2^k - 1)
    want = reference(x, threshold, blocks, block)
    return Case("warp_vote_demo", warp_vote_demo, (blocks,), (block,),
                (x, threshold, out), {2: want})


PROGRAM = ProgramSpec(
    "warp_vote_demo", "activemask, ballot_sync, any_sync, all_sync and popc rank in a partial warp",
    build, sizes={"default": {"blocks": 128, "block": 80},
                  "medium": {"blocks": 512, "block": 80},
                  "large": {"blocks": 65_536, "block": 80}},
    tags=("warp-vote", "partial-warp"))
