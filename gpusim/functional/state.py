"""The architectural state of a batch of thread blocks executing together.

Lanes of the batch are numbered block-major: lane = (block_slot * warps_per_block +
warp) * 32 + lane_in_warp, so a warp is 32 consecutive lanes and a block is
consecutive warps. Threads past the block size in its last warp are never active.

Registers are numpy arrays over all lanes of the batch, in the dtype of their
declared PTX type; a register holding the same value in every lane may instead be a
numpy scalar (a "uniform" value) until a partial write makes it an array. A step
executes one basic block for a contiguous span of lanes `[lo, hi)` under a boolean
lane mask `m` (None = every lane of the span is active).

A register that needs an array while it holds one value gets its own (`BatchState.array_for`,
made once and kept; in a pooled state a whole-span write lands in it too), and a kernel's small
batch states are pooled (`StatePool`, on the decoded kernel): the next launch's batch of the same blocks starts from a reset state that still has
those arrays, their addresses, the per-lane special registers and the compiled segments' last
runs, so that a small launch's segments run again with their tables as they were
(`fastpath.segment_op.SegmentOp._again`) instead of rebuilding them, register by register, in
Python (most of a segment run's time on a small block; `benchmarks/paired_launches.py` measures it).

Does not model: register banks, operand collectors, register spilling (issue 3).
"""
from __future__ import annotations

from operator import is_

import numpy as np

from isa.types import signed_dtype, unsigned_dtype

ndarray = np.ndarray


def convert(v, want: np.dtype):
    """Reinterpret or resize the bits of `v` as dtype `want` (PTX register/type rules:
    same size -> same bits; narrower type -> low bits; wider type -> zero or sign
    extension according to the source's signedness)."""
    have = v.dtype
    if have == want:
        return v
    if have.itemsize == want.itemsize:
        return v.view(want)
    if have == np.bool_ or want == np.bool_:
        return v.astype(want)
    if want.itemsize < have.itemsize:
        u = v.view(unsigned_dtype(have.itemsize)) if have.kind != "u" else v
        return u.astype(unsigned_dtype(want.itemsize)).view(want)
    src = v.view(signed_dtype(have.itemsize)) if have.kind == "i" else (
        v if have.kind == "u" else v.view(unsigned_dtype(have.itemsize)))
    wide = signed_dtype(want.itemsize) if have.kind == "i" else unsigned_dtype(want.itemsize)
    return src.astype(wide).view(want)


_ZEROS: dict = {}


def _zeros(reg_dtypes: list) -> tuple:
    """Each register's initial value, a zero of its dtype (numpy scalars are immutable): made
    once per decoded kernel's register list, not per batch."""
    hit = _ZEROS.get(id(reg_dtypes))
    if hit is None or hit[0] is not reg_dtypes:
        if len(_ZEROS) > 256:
            _ZEROS.clear()
        hit = _ZEROS[id(reg_dtypes)] = (reg_dtypes, tuple(dt.type(0) for dt in reg_dtypes))
    return hit[1]


class BatchState:
    """Registers and lane geometry of a batch; see the module docstring."""

    def __init__(self, nlanes: int, reg_dtypes: list[np.dtype]):
        self.nlanes = nlanes
        self.reg_dtypes = reg_dtypes
        self.regs: list = list(_zeros(reg_dtypes))
        self.lo = 0
        self.hi = nlanes
        self.m: np.ndarray | None = None
        self._warp_masks: np.ndarray | None = None   # the span's lane mask per warp, with m
        self._runs = None                # warp_runs(), once asked for in a step (False: not yet)
        self.whole = True            # the span is the whole batch and every lane is active
        self._groups: dict = {}      # grouped(): registers held as the rows of one array
        # per register, (its array, that array's data address) as the compiled segments last
        # learnt it (fastpath.segment_op); stale when the register holds another array by now
        self.addresses: list = [None] * len(reg_dtypes)
        # per (compiled segment, the kinds of the registers it reads and whether the step is whole), a
        # kept run: its table and the arrays it used (fastpath.segment_op: SegmentOp._keep, _again);
        # kept here, so that the batch's arrays go with the batch (and with a pooled state, its next)
        self.segment_runs: dict = {}
        # per register, the array made for it when it first needed one (`array_for`), given to it again
        # whenever it holds one value and needs an array: in this batch and, the state being pooled
        # (`StatePool`), in the next launch's, so that a compiled segment finds the arrays of its last
        # run and runs again with its table as it is (`SegmentOp._again`)
        self.spare: list = [None] * len(reg_dtypes)
        self.special_lanes: dict = {}    # per-lane special registers (`specials`): the batch's blocks'
        self.pool_key = None             # the `StatePool` key it goes back under

    def reset(self) -> None:
        """Back to a new batch's state (every register its zero), keeping what a pooled state keeps
        (module docstring): `spare`, the arrays' addresses, the segments' last runs, the groups, the
        per-lane special registers (the same blocks: the pool's key)."""
        self.regs = list(_zeros(self.reg_dtypes))
        self.span(0, self.nlanes, None)

    def array_for(self, slot: int, fill=None) -> ndarray:
        """An array over the batch for register `slot`, which holds one value (`fill`, where the
        caller writes only some lanes): its own from `spare`, else a new one kept there."""
        v = self.spare[slot]
        if v is None:
            v = self.spare[slot] = np.empty(self.nlanes, self.reg_dtypes[slot])
        if fill is not None:
            v[:] = fill
        return v

    def span(self, lo: int, hi: int, m: np.ndarray | None, warp_masks: np.ndarray | None = None) -> None:
        """The step's lanes [lo, hi) under mask m (None: all), and m as one uint32 per warp."""
        self.lo, self.hi, self.m, self._warp_masks, self._runs = lo, hi, m, warp_masks, False
        self.whole = m is None and lo == 0 and hi == self.nlanes

    def warp_runs(self) -> tuple | None:
        """Where the step has a mask and every warp of the span is wholly active or wholly not: the
        active lanes as runs ((first lane, lanes), ...) of consecutive whole warps (compiled segments
        run those without the mask: a loop that vectorises); else None. Found once a step."""
        if self._runs is False:
            self._runs = None
            wm = self._warp_masks
            if wm is not None:                   # at most a batch's warps: a plain loop beats numpy's calls
                runs, start, i = [], -1, -1
                for i, v in enumerate(wm.tolist()):
                    if v == 0xFFFFFFFF:
                        if start < 0:
                            start = i
                    elif v:
                        return None
                    elif start >= 0:
                        runs.append((self.lo + 32 * start, 32 * (i - start)))
                        start = -1
                if start >= 0:
                    runs.append((self.lo + 32 * start, 32 * (i + 1 - start)))
                self._runs = tuple(runs)
        return self._runs

    # ------------------------------------------------------------------ registers
    def read(self, slot: int, want: np.dtype):
        v = self.regs[slot]
        if type(v) is ndarray:
            v = v[self.lo:self.hi]
        if v.dtype != want:
            v = convert(v, want)
        return v

    def write(self, slot: int, val, mask: np.ndarray | None = None) -> None:
        """Write `val` (span-sized array or scalar) to register `slot` in the active
        lanes of the span (and only where `mask` is also true, if given)."""
        rd = self.reg_dtypes[slot]
        if val.dtype != rd:
            val = convert(val, rd)
        m = self.m if mask is None else (mask if self.m is None else (self.m & mask))
        if m is None and self.whole:
            if type(val) is ndarray and val.ndim == 0:
                self.regs[slot] = val[()]
            elif type(val) is ndarray and self.pool_key is not None:
                own = self.regs[slot] = self.array_for(slot)     # a pooled state: into the register's own array
                np.copyto(own, val)                              # (the same object every launch, `SegmentOp._again`)
            else:
                self.regs[slot] = val
            return
        cur = self.regs[slot]
        if type(cur) is not ndarray:
            cur = self.regs[slot] = self.array_for(slot, cur)
        if m is None:
            cur[self.lo:self.hi] = val
        else:
            np.copyto(cur[self.lo:self.hi], val, where=m)

    def write_warps(self, slot: int, val: np.ndarray, warps: np.ndarray) -> None:
        """Write `val` (len(warps), 32) to register `slot` in the lanes of the span's warps
        `warps` (span-relative, increasing), every lane of which is active: what `write` does
        with a mask of those lanes, without building and combining masks over the span."""
        rd = self.reg_dtypes[slot]
        if val.dtype != rd:
            val = convert(val, rd)
        cur = self.regs[slot]
        if type(cur) is not ndarray:
            cur = self.regs[slot] = self.array_for(slot, cur)
        cur[self.lo:self.hi].reshape(-1, 32)[warps] = val

    def grouped(self, slots: tuple[int, ...]) -> np.ndarray:
        """A (len(slots), nlanes) array whose rows are the registers `slots` (distinct, of one
        dtype): each register's array is a row of it, so an op that reads and writes them all (a
        wgmma's accumulators) works on them in place, without copies. Each row is also its
        register's own array (`spare`), so that an op writing the register where it holds one
        value (an accumulator zeroed, or scaled by a segment) writes the row and the group stays
        whole; it is made again (the values of the registers that are not their rows copied in)
        where some register holds another array by now."""
        regs = self.regs
        g = self._groups.get(slots)
        if g is not None:
            base, rows = g
            if all(map(is_, map(regs.__getitem__, slots), rows)):
                return base
            vals = [regs[r] for r in slots]
            one = vals[0]
            if isinstance(one, np.generic) and all(type(v) is type(one) for v in vals) and \
                    len({v.tobytes() for v in vals}) == 1:
                base.fill(one)                       # one value (its bits) in each: zeroed accumulators
            else:
                if any(type(v) is ndarray and v.base is base for v in vals):
                    vals = [v.copy() if type(v) is ndarray else v for v in vals]   # (a row may hold another's)
                for k, v in enumerate(vals):
                    if v is not rows[k]:
                        rows[k][:] = v
        else:
            base = np.empty((len(slots), self.nlanes), self.reg_dtypes[slots[0]])
            rows = list(base)
            for k, r in enumerate(slots):
                base[k] = regs[r]
            self._groups[slots] = (base, rows)
        spare = self.spare
        for k, r in enumerate(slots):
            regs[r] = spare[r] = rows[k]
        return base

    def full(self, v, dt: np.dtype) -> np.ndarray:
        """`v` as an array over the span (materialising a uniform scalar)."""
        if type(v) is ndarray and v.shape[0] == self.hi - self.lo:
            return v
        return np.full(self.hi - self.lo, v, dt)


class StatePool:
    """Idle batch states of one decoded kernel (`DecodedKernel.states`), by lane count and blocks: an
    executor takes one (`take`: a pooled one reset, else a new one) and gives it back when closed
    (`give`: its caller is done with it). What a pooled state keeps (`BatchState.reset`) makes a
    small launch's compiled segments find their last run's arrays and table (`SegmentOp._again`)
    instead of building them again. Only small batches (`MAX_LANES`: where a launch's fixed costs
    matter; a large batch's registers would hold megabytes) and a few states per key (one per batch
    running at once) and keys per kernel."""
    KEEP = 2
    MAX_LANES = 1024
    MAX_KEYS = 4

    def __init__(self):
        self._idle: dict = {}

    def __reduce__(self):
        return StatePool, ()                     # (a decoded kernel sent elsewhere: its pool stays here)

    def take(self, nlanes: int, reg_dtypes: list, key) -> BatchState:
        if nlanes > self.MAX_LANES:
            return BatchState(nlanes, reg_dtypes)           # (pool_key None: not pooled)
        idle = self._idle.get((nlanes, key))
        if idle:
            try:
                st = idle.pop()                  # (atomic: batches of another thread may take too)
            except IndexError:
                st = None
            if st is not None:
                st.reset()
                return st
        st = BatchState(nlanes, reg_dtypes)
        st.pool_key = (nlanes, key)
        return st

    def give(self, st: BatchState) -> None:
        if st.pool_key is None:
            return
        if len(self._idle) >= self.MAX_KEYS and st.pool_key not in self._idle:
            self._idle.clear()
        idle = self._idle.setdefault(st.pool_key, [])
        if len(idle) < self.KEEP:
            idle.append(st)
