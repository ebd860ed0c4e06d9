"""The op that runs a compiled ALU segment (`segments`) in a block's op list: it picks the
segment's variant for the registers' kinds, hands the machine code a table of where each
register lives, and puts what the code stored back in the registers.

The table: per loaded, stored and special register, a data address. A register holding one
value for every lane (a numpy scalar) is loaded from, and a result the variant stores once
is stored to, 8 bytes of the op's own scratch memory. A register's array is where it is
loaded from and stored to; an array the step needs and the register does not have yet (a
uniform register written per lane) is the register's own (`BatchState.array_for`). The
machine code assumes (and tells LLVM, to vectorise: `segment_ir._Scopes`) that no two
registers share an array; a run where two do (no op makes one, but nothing forbids it) runs
the reference ops instead. Data
addresses are much of a step's Python time on a small block (`_data`, a compiled call, about
0.2 us each), so each register's last
(array, address) is kept on the batch (`BatchState.addresses`) by whoever learns it, and every
segment of the batch reads it from there (an array's data address never changes while it
lives: none is resized in place). A run is kept (`_keep`) under the registers' kinds, and the next
run with those kinds and the same arrays skips the table (`_again`): a loop's next iteration, and,
a small batch's state being pooled with its registers' arrays (`gpusim.functional.state`), the
segment in the kernel's next launch.
"""
from __future__ import annotations

import threading
from operator import is_

import numpy as np
from numba import njit

from gpusim.functional.fastpath import segments as S
from gpusim.functional.fastpath.segment_ir import UNIFORM_SPECIALS, Segment
from gpusim.functional.fastpath.shuffle_step import ShflStep
from gpusim.functional.ops import Op

ndarray = np.ndarray


F16 = np.dtype(np.float16)


@njit(cache=True, nogil=True)
def _address(v):
    return v.ctypes.data


def _data(v: np.ndarray) -> int:
    """`v`'s data address: a compiled call (about 0.2 us; `__array_interface__` builds a dict, about
    1 us). numba has no float16 arrays: those are seen as uint16, the same bytes."""
    return _address(v.view(np.uint16) if v.dtype is F16 else v)


class SegmentOp(Op):
    """A run of compilable ALU ops of one block, with the shuffles between them that compile
    (`segments`' and `shuffle_step`'s module docstrings)."""
    __slots__ = ("ops", "plan", "variants", "failed", "code", "table", "interpreted", "looked", "by_types",
                 "scratch", "slots", "table_address", "specials", "also_live", "shuffles", "again", "owner",
                 "owner_run", "lock")

    def __init__(self, ops: list, reg_dtypes, code, also_live: frozenset = frozenset()):
        self.ops = ops
        self.also_live = also_live           # registers live after it besides its last instruction's (`hoist`)
        self.shuffles = any(isinstance(op, ShflStep) for op in ops)   # compiled only over whole warps (`shuffle_step`)
        self.again = True                    # in a loop (set with its stores by KernelCode): a run is kept for `_again`
        self.index = ops[0].index
        self.guard = None
        self.info = ops[0].info
        self.plan = Segment(ops, reg_dtypes)
        self.variants: dict = {}
        self.failed: set = set()
        self.looked: set = set()             # variant keys looked up in the disk cache
        self.interpreted = 0                 # lane-instructions' worth the reference ops ran so far (OP_LANES)
        self.code = code
        self.table = None                    # set by KernelCode once a variant is asked for
        self.owner = None                    # the batch state whose registers the table holds now,
        self.owner_run = None                # and the kept run (`_keep`) it is, if one
        # held from the table's filling to the results' reading: the machine code runs without the GIL
        # (ctypes), and batches of two threads (one launch each) share the segment's table and scratch
        self.lock = threading.Lock()
        self.by_types: dict = {}             # (types of the loaded registers' values, whole) -> variant
        self.scratch = None                  # 8 bytes per table slot: uniform loads and stores, uniform specials
        self.slots = None                    # per table slot: (its scratch address, a 1-element view of it)
        self.table_address = 0
        self.specials: dict = {}             # per-lane special register -> (its array, data address)
        code.segments.append(self)

    def _variant(self, x, kt):
        """The compiled variant for the loaded registers' kinds `kt` (see `run`), or None after
        running the reference ops (not compiled, or not yet worth compiling)."""
        st = x.state
        regs = st.regs
        key = (frozenset(r for r in self.plan.loads if type(regs[r]) is not ndarray), st.whole)
        hit = self.variants.get(key)
        if hit is None:
            work = (st.hi - st.lo + S.OP_LANES) * len(self.ops)
            if self.interpreted + work >= S.COMPILE_AFTER:
                hit = self.code.variant(self, key, lanes=st.hi - st.lo)
            elif key not in self.looked:       # compiled before, by this process or another: cached
                self.looked.add(key)
                hit = self.code.variant(self, key, compile=False)
            if hit is None:
                self.interpreted += work
                for op in self.ops:
                    op.run(x)
                return None
        self.by_types[kt] = hit
        return hit

    def _scratch(self) -> list:
        """Per table slot, its 8 bytes of scratch memory (address, a 1-element view of the slot's
        dtype): where a uniform register or special is loaded from and a uniform result stored."""
        plan = self.plan
        rd = plan.reg_dtypes
        dts = [rd[r] for r in plan.loads] + [rd[r] for r in plan.stores] + [w for _, w in plan.specials]
        self.scratch = np.zeros(len(dts), np.uint64)
        raw = self.scratch.view(np.uint8)
        base = _data(raw)
        self.slots = [(base + 8 * k, raw[8 * k:8 * k + dt.itemsize].view(dt)) for k, dt in enumerate(dts)]
        self.table_address = _data(self.table)
        return self.slots

    def _again(self, x, last) -> bool:
        """Run a compiled run's variant again with its table (`last`: `_keep`'s record of a run with
        the registers' kinds of this one), where every register it held as an array before that run
        holds the same array, and each one it gave an array then (`_fresh`) holds that array or one
        value (given the array back: `BatchState.array_for`'s own, a pooled state's from its last
        launch): a loop's body run again, the next step of the batch, or the segment in the next
        launch of a small kernel. False, having done nothing, where that is not so."""
        st = x.state
        hit, keys, objs, made, lane_specials, uniform_specials, outs, uniform_loads, table = last
        regs = st.regs
        if not all(map(is_, map(regs.__getitem__, keys), objs)):
            return False
        spare = st.spare
        for r, v in made:
            if regs[r] is not v and (type(regs[r]) is ndarray or spare[r] is not v):
                return False
        for name, v in lane_specials:
            if x.specials.lanes(name) is not v:
                return False
        for view, r in uniform_loads:            # (first: a register read as one value may be given its array)
            view[0] = regs[r]
        whole = st.whole
        for r, v in made:
            u = regs[r]
            if u is not v:                       # one value: its array back (all of it written when whole)
                if not whole:
                    v[:] = u
                regs[r] = v
        for view, name, want in uniform_specials:
            view[0] = x.special(name, want)
        if self.owner is not st or self.owner_run is not last:   # the table holds another run's: this one's back
            self.table[:] = table
            self.owner, self.owner_run = st, last
        self._call(hit[0], st)
        for r, view in outs:
            regs[r] = view[0]
        return True

    def _call(self, fn, st) -> None:
        """The machine code over the step's lanes: unmasked, per run of whole active warps, or masked."""
        m = st.m
        if m is None:
            fn(st.lo, st.hi - st.lo, None, self.table_address)
        elif (runs := st.warp_runs()) is not None:     # whole warps in or out: each run without the mask
            for lo, n in runs:
                fn(lo, n, None, self.table_address)
        else:
            fn(st.lo, st.hi - st.lo, _data(m), self.table_address)

    def run(self, x):
        with self.lock:
            self._run(x)

    def _run(self, x):
        st = x.state
        if self.shuffles and (x.san is not None or (st.m is not None and st.warp_runs() is None)):
            for op in self.ops:                  # a warp with only some lanes active, or a sanitizer: the reference
                op.run(x)
            return
        plan = self.plan
        regs = st.regs
        kt = (tuple(map(type, map(regs.__getitem__, plan.loads))), st.whole)
        last = st.segment_runs.get((self, kt))
        if last is not None and self._again(x, last):
            return
        hit = self.by_types.get(kt)
        if hit is None:
            hit = self._variant(x, kt)
            if hit is None:
                return
        fn, once = hit
        tbl = self.table
        slots = self.slots or self._scratch()
        known = st.addresses
        arrays = []                          # the per-lane arrays' addresses: one per register
        held = []                            # the registers that hold arrays (for `_keep`)
        k = 0
        for r in plan.loads:
            v = regs[r]
            if type(v) is ndarray:
                c = known[r]                 # its data address, kept on the batch while r holds v
                if c is None or c[0] is not v:
                    c = known[r] = (v, _data(v))
                tbl[k + k] = a = c[1]
                arrays.append(a)
                held.append(r)
            else:
                a, view = slots[k]
                view[0] = v
                tbl[k + k] = a
            k += 1
        outs = []
        fresh = None
        loaded = plan.loaded
        for r in plan.stores:
            if r in once:
                outs.append((r, slots[k][1]))
                tbl[k + k] = slots[k][0]
            else:
                v = regs[r]
                if type(v) is ndarray:
                    c = known[r]
                    if c is None or c[0] is not v:
                        c = known[r] = (v, _data(v))
                    tbl[k + k] = a = c[1]
                    if r not in loaded:
                        arrays.append(a)
                        held.append(r)
                else:
                    if fresh is None:
                        fresh = []
                    fresh.append((k, r))
            k += 1
        for name, want in plan.specials:
            if name in UNIFORM_SPECIALS:
                a, view = slots[k]
                view[0] = x.special(name, want)
                tbl[k + k] = a
            else:
                v = x.specials.lanes(name)
                c = self.specials.get(name)
                if c is None or c[0] is not v:
                    c = self.specials[name] = (v, _data(v))
                tbl[k + k] = c[1]
                arrays.append(c[1])
            k += 1
        if len(set(arrays)) < len(arrays):   # registers sharing an array: the code assumes none do
            for op in self.ops:
                op.run(x)
            return
        if fresh is not None:
            self._fresh(st, fresh, tbl)
        self._call(fn, st)
        for r, view in outs:
            regs[r] = view[0]
        self.owner = st
        self.owner_run = None
        if self.again or st.pool_key is not None:   # in a loop or in a pooled state: it may run so again
            self._keep(st, kt, hit, outs, slots, held, fresh)

    def _keep(self, st, kt, hit, outs, slots, held, fresh) -> None:
        """Record a compiled run for `_again`, under the registers' kinds before it (`kt`): the
        registers that held arrays (`held`) and those arrays, the ones `_fresh` gave arrays
        (`fresh`), the per-lane specials' arrays, the scratch slots of uniform specials, results
        and loads, and a copy of the table."""
        plan = self.plan
        regs = st.regs
        made = [(r, regs[r]) for _, r in fresh] if fresh is not None else []
        nl = len(plan.loads) + len(plan.stores)
        st.segment_runs[(self, kt)] = self.owner_run = (
            hit, held, [regs[r] for r in held], made,
            [(name, self.specials[name][0]) for name, _ in plan.specials if name not in UNIFORM_SPECIALS],
            [(slots[nl + k][1], name, want) for k, (name, want) in enumerate(plan.specials)
             if name in UNIFORM_SPECIALS], outs,
            [(slots[k][1], r) for k, (r, t) in enumerate(zip(plan.loads, kt[0])) if t is not ndarray],
            self.table.copy())

    @staticmethod
    def _fresh(st, fresh: list, tbl: np.ndarray) -> None:
        """Arrays over the batch for stored registers that hold one value (`fresh`: (table slot,
        register)): each register's own (`BatchState.array_for`: made once, a pooled state's kept for
        the next launch), uninitialised when the step runs every lane (the segment writes them all),
        else holding the register's value."""
        regs, known = st.regs, st.addresses
        whole = st.whole
        for k, r in fresh:
            v = regs[r] = st.array_for(r, None if whole else regs[r])
            c = known[r]
            if c is None or c[0] is not v:
                c = known[r] = (v, _data(v))
            tbl[k + k] = c[1]
