"""Consecutive `cp.async` copies and commits of a block in one compiled call (`CopyRunOp`).

A software-pipelined Triton loop issues each stage as a row of copies and a commit with nothing
between them (the matmul default: two 16-byte copies, a commit, two more, a commit; three such
rows a launch). Each copy alone (`async_copy.FastCpAsyncOp`) is one compiled pass and the Python
around it, about 18 us of a 2 ms launch; a `CopyRunOp` stands for a row of at least two of them
(with `cp.async.commit_group`s between, unguarded) and runs it as one pass that does, op after
op in program order, what each does: a copy's `_plan` (its addresses read from its registers in
place, through a table as `memory_run` reads them; its counters added where their rows exist),
the commit counts of the lanes it commits, and each copy's group (its lanes' commits so far).
The pending copies go to the batch's `AsyncCopies` after the pass as one entry, the copies'
lanes one after another in issue order (what the copies' own entries, one after another, hold:
a wait completes an entry's lanes in order, each lane by its group).

Each copy keeps its last placement, as `memory_run`'s ops keep theirs (`kept_placement.unchanged`): a
copy whose destination and source addresses, src-sizes, masks, guard, shared window and heap are
bit for bit its last run's takes that run's lanes, shared offsets and counts (its per-warp fill and
sector counts were a third of the pass) and reads its bytes afresh.

Where a copy of the row does not plan (a lane that faults, a partial src-size, a layout the
counting rules do not take) the pass stops before it, and from there the ops run one by one:
that copy through its own op, which reports or takes the reference path as always. The row runs
one op at a time under a sanitizer, a step record, heaps with aliases, and for copies whose
registers or sizes the table does not take (a copy of other than 8 or 16 bytes, a 32-bit source
address, a src-size that is not a 32-bit register or an immediate, copies of different sizes).
"""
from __future__ import annotations

import numpy as np
from numba import carray, njit

from gpusim.functional.async_ops import BYPASS_FIELDS, FIELDS, CpGroupOp, _unit
from gpusim.functional.copy_counts import WARP_MEMO
from gpusim.functional.fastpath.async_copy import _P_INDEX, _P_SIZE, FastCpAsyncOp, _plan, _word
from gpusim.functional.fastpath.lsu_kernels import OK
from gpusim.functional.fastpath.kept_placement import K_LANES, K_VALID, KEPT_LANES, stage, unchanged
from gpusim.functional.fastpath.memory_run import _pointer, guard_of, kept_table, register_address
from gpusim.functional.ops import Op

U64 = np.uint64
# a table row: what it is, then a copy's constants as `FastCpAsyncOp.consts` (R_CONSTS .. + 5), then
R_KIND = 0              # 0: a copy; 1: a commit
R_CONSTS = 1            # 5 words: size, bypass, destination offset, source offset, instruction
R_DST = 6               # the destination address register's data address, or the uniform value
R_DST_UNIFORM = 7
R_DST_WIDE = 8          # 1: the destination register is read as uint64, else uint32
R_SRC = 9               # the source address register (uint64)'s data address, or the uniform value
R_SRC_UNIFORM = 10
R_SIZE_KIND = 11        # src-size: 0 none; 1 a 32-bit register at R_SIZE; 2 the value R_SIZE
R_SIZE = 12
R_GUARD = 13            # 0: none; 1 the predicate array at R_GUARD_AT; 2: false (the copy does nothing)
R_GUARD_AT = 14
R_GUARD_NEG = 15
WORDS = 16


@njit(cache=True, nogil=True, inline="always")
def _recall(O, ores, lanes, soff, data, words, nwords):
    """A copy placed as in its last run (`kept_placement.unchanged`): its lanes and shared offsets as then, its
    bytes read afresh from the heap (`words`: 8-byte words) at the global offsets found then (-1:
    zeros, a src-size of 0); its counts as then (ores)."""
    for j in range(ores[0]):
        lanes[j] = O[0, j]
        soff[j] = O[1, j]
        go = O[2, j]
        if go < 0:
            for q in range(nwords):
                data[j, q] = 0
        else:
            gw = go >> 3
            for q in range(nwords):
                data[j, q] = words[gw + q]


@njit(cache=True, nogil=True)
def run_row(T, U, m, use_m, lo, n, nlanes, committed, starts, ends, heap_base, heap, hbytes, lanes, soff, goff,
            data, grp, res, memo, count, c0, c1, c2, c3, b0, b1, b2, b3, K, O, ORES):
    """Each op of table T in order (module docstring): the copies' active lanes one after another
    in lanes, soff, data and grp (as `_plan` gives a copy's, and each lane's commits so far: one
    pending entry for them all, in issue order), copy k's counts in res[k] (as `_plan`'s); the
    counters c* (b* for copies that bypass the L1) added to where `count`. (-1, or the position
    of the first copy that does not plan: it and the ops after it not run; the lanes written).
    Copy k's last placement is K[k], O[k], ORES[k] (`kept_placement.unchanged`): a copy whose inputs are bit
    for bit its last run's takes that run's placement and counts (`_recall`; a loop's next
    stage, a small kernel's next launch), the rest runs `_plan`."""
    g = np.empty(n, np.bool_)
    cur = 0
    lim = np.empty(n, np.int64)
    no32 = np.empty(1, np.uint32)
    no64 = np.empty(1, np.uint64)
    words = carray(_pointer(U64(heap.ctypes.data)), (hbytes >> 3,), np.uint64)
    k = 0
    for r in range(T.shape[0]):
        row = T[r]
        if row[R_KIND] == U64(1):              # commit: every active lane of the span
            for i in range(n):
                if not use_m or m[i]:
                    committed[lo + i] += 1
            continue
        res[k, 0] = 0
        gk = row[R_GUARD]
        if gk == U64(2):
            k += 1
            continue
        use_g = gk == U64(1)
        if use_g:
            guard_of(row, R_GUARD_AT, R_GUARD_NEG, lo, n, nlanes, g)
        sk = row[R_SIZE_KIND]
        if sk == U64(1):
            sz = carray(_pointer(row[R_SIZE]), (nlanes,), np.uint32)
            for i in range(n):
                lim[i] = np.int64(sz[lo + i])
        elif sk == U64(2):
            for i in range(n):
                lim[i] = np.int64(row[R_SIZE])
        if row[R_SRC_UNIFORM]:
            sbase, sval = no64, row[R_SRC]
        else:
            sbase, sval = carray(_pointer(row[R_SRC]), (nlanes,), np.uint64), U64(0)
        duni = row[R_DST_UNIFORM] != U64(0)
        dval = U64(0)
        if duni:
            dval = row[R_DST]
        if row[R_CONSTS + 1] != U64(0):          # (a copy that bypasses the L1: its own counters)
            k0, k1, k2, k3 = b0, b1, b2, b3
        else:
            k0, k1, k2, k3 = c0, c1, c2, c3
        suni = row[R_SRC_UNIFORM] != U64(0)
        use_lim = sk != U64(0)
        P = row[R_CONSTS:R_CONSTS + 5]
        st = OK
        if row[R_DST_WIDE]:
            dbase = no64
            if not duni:
                dbase = carray(_pointer(row[R_DST]), (nlanes,), np.uint64)
            kept = unchanged(K[k], U, dbase, dval, duni, sbase, sval, suni, m, use_m, g, use_g, lim, use_lim, lo,
                              n, starts, ends, heap_base, hbytes)
            if kept != 1:
                st = _plan(P, U, dbase, dval, duni, sbase, sval, suni, m, use_m, g, use_g, lim, use_lim, lo, n,
                           starts, ends, heap_base, words, hbytes, 3, lanes[cur:], soff[cur:], goff, data[cur:],
                           res[k], memo, count, k0, k1, k2, k3)
        else:
            dbase32 = no32
            if not duni:
                dbase32 = carray(_pointer(row[R_DST]), (nlanes,), np.uint32)
            kept = unchanged(K[k], U, dbase32, dval, duni, sbase, sval, suni, m, use_m, g, use_g, lim, use_lim,
                              lo, n, starts, ends, heap_base, hbytes)
            if kept != 1:
                st = _plan(P, U, dbase32, dval, duni, sbase, sval, suni, m, use_m, g, use_g, lim, use_lim, lo, n,
                           starts, ends, heap_base, words, hbytes, 3, lanes[cur:], soff[cur:], goff, data[cur:],
                           res[k], memo, count, k0, k1, k2, k3)
        na = ORES[k, 0]
        if kept == 1:                            # placed as in its last run: its outputs and counts again
            _recall(O[k], ORES[k], lanes[cur:], soff[cur:], data[cur:], words, np.int64(P[_P_SIZE]) >> 3)
            for q in range(5):
                res[k, q] = ORES[k, q]
            K[k, K_VALID] = 1
            if count and na:
                at = np.int64(P[_P_INDEX])
                k0[at] += ORES[k, 1]
                k1[at] += ORES[k, 1]
                k2[at] += ORES[k, 3]
                k3[at] += ORES[k, 4]
        elif st != OK:
            return r, cur
        elif kept == 0:                          # remembered for the next run with these inputs
            na = res[k, 0]
            for j in range(na):
                O[k, 0, j] = lanes[cur + j]
                O[k, 1, j] = soff[cur + j]
                O[k, 2, j] = goff[lanes[cur + j] - lo]
            for q in range(5):
                ORES[k, q] = res[k, q]
            K[k, K_VALID] = 1
        for j in range(cur, cur + res[k, 0]):
            grp[j] = committed[lanes[j]]
        cur += res[k, 0]
        k += 1
    return -1, cur


NO_BOOL = np.zeros(1, np.bool_)
NO_I64 = np.zeros(1, np.int64)
NO_ROWS = (NO_I64,) * 4


def _fits(op) -> bool:
    """Whether the table takes copy or commit `op` (module docstring)."""
    if type(op) is CpGroupOp:
        return op.kind == "commit" and op.guard is None
    return type(op) is FastCpAsyncOp and op.size in (8, 16) and op.size_src is not None \
        and op.src_base_[1].itemsize == 8


def copy_runs(ops: list) -> list:
    """`ops` with each row of at least two copies (commits between them and after them
    included) one `CopyRunOp`."""
    out, row = [], []

    def close():
        copies = sum(type(o) is FastCpAsyncOp for o in row)
        if copies > 1 and len({o.size for o in row if type(o) is FastCpAsyncOp}) == 1:
            out.append(CopyRunOp(row))
        else:
            out.extend(row)
    for op in ops:
        if _fits(op) and (row or type(op) is FastCpAsyncOp):
            row.append(op)
            continue
        close()
        row = []
        out.append(op)
    close()
    return out


class CopyRunOp(Op):
    """A row of cp.async copies and commits run as one pass (module docstring)."""
    __slots__ = ("ops", "table", "copies", "size", "reads", "kinds", "placed")

    def __init__(self, ops: list):
        self.ops = tuple(ops)
        first = next(o for o in ops if type(o) is FastCpAsyncOp)
        self.index, self.guard, self.info, self.size = first.index, None, first.info, first.size
        self.copies = [o for o in ops if type(o) is FastCpAsyncOp]
        self.kinds = (any(o.bypass for o in self.copies), any(not o.bypass for o in self.copies))  # (bypass, plain)
        t = np.zeros((len(ops), WORDS), np.uint64)
        for r, op in enumerate(ops):
            row = t[r]
            if type(op) is CpGroupOp:
                row[R_KIND] = 1
                continue
            row[R_CONSTS:R_CONSTS + 5] = op.consts
            slot, view, const = op.dst_base
            row[R_DST_WIDE] = view.itemsize == 8
            if slot < 0:
                row[R_DST], row[R_DST_UNIFORM] = const, 1
            slot, _, const = op.src_base_
            if slot < 0:
                row[R_SRC], row[R_SRC_UNIFORM] = const, 1
            if op.size_src and op.size_src[0] < 0:
                row[R_SIZE_KIND], row[R_SIZE] = 2, op.size_src[1]
            elif op.size_src:
                row[R_SIZE_KIND] = 1
        self.table = t
        self.placed = None              # (span lanes, per stage `run_row`'s K, O, ORES: `kept_placement.stage`)
        reads = []                      # every register the table is filled from (`kept_table`)
        for op in self.copies:
            reads += [op.dst_base[0], op.src_base_[0]] + ([op.size_src[0]] if op.size_src else []) + \
                ([op.guard[0]] if op.guard is not None else [])
        self.reads = tuple(sorted({r for r in reads if r >= 0}))

    def run(self, x):
        lsu = x.lsu
        heap = lsu.mem.global_heap
        hd = heap.data
        if x.san is not None or x.record is not None or getattr(lsu, "_bank_shift", -1) < 0 or heap.aliases \
                or hd.size % 8 or heap.base % 8 or not hd.flags.c_contiguous:     # (`_word` 8: the table's words)
            for op in self.ops:
                op.run(x)
            return
        st = x.state
        T = kept_table(st, self, self.table, self.reads)
        if T is None:
            rec = st.segment_runs[self] = self._filled(st)
            T = rec[1]
        n = st.hi - st.lo
        nc = len(self.copies)
        words = self.size >> 3
        out = np.empty((3, nc * n), np.int64)           # the copies' lanes, shared offsets, groups
        goff = np.empty(n, np.int64)
        data = np.empty((nc * n, words), np.uint64)
        res = np.zeros((nc, 5), np.int64)
        unit = _unit(x)
        bypass, plain = self.kinds
        c = x.counters.present_rows(FIELDS) if plain else None
        b = x.counters.present_rows(BYPASS_FIELDS) if bypass else None
        count = (not plain or c is not None) and (not bypass or b is not None)
        c = NO_ROWS if c is None else c
        b = NO_ROWS if b is None else b
        m = st.m
        placed = stage(x, self, n, self._placement)
        stop, na = run_row(T, lsu.unit_params(), NO_BOOL if m is None else m, m is not None, st.lo, n, st.nlanes,
                           unit.committed, heap._starts, heap._ends, U64(heap.base), hd, hd.size, out[0], out[1],
                           goff, data, out[2], res, WARP_MEMO, count, c[0], c[1], c[2], c[3], b[0], b[1], b[2], b[3],
                           *placed)
        done = len(self.ops) if stop < 0 else stop
        if na:                                  # one pending entry: the copies' lanes in issue order
            w = unit.words.get(self.size)
            if w is None:
                w = unit.words[self.size] = _word(self.size, lsu.shared, lsu.shared_stride)
            unit.pending.append((out[0, :na], out[2, :na], out[1, :na], None, data[:na].view(w),
                                 w.itemsize.bit_length() - 1))
        if not count:
            k = 0
            for op in self.ops[:done]:
                if type(op) is CpGroupOp:
                    continue
                active, nwarps, _, sectors, fill = res[k].tolist()
                if active:
                    x.counters.add_extras(op.index, BYPASS_FIELDS if op.bypass else FIELDS,
                                          (nwarps, nwarps, sectors, fill))
                k += 1
        for op in self.ops[done:]:              # from the copy that did not plan: one by one
            op.run(x)

    def _placement(self, n: int) -> tuple:
        """A kept placement of the row's copies over `n` lanes (`run_row`'s K, O, ORES), none kept yet."""
        nc, w = len(self.copies), (n if n <= KEPT_LANES else 0)
        return np.zeros((nc, K_LANES + 5 * w if w else 0), U64), np.empty((nc, 3, w), np.int64), \
            np.zeros((nc, 5), np.int64)

    def _filled(self, st) -> tuple:
        """(`memory_run.kept_table`'s record: the registers' objects, the table with this run's
        register addresses, uniform values and guards filled in, the constant table)."""
        regs = st.regs
        T = self.table.copy()
        for r, op in enumerate(self.ops):
            if type(op) is CpGroupOp:
                continue
            row = T[r]
            for (slot, view, _), at, uniform in ((op.dst_base, R_DST, R_DST_UNIFORM), (op.src_base_, R_SRC,
                                                                                       R_SRC_UNIFORM)):
                if slot >= 0:
                    a = register_address(st, slot)
                    if a is None:
                        row[at], row[uniform] = int(np.asarray(regs[slot]).view(view)), 1
                    else:
                        row[at] = a
            if op.size_src and op.size_src[0] >= 0:
                s = op.size_src[0]
                a = register_address(st, s)
                if a is None:
                    row[R_SIZE_KIND], row[R_SIZE] = 2, int(np.asarray(regs[s]).view(np.uint32))
                else:
                    row[R_SIZE] = a
            if op.guard is not None:
                gs, neg = op.guard
                a = register_address(st, gs)
                if a is None:
                    if bool(regs[gs]) == bool(neg):
                        row[R_GUARD] = 2
                else:
                    row[R_GUARD], row[R_GUARD_AT], row[R_GUARD_NEG] = 1, a, neg
        return tuple(map(regs.__getitem__, self.reads)), T, self.table
