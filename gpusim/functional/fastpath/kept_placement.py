"""An access's last placement, kept by the fast core's rows (`memory_run`, `async_run`): what a
load's, store's or cp.async copy's placing, checking and counting read, compared with what its last
run read (`unchanged`), so that one whose inputs are bit for bit the same takes that run's lane
offsets and counts and only moves its data: a loop's next stage, or a small kernel's next launch at
the same addresses. The rows keep, per op, a key (`K_*`: a header, then five words a lane) and what
the placement gave; spans of more than `KEPT_LANES` lanes keep nothing (a large launch's batches
do not come back, and the keys would be megabytes an op). An op keeps a placement per run of it in a
batch (`stage`: up to `KEPT_STAGES`), since a loop's stages read other addresses each, and come back
at them in the next launch of a small kernel (the matmul default's K loop: two stages a launch).

Measured inside one process, launches with and without alternating (`benchmarks/switched.py kept
--fresh`, session 49): the Triton matmul default 1.748 -> 1.622 ms a launch, its attention 1.810 -> 1.789 ms;
a placement per stage (`switched.py stages --fresh`, session 50): 0.971 and 0.954 of one an op.
"""
from __future__ import annotations

import numpy as np
from numba import njit

U64 = np.uint64
# the key: a header, then five words a lane (the copies of `async_run` use every one; a load or store
# its address, active and guard)
K_VALID, K_LO, K_N, K_FLAGS, K_DVAL, K_SVAL, K_HEAP_BASE, K_HBYTES, K_NALLOC, K_NU = range(10)
K_U = 10                # the unit's parameters (up to 16 words)
K_STARTS = 26           # the heap's allocations (up to 16): starts, then ends
K_ENDS = 42
K_LANES = 58            # per lane: destination (or address), source, src-size, active, guard
KEPT_LANES = 4096       # spans of more lanes keep no placement
KEPT_STAGES = 4         # placements an op keeps: one per run of it in a batch, the last for every later run
STAGED_LANES = 1024     # spans of more lanes keep one placement an op


def stage(x, op, n: int, make) -> tuple:
    """The kept placement (the arrays `make(n)` gives) that row op `op`'s next run in batch `x` (an
    executor: `row_runs` counts each op's runs) takes, over a span of `n` lanes: one per run of it in
    the batch up to `KEPT_STAGES`, the last taken by every later run (one for spans of more than
    `STAGED_LANES` lanes); all made afresh when the span's width changes."""
    runs = x.row_runs
    r = runs.get(op, 0)
    runs[op] = r + 1
    placed = op.placed
    if placed is None or placed[0] != n:
        placed = op.placed = (n, [])
    kept = placed[1]
    s = min(r, KEPT_STAGES - 1 if n <= STAGED_LANES else 0)
    while len(kept) <= s:
        kept.append(make(n))
    return kept[s]


@njit(cache=True, nogil=True, inline="always")
def unchanged(key, U, dbase, dval, duni, sbase, sval, suni, m, use_m, g, use_g, lim, use_lim, lo, n, starts,
              ends, heap_base, hbytes):
    """1 where an access's placement inputs are those `key` holds (its last run's); else 0, `key`
    then holding these, marked not placed (K_VALID 0: the caller marks it placed once it has kept
    what they gave), or -1 where `key` does not keep them (too small: `KEPT_LANES`; more than 16
    allocations), nothing written. The inputs: everything a row's placing, checking and counting
    reads (a load's or store's address register over the span, or its one value, as dbase /
    dval; a copy's destination there and its source as sbase / sval, its src-sizes `lim`), the
    span's lanes and masks, the unit's shared and local windows `U`, and the heap's allocations
    and size."""
    nal = len(starts)
    if nal > 16 or len(U) > 16 or key.size < K_LANES + 5 * n:
        return -1
    same = key[K_VALID] == U64(1)
    key[K_VALID] = 0
    flags = U64(use_m) | (U64(use_g) << U64(1)) | (U64(use_lim) << U64(2)) | (U64(duni) << U64(3)) \
        | (U64(suni) << U64(4))
    diff = (key[K_LO] ^ U64(lo)) | (key[K_N] ^ U64(n)) | (key[K_FLAGS] ^ flags) | (key[K_DVAL] ^ dval) \
        | (key[K_SVAL] ^ sval) | (key[K_HEAP_BASE] ^ heap_base) | (key[K_HBYTES] ^ U64(hbytes)) \
        | (key[K_NALLOC] ^ U64(nal)) | (key[K_NU] ^ U64(len(U)))
    key[K_LO], key[K_N], key[K_FLAGS], key[K_DVAL], key[K_SVAL] = U64(lo), U64(n), flags, dval, sval
    key[K_HEAP_BASE], key[K_HBYTES], key[K_NALLOC], key[K_NU] = heap_base, U64(hbytes), U64(nal), U64(len(U))
    for q in range(len(U)):
        diff |= key[K_U + q] ^ U[q]
        key[K_U + q] = U[q]
    for q in range(nal):
        diff |= (key[K_STARTS + q] ^ U64(starts[q])) | (key[K_ENDS + q] ^ U64(ends[q]))
        key[K_STARTS + q], key[K_ENDS + q] = U64(starts[q]), U64(ends[q])
    for i in range(n):                          # (compared without branches: a loop that vectorises)
        p = K_LANES + 5 * i
        d = dval if duni else U64(dbase[lo + i])
        a = sval if suni else U64(sbase[lo + i])
        sz = U64(lim[i]) if use_lim else U64(0)
        act = U64(m[i]) if use_m else U64(1)
        gd = U64(g[i]) if use_g else U64(1)
        diff |= (key[p] ^ d) | (key[p + 1] ^ a) | (key[p + 2] ^ sz) | (key[p + 3] ^ act) | (key[p + 4] ^ gd)
        key[p], key[p + 1], key[p + 2], key[p + 3], key[p + 4] = d, a, sz, act, gd
    return 1 if same and diff == U64(0) else 0
