"""A plain load or store of the fast load/store unit in one compiled call: the access placed,
checked and counted (`lsu_kernels.place_*`), its counters added and its data moved, for the
common case (no step record, no sanitizer, no merged SASS access, registers as wide as the
access type). The separate calls of `FastLoadStoreUnit.fast_load`/`fast_store` did the same
work in five to eight numpy and compiled calls, each paying Python's call overhead; a small
launch (one block of a Triton kernel) spends most of its memory operations' time there.

An op's constants (its space, offset, size, alignment, lane group, counter rows) are one
uint64 array made once per op and bank geometry (`op_params`); a batch's (its shared and
local windows) one array per load/store unit (`unit_params`). Counters are added to the
`Counters` rows directly (`Counters.rows`, the same arrays `add_shared`/`add_memory` add to).
On a lane that would fault nothing is written and FAIL returned: the caller runs the
reference unit, which reports the fault exactly as always.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from gpusim.functional.fastpath.lsu_kernels import FAIL, OK, place_heap, place_local, place_shared

U64 = np.uint64

SHARED, HEAP, LOCAL = 0, 1, 2
# op_params fields
P_SPACE, P_OFFSET, P_NBYTES, P_ALIGN, P_GROUP, P_SHIFT, P_ROW_REQ, P_ROW_CNT, P_DELTA, P_STORE = range(10)
# unit_params fields
U_SHARED_BYTES, U_SHARED_STRIDE, U_LANES_PER_CTA, U_SHARED_LEN, U_BANKS, U_BANK_SHIFT, U_LOCAL_BYTES, \
    U_LOCAL_STRIDE, U_LOCAL_LEN = range(9)


@njit(cache=True, nogil=True, inline="always")
def _place(P, U, base, bval, buniform, m, use_m, g, use_g, lo, n, starts, ends, heap_base, heap_len, offs, res):
    space = P[P_SPACE]
    offset = P[P_OFFSET]
    nbytes = np.int64(P[P_NBYTES])
    align = np.int64(P[P_ALIGN])
    if space == SHARED:
        return place_shared(base, bval, buniform, offset, m, use_m, g, use_g, lo, n, nbytes, align,
                            U[U_SHARED_BYTES], U[U_SHARED_STRIDE], np.int64(U[U_LANES_PER_CTA]),
                            np.int64(U[U_SHARED_LEN]), np.int64(U[U_BANKS]), np.int64(U[U_BANK_SHIFT]), offs, res,
                            np.empty(1, np.int64), False, np.int64(P[P_GROUP]), P[P_STORE] != U64(0), nbytes)
    if space == LOCAL:
        return place_local(base, bval, buniform, offset, m, use_m, g, use_g, lo, n, nbytes, align,
                           U[U_LOCAL_BYTES], U[U_LOCAL_STRIDE], np.int64(U[U_LOCAL_LEN]), offs, res)
    return place_heap(base, bval, buniform, offset, m, use_m, g, use_g, lo, n, nbytes, align, starts, ends,
                      P[P_DELTA], heap_base, heap_len, offs, res)


@njit(cache=True, nogil=True, inline="always")
def _count(P, res, rows, index):
    if res[0]:
        rows[np.int64(P[P_ROW_REQ]), index] += res[1]
        rows[np.int64(P[P_ROW_CNT]), index] += res[2]


@njit(cache=True, nogil=True, inline="always")
def _placed(P, U, base, bval, buniform, m, use_m, g, use_g, lo, n, starts, ends, heap_base, heap_len, offs, res,
            rows, index):
    """`_place`, and where it places every lane, the op's counts added (`_count`)."""
    status = _place(P, U, base, bval, buniform, m, use_m, g, use_g, lo, n, starts, ends, heap_base, heap_len,
                    offs, res)
    if status == OK:
        _count(P, res, rows, index)
    return status


@njit(cache=True, nogil=True)
def store(P, U, base, bval, buniform, m, use_m, g, use_g, lo, n, starts, ends, heap_base, heap_len, dst,
          v0, v1, v2, v3, nv, uniform, offs, res, rows, index):
    """Place, count and write a store of `nv` elements (v0.. v3: each over the span, or one value
    where bit k of `uniform` is set) into `dst` (the space's store as unsigned words of the access
    type); elements in order, each one's lanes in increasing order, as `lsu_kernels.scatter`."""
    status = _placed(P, U, base, bval, buniform, m, use_m, g, use_g, lo, n, starts, ends, heap_base, heap_len,
                     offs, res, rows, index)
    if status != OK:
        return status
    shift = np.int64(P[P_SHIFT])
    for k in range(nv):
        v = v0 if k == 0 else v1 if k == 1 else v2 if k == 2 else v3
        one = (uniform >> k) & 1
        for i in range(n):
            o = offs[i]
            if o >= 0:
                dst[(o >> shift) + k] = v[0] if one else v[i]
    return OK


@njit(cache=True, nogil=True)
def load(P, U, base, bval, buniform, m, use_m, g, use_g, lo, n, starts, ends, heap_base, heap_len, src,
         d0, d1, d2, d3, present, offs, res, rows, index):
    """Place, count and read a load of up to four elements into d0.. d3 (registers over the batch
    as unsigned words of the access type; element k only where bit k of `present` is set) from
    `src` (the space's store as those words)."""
    status = _placed(P, U, base, bval, buniform, m, use_m, g, use_g, lo, n, starts, ends, heap_base, heap_len,
                     offs, res, rows, index)
    if status != OK:
        return status
    shift = np.int64(P[P_SHIFT])
    for k in range(4):
        if not (present >> k) & 1:
            continue
        d = d0 if k == 0 else d1 if k == 1 else d2 if k == 2 else d3
        for i in range(n):
            o = offs[i]
            if o >= 0:
                d[lo + i] = src[(o >> shift) + k]
    return OK


__all__ = ["FAIL", "OK", "load", "store"]
