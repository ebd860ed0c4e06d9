"""Sampled simulation: within how much of the grid the blocks that share a region's lines come
(issue 29). The sampled blocks from across the grid show it: a grouped tile order (Triton's
GROUP_M swizzle) reuses a strip of A only within its group of block rows, while a strip walked
once per block row comes back across the whole grid. `warming.shared_footprint` runs Che's
approximation and the in-order walk within that span (DEVIATIONS.md, "sampled mode: sharing span").

The two constants are the model's heuristics, not hardware numbers: how many sampled blocks are
compared pairwise, and how much evidence of absent sharing beyond the farthest sharing pair
makes the span shorter than the grid.
"""
from __future__ import annotations

import numpy as np

SPAN_BLOCKS = 64           # sampled blocks compared pairwise for the span of a region's sharing
SPAN_EVIDENCE = 3.0        # pairs of rounds beyond the farthest sharing pair that would have shared, spread (e^-3: 5%)


def span_sample(n: int) -> list[int]:
    """Which of `n` sampled blocks (in grid order) `sharing_spans` compares: at most `SPAN_BLOCKS`,
    spread over the list (a caller reads the lines of those only)."""
    if n <= SPAN_BLOCKS:
        return list(range(n))
    return np.linspace(0, n - 1, SPAN_BLOCKS).round().astype(int).tolist()


def sharing_spans(starts, ends, block_lines, grid_blocks: int, resolution_blocks: int) -> np.ndarray:
    """Per region, the share of the grid within which the blocks that touch one of its lines
    come, read from sampled blocks from across the grid (`block_lines`: (block, its distinct
    lines), at most `SPAN_BLOCKS` of them taken, spread over the list). A grid walked in a
    grouped tile order (Triton's GROUP_M swizzle: GROUP_M block rows at a time, every block
    column in turn) reuses a strip of A only within its group, 1/8 of an 8192^3 GEMM's grid;
    one spread evenly (matmul_tiled's B, once per block row) comes back across the whole grid.
    Pairs of sampled blocks more than `resolution_blocks` apart (one round of the SMs) that
    share a line of the region give its farthest sharing distance `far`; the span is
    (far + resolution_blocks) / grid_blocks where the pairs of rounds farther apart than the
    farthest sharing pair of rounds are so many that, at the rate the nearer pairs of rounds
    share, at least `SPAN_EVIDENCE` of them would have shared had the sharing been spread
    over the grid (rounds, not blocks: a round's consecutive blocks share together); else
    (no such pair, or too few beyond) the sample cannot tell and the span is the whole grid."""
    n = len(starts)
    span = np.ones(n)
    if grid_blocks <= 0 or len(block_lines) < 2:
        return span
    block_lines = [block_lines[i] for i in span_sample(len(block_lines))]
    pos = np.array([b for b, _ in block_lines], dtype=np.int64)
    lines = np.concatenate([ls for _, ls in block_lines])
    bits = np.concatenate([np.full(ls.size, 1 << i, np.uint64) for i, (_, ls) in enumerate(block_lines)])
    if lines.size == 0:
        return span
    order = np.argsort(lines, kind="stable")
    lines, bits = lines[order], bits[order]
    idx = np.flatnonzero(np.r_[True, lines[1:] != lines[:-1]])
    masks = np.bitwise_or.reduceat(bits, idx)                  # per distinct line: its sampled blocks
    region = np.searchsorted(starts, lines[idx], side="right") - 1
    ok = (region >= 0) & (lines[idx] < ends[np.maximum(region, 0)])
    dist = np.abs(pos[:, None] - pos[None, :])
    cross = np.triu(dist > resolution_blocks, 1)
    nb = len(block_lines)
    rounds, ri = np.unique(pos // max(resolution_blocks, 1), return_inverse=True)
    round_dist = np.abs(rounds[:, None] - rounds[None, :])
    for r in np.unique(region[ok]).tolist():
        shared = np.zeros((nb, nb), dtype=bool)
        for mask in np.unique(masks[ok & (region == r)]).tolist():
            members = [i for i in range(nb) if mask >> i & 1]
            if len(members) > 1:
                shared[np.ix_(members, members)] = True
        sharing = shared & cross
        if not sharing.any():
            continue
        far = int(dist[sharing].max())
        # the evidence counts pairs of rounds: a round's blocks share together (a group's tiles)
        rs = np.zeros((len(rounds), len(rounds)), dtype=bool)
        i, j = np.nonzero(sharing)
        rs[ri[i], ri[j]] = rs[ri[j], ri[i]] = True
        far_rounds = int(round_dist[rs].max())
        near = int(np.triu((round_dist > 0) & (round_dist <= far_rounds), 1).sum())
        beyond = int(np.triu(round_dist > far_rounds, 1).sum())
        if beyond * int(np.triu(rs, 1).sum()) / max(near, 1) >= SPAN_EVIDENCE:
            span[r] = min(1.0, (far + resolution_blocks) / grid_blocks)
    return span
