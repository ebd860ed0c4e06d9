"""The step budget: when the functional core gives up on a kernel that does not finish.

A step runs one basic block for a group of warps (`executor.py`). A kernel whose warps
follow one path takes about as many steps per batch of blocks as the blocks of its longest
path: every program of `programs/` at its largest size takes at most 1,797 steps per batch
(matmul_tiled at 4096^3; matmul_naive 1,031, its k loop unrolled 4x by LLVM; all others
under 200). A step costs 30-300 us of wall time (one warp, a cheap block to a block of
atomics), so a spinning kernel must be stopped after some 10^4 steps to end in seconds, not minutes.

The default budget per batch is therefore

    STEPS_BASE + STEPS_PER_ITERATION * trip_bound

where `trip_bound` bounds the iterations a legitimate loop of one thread can make, read
from the launch: the elements of the largest array argument per thread of the launch (a
grid-stride loop), the longest axis of any 2-D or higher array (a loop along a row or a
column, as in a matmul), and the largest integer argument (a loop count passed in),
capped at 2^24. For the programs and a spinning thread with small arrays that is 10,008 steps
(0.3 s for one spinning thread, 3 s for a spin lock of 32 lanes doing atomics); a thread
that really loops a million times over a million-element array gets 8 million steps.
`launch(..., max_steps=N)` and `gpusim run --max-steps N` set it explicitly.

A batch also stops after `WARP_STEPS_PER_STEP` (128) times as many warp-steps (the warps
of each step, summed): many warps spinning in lock-step cost time and, in timing mode,
memory per warp and step (each warp's path is recorded). 64 blocks of 256 threads spinning
(512 warps a step) stop after 2,502 steps instead of 10,008; the heaviest program batch,
matmul_tiled at 4096^3 (1,797 steps of at most 1,024 warps: at most 1.84 M warp-steps),
stays under its 5.5 M.

`budget_error` is the error: the kernel, the source lines the unfinished warps were at,
how many warps and threads each, and the first block and thread of each.
"""
from __future__ import annotations

import math

import numpy as np

from gpusim.errors import StepBudgetExceeded
from gpusim.functional.executor import WARP_STEPS_PER_STEP

STEPS_BASE = 10_000              # steps any batch may take (the programs take <= 1,797)
STEPS_PER_ITERATION = 8          # steps allowed per loop iteration of the bound (a loop body of up to 8 blocks)
SCALAR_CAP = 1 << 24             # integer arguments count as loop bounds up to this


def trip_bound(args, threads: int) -> int:
    """How many iterations a loop of one thread may legitimately make, from the arguments."""
    bound = 1
    for a in args:
        shape = getattr(a, "shape", None)
        if shape is not None and not isinstance(a, (str, bytes)):
            try:
                dims = [int(d) for d in shape]
            except (TypeError, ValueError):
                continue
            size = math.prod(dims)
            bound = max(bound, -(-size // max(threads, 1)))
            if len(dims) >= 2:
                bound = max(bound, max(dims))
        elif isinstance(a, (int, np.integer)) and not isinstance(a, bool):
            bound = max(bound, min(abs(int(a)), SCALAR_CAP))
    return bound


def default_step_budget(args, threads: int) -> int:
    """The step budget of each batch of a launch of `threads` threads with `args` (module doc)."""
    return STEPS_BASE + STEPS_PER_ITERATION * trip_bound(args, threads)


def budget_error(ex, block: int) -> StepBudgetExceeded:
    """The error for executor `ex` past its budget while running basic block `block`:
    where the unfinished warps were (source lines, warps and threads, first block/thread)."""
    stacks = ex.stacks
    live = np.flatnonzero(stacks.depth > 0)
    tops = stacks.top_pc()[live] if len(live) else np.zeros(0, np.int64)
    ok = (tops >= 0) & (tops < len(ex.dk.blocks))
    live, tops = live[ok], tops[ok]
    masks = stacks.top_mask(live) if len(live) else np.zeros(0, np.uint32)
    places: dict[str, list] = {}                 # source line -> [warps, threads, first lane]
    for w, pc, m in zip(live.tolist(), tops.tolist(), masks.tolist()):
        blk = ex.dk.blocks[pc]
        where = ex.source(blk.first) if blk.last > blk.first else f"PTX block {pc}"
        lane = w * 32 + ((m & -m).bit_length() - 1 if m else 0)
        entry = places.setdefault(where, [0, 0, lane])
        entry[0] += 1
        entry[1] += bin(m).count("1")
    blk = ex.dk.blocks[block]
    first = ex.source(blk.first) if blk.last > blk.first else None
    order = sorted(places.items(), key=lambda kv: (kv[0] != first, -kv[1][1]))
    parts = []
    for where, (warps, threads, lane) in order[:4]:
        b, t = ex._where(lane)
        parts.append(f"{where}: {warps} warp{'s' if warps != 1 else ''} ({threads} thread{'s' if threads != 1 else ''}), "
                     f"first block {b} thread {t}")
    if len(order) > 4:
        parts.append(f"and {len(order) - 4} more lines")
    blocks = (ex.geo.block_coords(ex.first_block), ex.geo.block_coords(ex.first_block + ex.nctas - 1))
    span = f"block {blocks[0]}" if ex.nctas == 1 else f"blocks {blocks[0]}..{blocks[1]}"
    b0, t0 = ex._where(order[0][1][2]) if order else (None, None)
    detail = (f"{ex.steps} steps ({ex.warp_steps} warp-steps) in one batch ({span}; budget {ex.step_budget} "
              f"steps or {WARP_STEPS_PER_STEP * ex.step_budget} warp-steps); unfinished warps were at "
              + "; ".join(parts) + ". A loop that never ends, or a spin-wait on another thread of the same warp "
              "(which stack-based reconvergence cannot schedule); if the kernel is only long, raise the budget: "
              "launch(..., max_steps=N) or gpusim run --max-steps N")
    return StepBudgetExceeded("kernel did not finish", kernel=ex.kernel_name, source=order[0][0] if order else first,
                              block=b0, thread=t0, detail=detail)
