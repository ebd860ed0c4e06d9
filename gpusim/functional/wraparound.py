"""Loops that end only by wrapping around: the half of runaway detection that follows counters.

`while cuda.atomic.add(c, 0, 1) >= 0` ends on a GPU after 2^31 atomic additions, when the
int32 counter wraps around; gpusim would need hours. Every analysable loop whose branches are all integer comparisons of counters (`loops.py`:
`add`/`sub` inductions and `atom.add` results) is followed too: where every comparison
operand of a warp advanced by the same step for `DRIFT_ITERATIONS` iterations, the iterations
until each branch changes its way are solved exactly in the comparison's modular arithmetic.
A bound loaded inside the loop from a fixed address counts when it did not change over those
iterations (no watched word changed) and every such loop stores only to fixed addresses. When
no branch can change before one of its operands wraps around (or never can), every other live
warp of the batch is in the same state, repeats or waits, and the iterations left times the
threads running them reach `WRAP_WORK_LIMIT` (2^28 thread-iterations), `NoProgress` says so
(`watchdog.py`): such a loop is almost always a bug, and gpusim reports it in seconds
instead of simulating it for hours. A loop ending by wrap-around after less work than that runs.
"""
from __future__ import annotations

import math

import numpy as np

from gpusim.functional.state import convert

DRIFT_ITERATIONS = 64            # iterations a comparison's operands must advance by one step each


class Drift:
    """Loops that end only by wrapping around (module docstring): per loop and warp, the last
    values of the comparison operands, their step, and for how many iterations it held.
    `dog`: the batch's `watchdog.Watchdog` (its executor, loop facts; `dirty` when a warp is
    found bound)."""

    def __init__(self, dog):
        self.dog = dog
        n = dog.ex.nwarps
        self.vals: dict[int, np.ndarray] = {}          # loop -> [test, operand, warp, lane] int64 last values
        self.step: dict[int, np.ndarray] = {}          # ... their last steps
        self.held: dict[int, np.ndarray] = {}          # loop -> [warp] iterations the steps held
        self.bound = np.zeros(n, bool)                 # warps whose loop ends only by wrapping (verdict)
        self.left = np.zeros(n, np.float64)            # ... iterations left before it could
        self.loop = np.full(n, -1, np.int64)
        self.why: dict[int, str] = {}                  # warp -> a phrase for the error
        self.epoch = 0                                 # resets of the watchdog so far
        self.seen: dict[int, np.ndarray] = {}          # loop -> [warp] the epoch of its last visit

    def reset_memory(self) -> None:
        """Watched memory changed (an atomic counter changes it every iteration, which does not
        stop a drift); a test comparing against a loaded value must see it unchanged."""
        self.epoch += 1

    def visit(self, k: int, g: np.ndarray, stayed: np.ndarray) -> None:
        dog = self.dog
        ex = dog.ex
        lp = dog.facts.loops[k]
        tests = lp.exit_tests
        n = ex.nwarps
        if k not in self.vals:
            self.vals[k] = np.zeros((len(tests), 2, n, 32), np.int64)
            self.step[k] = np.zeros((len(tests), 2, n, 32), np.int64)
            self.held[k] = np.zeros(n, np.int64)
            self.seen[k] = np.zeros(n, np.int64)
        if any(t.loads for t in tests):                 # a loaded bound: unchanged memory since the last visit
            stayed = stayed & (self.seen[k][g] == self.epoch)
            self.seen[k][g] = self.epoch
        lanes = (g[:, None] * 32 + np.arange(32)).ravel()
        now = np.zeros((len(tests), 2, len(g), 32), np.int64)
        for t, test in enumerate(tests):
            dt = np.dtype(f"{'i' if test.ptx_type[0] == 's' else 'u'}{int(test.ptx_type[1:]) // 8}")
            for o, (slot, imm) in enumerate(((test.a, test.a_imm), (test.b, test.b_imm))):
                if slot is None:
                    now[t, o] = imm
                    continue
                v = ex.state.regs[slot]
                v = v[lanes] if type(v) is np.ndarray else np.full(len(lanes), v)
                now[t, o] = convert(np.asarray(v), dt).astype(np.int64).reshape(len(g), 32)
        old, prev_step = self.vals[k][:, :, g], self.step[k][:, :, g]
        step = now - old
        same = stayed & (step == prev_step).reshape(len(tests) * 2, len(g), 32).transpose(1, 0, 2).reshape(
            len(g), -1).all(axis=1)
        held = np.where(same, self.held[k][g] + 1, 0)
        self.held[k][g] = held
        self.vals[k][:, :, g] = now
        self.step[k][:, :, g] = step
        ready = held >= DRIFT_ITERATIONS
        self.bound[g] = False
        if not ready.any():
            return
        masks = ex.stacks.top_mask(g)
        for j in np.flatnonzero(ready).tolist():
            w = int(g[j])
            active = np.flatnonzero([(int(masks[j]) >> i) & 1 for i in range(32)])
            left, why = self._iterations_left(tests, now[:, :, j][:, :, active], step[:, :, j][:, :, active])
            if left is not None:
                self.bound[w] = True
                self.left[w] = left
                self.loop[w] = k
                self.why[w] = why
                dog.dirty = True

    def _iterations_left(self, tests, now: np.ndarray, step: np.ndarray):
        """(iterations, phrase) when no test can change its outcome before an operand wraps
        around (or ever), else None. now/step: [test, operand, lane]."""
        least = None
        why = ""
        for t, test in enumerate(tests):
            bits = int(test.ptx_type[1:])
            signed = test.ptx_type[0] == "s" and test.cmp not in ("lo", "ls", "hi", "hs")
            for lane in range(now.shape[2]):
                a, b = int(now[t, 0, lane]), int(now[t, 1, lane])
                da, db = int(step[t, 0, lane]), int(step[t, 1, lane])
                if da and db or not (da or db):
                    return None, ""          # both move, or neither (a repeating warp, not a drift)
                moving, fixed, d, mover_is_a = (a, b, da, True) if da else (b, a, db, False)
                n = _flip_distance(test.cmp, moving, fixed, d, bits, signed, mover_is_a)
                if n is None:
                    return None, ""          # the branch changes its way before any wrap-around
                if least is None or n < least:
                    least = n
                    what = "never changes its way" if n == float("inf") else \
                        f"changes its way only after {int(n):,} more iterations, when a {bits}-bit value wraps around"
                    why = f"{what} (it advances by {abs(d):,} per iteration)"
        return least, why


def _flip_distance(cmp: str, x: int, c: int, d: int, bits: int, signed: bool, x_first: bool):
    """Iterations k >= 1 until `x + k*d cmp c` (x first; else `c cmp x + k*d`) differs from its
    value now, in `bits`-bit arithmetic: None if that happens before x + k*d leaves the type's
    range, the iterations until it does if only after, inf if never (an equality the stride
    skips for ever)."""
    mod = 1 << bits
    lo, hi = (-(mod >> 1), (mod >> 1) - 1) if signed else (0, mod - 1)
    x, c = _wrap(x, bits, signed), _wrap(c, bits, signed)
    wrap = (hi - x) // d + 1 if d > 0 else (x - lo) // (-d) + 1          # the first k out of range
    if cmp in ("eq", "ne"):
        if x == c or (c - x) % d == 0 and 0 < (c - x) // d < wrap:
            return None                                    # equal now, or reaches c before the wrap
        return float(wrap) if (c - x) % math.gcd(d % mod, mod) == 0 else float("inf")
    op = _ORDER[cmp]
    last = x + (wrap - 1) * d                          # monotone until the wrap: changes at most once

    def holds(v: int) -> bool:
        return op(v, c) if x_first else op(c, v)

    return None if holds(last) != holds(x) else float(wrap)


_ORDER = {"lt": lambda p, q: p < q, "lo": lambda p, q: p < q, "le": lambda p, q: p <= q, "ls": lambda p, q: p <= q,
          "gt": lambda p, q: p > q, "hi": lambda p, q: p > q, "ge": lambda p, q: p >= q, "hs": lambda p, q: p >= q}


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v
