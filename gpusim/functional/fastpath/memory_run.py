"""Consecutive plain loads and stores of a block in one compiled call (`MemoryRunOp`).

A Triton kernel's epilogue is a row of memory instructions with nothing between them: the
matmul's eight `st.shared.v4` of its accumulator tile, then eight `ld.shared.v4` and eight
`st.global.v4` of the same values. Each one alone (`lsu_fused`) costs a compiled call and the
Python around it (reading its registers, converting its destinations, its guard): about 12 us,
most of a small launch's memory time. A `MemoryRunOp` stands for such a row of at least two
`FastLoadOp`/`FastStoreOp`s and runs it as one pass that does, op after op in program order,
exactly what each op's `lsu_fused` call does (place, check, count, move), reading and writing
the registers in place through their addresses: a later op of the row sees what an earlier one
loaded, as when they run one by one.

The row is described by a table, a row of uint64 words per op (`R_*`): the op's constants
(`lsu_fused.op_params`, made once per op and bank geometry and kept), and per run the
addresses or values of its address register, guard predicate and data registers. Before the
table is filled every register a load of the row writes holds an array (as a partial write by
the reference gives it), so the addresses the table holds are the arrays the pass writes. A
filled table is kept on the batch state (`kept_table`) and used again while every register it
was filled from holds the same object (the same array, or the same one value): the row's next
run in a loop, or in the next launch of a small kernel, whose pooled state keeps its arrays
(`state.StatePool`); a cp.async row (`async_run`) keeps its table alike.

Each op also keeps its last placement (`kept_placement.unchanged`): the inputs its placing, checking
and counting read (its address register over the span, the span's masks and guard, the unit's
windows, the heap's allocations) and what they gave (each lane's offset, the op's counts). An op
whose inputs are bit for bit its last run's takes that placement and moves the new data: a loop's
next stage, or a small kernel's next launch at the same addresses (`benchmarks/switched.py
kept` measures it).

Where an op of the row would fault, the pass stops before it (nothing of it written or counted)
and returns its position: the ops from there run one by one, the faulting one reporting its
fault as always. The ops run one by one where their `lsu_fused` calls would not run (a step
record, a sanitizer, merged SASS accesses, heaps with aliases, an op `lsu_fused` does not take).
"""
from __future__ import annotations

from operator import is_

import numpy as np
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from gpusim.functional.fastpath.lsu_fused import P_SHIFT, P_STORE, _count, _placed
from gpusim.functional.fastpath.kept_placement import K_LANES, K_VALID, KEPT_LANES, stage, unchanged
from gpusim.functional.fastpath.lsu_kernels import OK
from gpusim.functional.fastpath.segment_op import _data
from gpusim.functional.ops import Op

U64 = np.uint64
# a table row: the op's `lsu_fused.op_params` (10 words), then
R_INDEX = 10            # its instruction (the counters' column)
R_BASE = 11             # its address register's data address, or the uniform base value
R_BASE_UNIFORM = 12     # 1: R_BASE is the value
R_BASE_WIDE = 13        # 1: the address register is read as uint64, else uint32
R_GUARD = 14            # 0: no guard; 1: the predicate array at R_GUARD_AT; 2: the guard is false (skip the op)
R_GUARD_AT = 15
R_GUARD_NEG = 16
R_ELEMS = 17            # vector elements
R_UNIFORM = 18          # bit k: element k (a store's) is the value R_VALUE + k
R_CONST = 19            # 1: the const heap, else the global (for a heap space)
R_DATA = 20             # 4 words: element k's register array's data address
R_VALUE = 24            # 4 words: element k's value where uniform
WORDS = 28


@intrinsic
def _pointer(typingctx, addr):
    """The uint64 `addr` as a pointer (for `carray`)."""
    sig = types.voidptr(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def guard_of(row, at, neg_at, lo, n, nlanes, g):
    """g[i] = the guard of span lane i: the predicate register whose data address is row[at] (over
    the batch), negated where row[neg_at] is set."""
    p = carray(_pointer(row[at]), (nlanes,), np.bool_)
    neg = row[neg_at] != U64(0)
    for i in range(n):
        g[i] = p[lo + i] != neg


@njit(cache=True, nogil=True, inline="always")
def _move(store, row, buf, like, offs, lo, n, nlanes):
    """A placed op's data between `buf` (the space, as words of the access type) and its registers
    (arrays over the batch of that type); `like`: a one-word scratch of that type."""
    shift = np.int64(row[P_SHIFT])
    uni = row[R_UNIFORM]
    for k in range(np.int64(row[R_ELEMS])):
        if (uni >> U64(k)) & U64(1):
            if store:                                  # a uniform value
                like[0] = row[R_VALUE + k]
                v = like[0]
                for i in range(n):
                    o = offs[i]
                    if o >= 0:
                        buf[(o >> shift) + k] = v
            continue                                   # (a load's element no register takes)
        reg = carray(_pointer(row[R_DATA + k]), (nlanes,), buf.dtype)
        for i in range(n):
            o = offs[i]
            if o >= 0:
                if store:
                    buf[(o >> shift) + k] = reg[lo + i]
                else:
                    reg[lo + i] = buf[(o >> shift) + k]


@njit(cache=True, nogil=True, inline="always")
def _words(space_buf, shift, store, row, offs, lo, n, nlanes):
    """`_move` with the space seen as words of 2^shift bytes."""
    at = _pointer(U64(space_buf.ctypes.data))
    if shift == 0:
        b = carray(at, (space_buf.size,), np.uint8)
        _move(store, row, b, np.empty(1, np.uint8), offs, lo, n, nlanes)
    elif shift == 1:
        b = carray(at, (space_buf.size >> 1,), np.uint16)
        _move(store, row, b, np.empty(1, np.uint16), offs, lo, n, nlanes)
    elif shift == 2:
        b = carray(at, (space_buf.size >> 2,), np.uint32)
        _move(store, row, b, np.empty(1, np.uint32), offs, lo, n, nlanes)
    else:
        b = carray(at, (space_buf.size >> 3,), np.uint64)
        _move(store, row, b, np.empty(1, np.uint64), offs, lo, n, nlanes)


@njit(cache=True, nogil=True, inline="always")
def _one(row, base, bval, buni, U, m, use_m, g, use_g, lo, n, nlanes, rows, shared, local, gdata, gstarts, gends,
         gbase, cdata, cstarts, cends, cbase, offs, res, key, last_offs, last_res):
    """Op `row` of a table: placed, checked and counted (`lsu_fused._placed`), or where its inputs
    are its last run's (`kept_placement.unchanged`: `key`) as then (last_offs, last_res) and counted again; then
    its data moved (`_words`). OK, or FAIL (a lane would fault: nothing written or counted)."""
    space = row[0]
    if row[R_CONST]:
        data, starts, ends, hb = cdata, cstarts, cends, cbase
    else:
        data, starts, ends, hb = gdata, gstarts, gends, gbase
    kept = unchanged(key, U, base, bval, buni, NO_U64, U64(0), True, m, use_m, g, use_g, NO_I64, False, lo, n, starts,
                     ends, hb, data.size)
    if kept == 1:
        for i in range(n):
            offs[i] = last_offs[i]
        for q in range(3):
            res[q] = last_res[q]
        _count(row[:10], res, rows, np.int64(row[R_INDEX]))
    else:
        status = _placed(row[:10], U, base, bval, buni, m, use_m, g, use_g, lo, n, starts, ends, hb,
                         np.int64(data.size), offs, res, rows, np.int64(row[R_INDEX]))
        if status != OK:
            return status
        if kept == 0:                            # remembered for the next run with these inputs
            for i in range(n):
                last_offs[i] = offs[i]
            for q in range(3):
                last_res[q] = res[q]
    if kept >= 0:
        key[K_VALID] = 1
    store = row[P_STORE] != U64(0)
    shift = np.int64(row[P_SHIFT])
    buf = shared if space == U64(0) else local if space == U64(2) else data
    _words(buf, shift, store, row, offs, lo, n, nlanes)
    return OK


@njit(cache=True, nogil=True)
def run_row(T, U, m, use_m, lo, n, nlanes, rows, shared, local, gdata, gstarts, gends, gbase, cdata, cstarts, cends,
            cbase, K, OFFS, ORES):
    """Each op of table T in order (module docstring); -1, or the position of the first op that
    would fault (it and the ops after it not run). Op k's last placement is K[k], OFFS[k], ORES[k]
    (`_one`)."""
    offs = np.empty(n, np.int64)
    res = np.zeros(3, np.int64)
    g = np.empty(n, np.bool_)
    no32 = np.empty(1, np.uint32)
    no64 = np.empty(1, np.uint64)
    for k in range(T.shape[0]):
        row = T[k]
        gk = row[R_GUARD]
        if gk == U64(2):
            continue
        use_g = gk == U64(1)
        if use_g:
            guard_of(row, R_GUARD_AT, R_GUARD_NEG, lo, n, nlanes, g)
        res[:] = 0
        buni = row[R_BASE_UNIFORM] != U64(0)
        if row[R_BASE_WIDE]:
            base = no64 if buni else carray(_pointer(row[R_BASE]), (nlanes,), np.uint64)
            st = _one(row, base, row[R_BASE] if buni else U64(0), buni, U, m, use_m, g, use_g, lo, n, nlanes, rows,
                      shared, local, gdata, gstarts, gends, gbase, cdata, cstarts, cends, cbase, offs, res, K[k],
                      OFFS[k], ORES[k])
        else:
            base32 = no32 if buni else carray(_pointer(row[R_BASE]), (nlanes,), np.uint32)
            st = _one(row, base32, row[R_BASE] if buni else U64(0), buni, U, m, use_m, g, use_g, lo, n, nlanes, rows,
                      shared, local, gdata, gstarts, gends, gbase, cdata, cstarts, cends, cbase, offs, res, K[k],
                      OFFS[k], ORES[k])
        if st != OK:
            return k
    return -1


NO_BOOL = np.zeros(1, np.bool_)
NO_U64 = np.zeros(1, np.uint64)
NO_I64 = np.zeros(1, np.int64)


def register_address(st, r: int) -> int | None:
    """The data address of register `r`'s array (kept on the batch state while `r` holds that
    array, as the segments keep it: `BatchState.addresses`), or None where it holds one value."""
    v = st.regs[r]
    if type(v) is not np.ndarray:
        return None
    c = st.addresses[r]
    if c is None or c[0] is not v:
        c = st.addresses[r] = (v, _data(v))
    return c[1]


def kept_table(st, op, t: np.ndarray, reads: tuple) -> np.ndarray | None:
    """The table row op `op` filled in its last run on batch state `st` from constant rows `t`
    (kept in `st.segment_runs`, as the segments keep theirs: with a pooled state, for the next
    launch too), where every register it read (`reads`) holds the same object as then: the same
    array (so the same data address) or the same one value; else None."""
    last = st.segment_runs.get(op)
    if last is None or last[2] is not t:
        return None
    regs = st.regs
    if all(map(is_, map(regs.__getitem__, reads), last[0])):
        return last[1]
    return None


class MemoryRunOp(Op):
    """A row of at least two `FastLoadOp`/`FastStoreOp`s run as one pass (module docstring)."""
    __slots__ = ("ops", "tables", "reads", "placed")

    def __init__(self, ops: list):
        self.ops = tuple(ops)
        self.index, self.guard, self.info = ops[0].index, None, ops[0].info
        self.tables: dict = {}          # (banks, bank width) -> the ops' constant rows, or None (one by one)
        self.placed = None              # (span lanes, per stage `run_row`'s K, OFFS, ORES: `kept_placement.stage`)
        reads = []                      # every register the table is filled from (`kept_table`)
        for op in ops:
            slots = getattr(op, "src_slots", False)
            reads += [op.bslot] + ([op.guard[0]] if op.guard is not None else []) + \
                list(op.dsts if slots is False else slots or ())     # (a store of None: run one by one)
        self.reads = tuple(sorted({r for r in reads if r is not None and r >= 0}))

    def _table(self, lsu) -> np.ndarray | None:
        key = (lsu.banks, lsu.bank_width)
        t = self.tables.get(key, False)
        if t is not False:
            return t
        t = np.zeros((len(self.ops), WORDS), np.uint64)
        for k, op in enumerate(self.ops):
            p = lsu.op_params(op)
            store = getattr(op, "src_slots", False)
            if p is None or store is None or len(op.dsts if store is False else store) > 4:
                t = None
                break
            row = t[k]
            row[:10] = p
            row[R_INDEX] = op.index
            row[R_BASE_WIDE] = op.bview.itemsize == 8
            if op.bslot < 0:
                row[R_BASE], row[R_BASE_UNIFORM] = op.bconst, 1
            row[R_CONST] = op.space == "const"
            if store is not False:
                row[R_ELEMS] = len(store)
                for e, s in enumerate(store):
                    if s < 0:                         # an immediate: its bits, once
                        row[R_UNIFORM] |= U64(1 << e)
                        row[R_VALUE + e] = int(np.asarray(op.srcs[e](None, None)).astype(op.dt).view(op.uview))
            else:
                row[R_ELEMS] = len(op.dsts)
                for e, d in enumerate(op.dsts):
                    if d is None:                     # an element no register takes: skipped
                        row[R_UNIFORM] |= U64(1 << e)
        self.tables[key] = t
        return t

    def run(self, x):
        lsu = x.lsu
        t = None
        if x.record is None and x.san is None and not lsu.count_bytes and getattr(lsu, "_bank_shift", -1) >= 0:
            gh, ch = lsu.mem.global_heap, lsu.mem.const_heap
            if not gh.aliases and not ch.aliases:
                t = self._table(lsu)
        if t is None:
            for op in self.ops:
                op.run(x)
            return
        st = x.state
        regs = st.regs
        whole = st.whole
        for op in self.ops:                           # a load's destinations: arrays first (module docstring)
            dsts = getattr(op, "dsts", None)
            if dsts is not None:
                keep = whole and op.guard is None
                for d in dsts:
                    if d is not None and type(regs[d]) is not np.ndarray:
                        regs[d] = st.array_for(d, None if keep else regs[d])
        T = kept_table(st, self, t, self.reads)
        if T is None:
            rec = st.segment_runs[self] = self._filled(st, t)
            T = rec[1]
        m = st.m
        gh, ch = lsu.mem.global_heap, lsu.mem.const_heap
        n = st.hi - st.lo
        placed = stage(x, self, n, self._placement)
        stop = run_row(T, lsu.unit_params(), NO_BOOL if m is None else m, m is not None, st.lo, n, st.nlanes,
                       x.counters.rows, lsu.shared, lsu.local, gh.data, gh._starts, gh._ends, U64(gh.base), ch.data,
                       ch._starts, ch._ends, U64(ch.base), *placed)
        if stop >= 0:
            for op in self.ops[stop:]:               # from the op that would fault: one by one (it reports)
                op.run(x)

    def _placement(self, n: int) -> tuple:
        """A kept placement of the row's ops over `n` lanes (`run_row`'s K, OFFS, ORES), none kept yet."""
        k, w = len(self.ops), (n if n <= KEPT_LANES else 0)
        return np.zeros((k, K_LANES + 5 * w if w else 0), U64), np.empty((k, w), np.int64), np.zeros((k, 3), np.int64)

    def _filled(self, st, t: np.ndarray) -> tuple:
        """(`kept_table`'s record: the registers' objects, the table of constant rows `t` with this
        run's register addresses and uniform values filled in, the constant rows)."""
        regs = st.regs
        T = t.copy()
        for k, op in enumerate(self.ops):
            row = T[k]
            s = op.bslot
            if s >= 0:
                a = register_address(st, s)
                if a is None:
                    row[R_BASE], row[R_BASE_UNIFORM] = int(np.asarray(regs[s]).view(op.bview)), 1
                else:
                    row[R_BASE] = a
            if op.guard is not None:
                gs, neg = op.guard
                a = register_address(st, gs)
                if a is not None:
                    row[R_GUARD], row[R_GUARD_AT], row[R_GUARD_NEG] = 1, a, neg
                elif bool(regs[gs]) == bool(neg):
                    row[R_GUARD] = 2
            slots = getattr(op, "src_slots", None)
            if slots is None:
                slots = op.dsts
            for e, r in enumerate(slots):
                if r is None or r < 0:
                    continue
                a = register_address(st, r)
                if a is None:                         # (a store's uniform register)
                    row[R_UNIFORM] |= U64(1 << e)
                    row[R_VALUE + e] = int(np.asarray(regs[r]).view(op.uview))
                else:
                    row[R_DATA + e] = a
        return tuple(map(regs.__getitem__, self.reads)), T, t
