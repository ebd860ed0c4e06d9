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

from gpusim.functional.fastpath import lsu_kernels as K
from gpusim.functional.lsu import LoadStoreUnit, typed_view
from gpusim.functional.shared_banks import lane_group
from isa.memory_map import CONST_WINDOW_BASE
from isa.types import unsigned_dtype

U64 = np.uint64
NO_BOOL = np.zeros(1, np.bool_)
NO_U64 = np.zeros(1, np.uint64)
NO_I64 = np.zeros(1, np.int64)
SHIFT = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}


class FastLoadStoreUnit(LoadStoreUnit):
    """`LoadStoreUnit` plus `fast_load` / `fast_store` (see module docstring)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        # the compiled wavefront count holds a warp's banks in a 64-bit mask
        self._bank_shift = SHIFT.get(self.bank_width, -1) if self.banks <= 64 else -1

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
