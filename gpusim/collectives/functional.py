"""What each collective computes: per-rank numpy input arrays -> per-rank outputs.

Semantics as NCCL documents them (sum reduction, root 0 unless given): all_reduce,
reduce (root gets the sum), broadcast (everyone gets the root's), all_gather (rank
order), reduce_scatter (rank r gets the r-th block of the sum), all_to_all (block p of
rank r goes to rank p, at block r), send_recv (rank r receives rank r-1's).
Reductions add in rank order (a ring adds in a rotating order, so float results can
differ from this by rounding; integer results are exact).
"""
from __future__ import annotations

import numpy as np

from gpusim.collectives.conventions import check_op
from gpusim.errors import ConfigError


def run(op: str, inputs: list[np.ndarray], root: int = 0) -> list[np.ndarray]:
    op = check_op(op)
    n = len(inputs)
    if n < 2:
        raise ConfigError(f"{op} needs arrays on at least 2 GPUs, got {n}")
    shapes = {a.shape for a in inputs}
    dtypes = {a.dtype for a in inputs}
    if len(shapes) != 1 or len(dtypes) != 1:
        raise ConfigError(f"{op}: every rank's array must have one shape and dtype, got {sorted(map(str, shapes))} "
                          f"and {sorted(map(str, dtypes))}")
    if not 0 <= root < n:
        raise ConfigError(f"{op}: root {root} is not one of the {n} ranks")
    flat = [np.ascontiguousarray(a).reshape(-1) for a in inputs]
    size = flat[0].size
    if op in ("reduce_scatter", "all_to_all") and size % n:
        raise ConfigError(f"{op}: {size} elements per rank do not split into {n} equal blocks")
    if op == "all_reduce":
        total = _sum(flat)
        return [total.copy() for _ in range(n)]
    if op == "reduce":
        total = _sum(flat)
        return [total if r == root else flat[r].copy() for r in range(n)]
    if op == "broadcast":
        return [flat[root].copy() for _ in range(n)]
    if op == "all_gather":
        out = np.concatenate(flat)
        return [out.copy() for _ in range(n)]
    if op == "reduce_scatter":
        total, b = _sum(flat), size // n
        return [total[r * b:(r + 1) * b].copy() for r in range(n)]
    if op == "all_to_all":
        b = size // n
        return [np.concatenate([flat[p][r * b:(r + 1) * b] for p in range(n)]) for r in range(n)]
    return [flat[(r - 1) % n].copy() for r in range(n)]          # send_recv


def _sum(flat: list[np.ndarray]) -> np.ndarray:
    total = flat[0].copy()
    for a in flat[1:]:
        total += a
    return total
