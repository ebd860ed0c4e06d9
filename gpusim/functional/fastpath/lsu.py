"""The fast load/store unit: the reference unit (`gpusim.functional.lsu`) with compiled
loads and stores for the common case.

A load or store with an explicit state space (`.global`, `.shared`, `.local`, `.const`
loads) whose address is a register (32- or 64-bit), a symbol or an immediate, plus an
offset, runs through `lsu_kernels`: one compiled pass resolves, checks and counts the
access over the step's lanes, one pass per vector element moves the data. Everything
the reference unit records is produced the same way: the counters (requests, sectors,
wavefronts, added per instruction with the same values), and the step record's
`Access` (lanes and byte offsets, as uint64) when a timing model or viewer records.

The reference unit does the work (and reports the fault, exactly as always) when the
compiled pass finds a lane that faults, when a sanitizer tool is attached (its hooks
see every access), for generic addresses, for heaps with aliases (captured device
arrays), for param loads and for atomics.
"""
from __future__ import annotations

import numpy as np

from gpusim.functional.counters import FIELDS
from gpusim.functional.fastpath import lsu_fused as F
from gpusim.functional.fastpath import lsu_kernels as K
from gpusim.functional.fastpath.memops import base_of
from gpusim.functional.lsu import LoadStoreUnit, typed_view
from gpusim.functional.shared_banks import lane_group
from isa.memory_map import CONST_WINDOW_BASE
from isa.types import unsigned_dtype

U64 = np.uint64
NO_BOOL = np.zeros(1, np.bool_)
NO_U64 = np.zeros(1, np.uint64)
NO_I64 = np.zeros(1, np.int64)
SHIFT = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}
ROW = {f: i - 2 for i, f in enumerate(FIELDS) if i >= 2}       # a counter field's row of `Counters.rows`
SPACE = {"shared": F.SHARED, "local": F.LOCAL, "global": F.HEAP, "const": F.HEAP}


class FastLoadStoreUnit(LoadStoreUnit):
    """`LoadStoreUnit` plus `fast_load` / `fast_store` (see module docstring)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        # the compiled wavefront count holds a warp's banks in a 64-bit mask
        self._bank_shift = SHIFT.get(self.bank_width, -1) if self.banks <= 64 else -1
        self._unit_params = None                # `lsu_fused`'s constants of this batch, made when first asked
        self._views: dict = {}                  # (space, word type) -> (store, its typed view)

    def unit_params(self) -> np.ndarray:
        """This batch's shared and local windows as `lsu_fused.store`/`load` take them."""
        u = self._unit_params
        if u is None:
            u = self._unit_params = np.array(
                [self.shared_bytes, self.shared_stride, self.x.wpc * 32, self.shared.size, self.banks,
                 max(self._bank_shift, 0), self.local_bytes, self.local_stride, self.local.size], np.uint64)
        return u

    def op_params(self, op) -> np.ndarray | None:
        """`op`'s constants as `lsu_fused` takes them (made once per op and bank geometry), or None
        where `lsu_fused` does not do it (atomics; shared memory with banks the compiled count
        cannot hold; vector loads into registers wider than the access type)."""
        key = (self.banks, self.bank_width)
        hit = op.fused.get(key, False)
        if hit is not False:
            return hit
        p = None
        info, space = op.info, op.space
        dsts = getattr(op, "dsts", None)
        elems = len(dsts) if dsts is not None else len(op.srcs)
        if not info.is_atomic and elems <= 4 and space in SPACE and (space != "shared" or self._bank_shift >= 0) \
                and (dsts is None or all(d is None or self.x.state.reg_dtypes[d].itemsize == op.dt.itemsize
                                         for d in dsts)):
            nbytes = info.access_bytes
            what = "st" if info.is_store else "ld"
            req, cnt = (f"shared_{what}_requests", f"shared_{what}_wavefronts") if space == "shared" else \
                (f"{space}_{what}_requests", f"{space}_{what}_sectors")
            if req in ROW and cnt in ROW:
                p = np.array([SPACE[space], int(op.offset), nbytes,
                              nbytes if nbytes in (1, 2, 4, 8, 16) else op.dt.itemsize,
                              lane_group(nbytes, self.banks, self.bank_width), SHIFT[op.dt.itemsize], ROW[req],
                              ROW[cnt], CONST_WINDOW_BASE if space == "const" else 0, int(info.is_store)], np.uint64)
        op.fused[key] = p
        return p

    def _store_of(self, op):
        """(the space's store as unsigned words of `op`'s access type, heap starts, ends, base,
        length) for `lsu_fused`, or None for a heap with aliases (the reference unit translates)."""
        space = op.space
        if space == "shared":
            buf, starts, ends, hb = self.shared, NO_U64, NO_U64, U64(0)
        elif space == "local":
            buf, starts, ends, hb = self.local, NO_U64, NO_U64, U64(0)
        else:
            heap = self.mem.global_heap if space == "global" else self.mem.const_heap
            if heap.aliases:
                return None
            buf, starts, ends, hb = heap.data, heap._starts, heap._ends, U64(heap.base)
        key = (space, op.uview)
        hit = self._views.get(key)
        if hit is None or hit[0] is not buf:
            hit = self._views[key] = (buf, typed_view(buf, op.uview))
        return hit[1], starts, ends, hb, buf.size

    def _fused_load(self, op, p, g) -> bool | None:
        """`fast_load` in one compiled call (`lsu_fused.load`); None where it does not apply."""
        where = self._store_of(op)
        if where is None:
            return None
        src, starts, ends, hb, hl = where
        x = self.x
        st = x.state
        whole = st.whole and g is None
        ds = [None] * 4
        present = 0
        first = None
        for k, d in enumerate(op.dsts):
            if d is None:
                continue
            cur = st.regs[d]
            if type(cur) is not np.ndarray:
                cur = st.regs[d] = st.array_for(d, None if whole else cur)
            ds[k] = v = cur.view(op.uview)
            first = v if first is None else first
            present |= 1 << k
        if first is None:
            return None
        n = st.hi - st.lo
        m = st.m
        base, bval, buni = base_of(st, op.bslot, op.bview, op.bconst)
        res = np.zeros(3, np.int64)
        if F.load(p, self.unit_params(), base, bval, buni, NO_BOOL if m is None else m, m is not None,
                  NO_BOOL if g is None else g, g is not None, st.lo, n, starts, ends, hb, hl, src,
                  first if ds[0] is None else ds[0], first if ds[1] is None else ds[1],
                  first if ds[2] is None else ds[2], first if ds[3] is None else ds[3], present,
                  np.empty(n, np.int64), res, x.counters.rows, op.index) != K.OK:
            return False                         # a lane would fault: the reference unit reports it
        return True

    def _fused_store(self, op, p, vals, g) -> bool | None:
        """`fast_store` in one compiled call (`lsu_fused.store`); None where it does not apply."""
        dt = op.dt
        words = []
        uniform = 0
        for k, v in enumerate(vals):
            if type(v) is not np.ndarray:
                v = np.asarray(v).reshape(1)
                uniform |= 1 << k
            if v.dtype != dt:
                return None
            words.append(v.view(op.uview))
        where = self._store_of(op)
        if where is None or not words:
            return None
        dst, starts, ends, hb, hl = where
        x = self.x
        st = x.state
        n = st.hi - st.lo
        m = st.m
        base, bval, buni = base_of(st, op.bslot, op.bview, op.bconst)
        w0 = words[0]
        nv = len(words)
        res = np.zeros(3, np.int64)
        if F.store(p, self.unit_params(), base, bval, buni, NO_BOOL if m is None else m, m is not None,
                   NO_BOOL if g is None else g, g is not None, st.lo, n, starts, ends, hb, hl, dst, w0,
                   words[1] if nv > 1 else w0, words[2] if nv > 2 else w0, words[3] if nv > 3 else w0, nv, uniform,
                   np.empty(n, np.int64), res, x.counters.rows, op.index) != K.OK:
            return False
        return True

    def _fast_place(self, op, g):
        """Resolve, check and count `op` over the step's active lanes (and guard `g`).
        Returns (buffer, byte offsets per span lane or -1, active lane count), or None
        when the reference unit must do the access."""
        x = self.x
        if x.san is not None:
            return None
        st = x.state
        space = op.space
        if op.bslot >= 0:
            v = st.regs[op.bslot]
            if type(v) is np.ndarray:
                base, bval, buni = v.view(op.bview), U64(0), False
            else:
                base, bval, buni = NO_U64, U64(int(np.asarray(v).view(op.bview))), True
        else:
            base, bval, buni = NO_U64, op.bconst, True
        m = st.m
        n = st.hi - st.lo
        offs = np.empty(n, np.int64)
        res = np.zeros(3, np.int64)
        nbytes = op.info.access_bytes
        align = nbytes if nbytes in (1, 2, 4, 8, 16) else op.dt.itemsize
        lanes = (base, bval, buni, op.offset, NO_BOOL if m is None else m, m is not None,
                 NO_BOOL if g is None else g, g is not None, st.lo, n, nbytes, align)
        per_warp = None
        if space == "shared":
            if self._bank_shift < 0:
                return None
            buf = self.shared
            keep = x.record is not None
            per_warp = np.full((n + 31) >> 5, -1, np.int64) if keep else NO_I64
            cb = self.count_bytes.get(op.index, nbytes)           # the SASS access's bytes a lane (merged)
            group = 32 if op.info.is_atomic else lane_group(cb, self.banks, self.bank_width)
            status = K.place_shared(*lanes, U64(self.shared_bytes), U64(self.shared_stride), x.wpc * 32, buf.size,
                                    self.banks, self._bank_shift, offs, res, per_warp, keep,
                                    group, op.info.is_store, cb)
            if cb > nbytes and res[0] and offs[offs >= 0][0] % cb:
                res[1] = res[2] = 0          # the merged instruction counts once, on its aligned first access
        elif space == "local":
            buf = self.local
            status = K.place_local(*lanes, U64(self.local_bytes), U64(self.local_stride), buf.size, offs, res)
        else:
            heap = self.mem.global_heap if space == "global" else self.mem.const_heap
            if heap.aliases:
                return None
            buf = heap.data
            status = K.place_heap(*lanes, heap._starts, heap._ends, U64(CONST_WINDOW_BASE if space == "const" else 0),
                                  U64(heap.base), buf.size, offs, res)
        if status != K.OK:
            return None
        nactive, nreq, total = int(res[0]), int(res[1]), int(res[2])
        if nactive:
            c = x.counters
            if op.info.is_atomic:
                what = "atom" if op.opname == "atom" else "red"
            else:
                what = "st" if op.info.is_store else "ld"
            if space == "shared":
                c.add_shared(op.index, what, nreq, total)
            else:
                c.add_memory(op.index, space, what, nreq, total)
            if x.record is not None:
                # shared: the trace's wavefronts of each span warp (-1: none), counted here already
                x.trace_span_access(op, space, offs, None if per_warp is None else (st.lo >> 5, per_warp))
        return buf, offs, nactive

    def fast_load(self, op, g) -> bool:
        """Do load `op` under guard `g` (None, or a bool array over the span); False if
        the reference unit must."""
        if self.x.record is None and self.x.san is None and not self.count_bytes:
            p = self.op_params(op)
            if p is not None:
                done = self._fused_load(op, p, g)
                if done is not None:
                    return done
        placed = self._fast_place(op, g)
        if placed is None:
            return False
        buf, offs, nactive = placed
        if not nactive:
            return True
        x = self.x
        st = x.state
        dt = op.dt
        src = typed_view(buf, op.uview)
        shift = SHIFT[dt.itemsize]
        whole = st.whole and nactive == st.nlanes
        for k, d in enumerate(op.dsts):
            if d is None:
                continue
            rd = st.reg_dtypes[d]
            cur = st.regs[d]
            if type(cur) is not np.ndarray:
                cur = st.regs[d] = st.array_for(d, None if whole else cur)
            dst = cur.view(unsigned_dtype(rd.itemsize))
            if dt.kind == "i" and rd.itemsize > dt.itemsize:
                K.gather_signed(dst, src, offs, st.lo, k, shift, 8 * dt.itemsize)
            else:
                K.gather(dst, src, offs, st.lo, k, shift)
        return True

    def fast_store(self, op, vals, g) -> bool:
        """Do store `op` of `vals` (one per vector element: arrays over the span or
        scalars, of the access type) under guard `g`; False if the reference unit must."""
        if self.x.record is None and self.x.san is None and not self.count_bytes:
            p = self.op_params(op)
            if p is not None:
                done = self._fused_store(op, p, vals, g)
                if done is not None:
                    return done
        dt = op.dt
        words = []
        for v in vals:
            a = v if type(v) is np.ndarray else np.asarray(v).reshape(1)
            if a.dtype != dt:
                return False
            words.append(a.view(op.uview))
        placed = self._fast_place(op, g)
        if placed is None:
            return False
        buf, offs, nactive = placed
        if not nactive:
            return True
        dst = typed_view(buf, op.uview)
        shift = SHIFT[dt.itemsize]
        if len(words) > 1 and all(type(v) is np.ndarray for v in vals):
            K.scatter_rows(dst, offs, shift, np.stack(words))        # a vector's elements: one call
            return True
        for k, w in enumerate(words):
            K.scatter(dst, offs, k, shift, w, type(vals[k]) is not np.ndarray)
        return True
