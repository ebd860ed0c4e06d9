"""Compiled per-warp reductions of one step's memory access for the functional streams (`access_payloads.py`):
what the numpy code there computes with `np.unique` over the whole batch, in one pass
over the lanes, warp by warp.

- `warp_wavefronts`: shared-memory wavefronts of each warp (distinct words per bank,
  maximum over banks; a lane of `nwords` words touches consecutive words), as
  `gpusim.functional.shared_banks.shared_wavefronts`;
- `warp_group_wavefronts`: the same for a wide access, its lanes served in groups
  (`gpusim.functional.shared_banks.shared_wavefronts` with lanes);
- `warp_sectors`: each warp's distinct 32-byte sectors in increasing order, and for a
  store the OR of its lanes' byte masks per sector.

Inputs: `rel` (each element's warp, relative to the step's first, non-decreasing: the
lanes of an access come in increasing order), and per element the address. Outputs
are in warp order, so the trace hands each warp its slice.

Compiled once per machine (numba, `cache=True`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from gpusim.functional.fastpath.lsu_kernels import grouped_wavefronts


@njit(cache=True, nogil=True)
def _count_warps(rel):
    """How many warps `rel` (non-decreasing warp of each element) holds."""
    nw = 0
    for i in range(len(rel)):
        if i == 0 or rel[i] != rel[i - 1]:
            nw += 1
    return nw


@njit(cache=True, nogil=True)
def warp_wavefronts(rel, words, nwords, banks):
    """(warps, wavefronts): the warps present in `rel` (in order) and the wavefronts each
    takes; `words` the first bank word of each lane (bank width units), `nwords` words
    per lane."""
    n = len(rel)
    nw = _count_warps(rel)
    warps = np.empty(nw, np.int64)
    wf = np.empty(nw, np.int64)
    cap = 32 * nwords if n else 1
    lists = np.empty((banks, cap), np.int64)
    counts = np.zeros(banks, np.int64)
    bmask = banks - 1
    k = -1
    best = 0
    i = 0
    while i < n:
        w = rel[i]
        k += 1
        warps[k] = w
        counts[:] = 0
        best = 0
        while i < n and rel[i] == w:
            base = words[i]
            for q in range(nwords):
                word = base + q
                b = word & bmask
                c = counts[b]
                new = True
                for t in range(c):
                    if lists[b, t] == word:
                        new = False
                        break
                if new:
                    if c == lists.shape[1]:          # more lanes than a warp's (never: rel groups warps)
                        grown = np.empty((banks, 2 * c), np.int64)
                        grown[:, :c] = lists
                        lists = grown
                    lists[b, c] = word
                    counts[b] = c + 1
                    if c + 1 > best:
                        best = c + 1
            i += 1
        wf[k] = best
    return warps, wf


@njit(cache=True, nogil=True)
def warp_group_wavefronts(rel, lanes, words, nwords, banks, group, store):
    """(warps, wavefronts) of a wide access (`gpusim.functional.shared_banks.shared_wavefronts` with
    lanes): per warp present in `rel`, its lanes (`lanes`, in increasing order within a warp)
    served in groups of `group`; `words` the first bank word of each lane, `nwords` a lane."""
    n = len(rel)
    nw = _count_warps(rel)
    warps = np.empty(nw, np.int64)
    wf = np.empty(nw, np.int64)
    cap = 32 * nwords
    buf = np.empty(cap, np.uint64)
    grp = np.empty(cap, np.int64)
    lists = np.empty((banks, cap), np.uint64)
    counts = np.zeros(banks, np.int64)
    bmask = np.uint64(banks - 1)
    k = -1
    i = 0
    while i < n:
        w = rel[i]
        k += 1
        warps[k] = w
        m = 0
        while i < n and rel[i] == w:
            g = (lanes[i] & 31) // group
            for q in range(nwords):
                buf[m] = np.uint64(words[i] + q)
                grp[m] = g
                m += 1
            i += 1
        wf[k] = grouped_wavefronts(buf, grp, m, store, bmask, lists, counts)[0]
    return warps, wf


@njit(cache=True, nogil=True)
def warp_sectors(rel, sectors, lane_masks, store):
    """(warps, starts, values, masks): per warp present in `rel` (in order) its distinct
    sectors in increasing order, values[starts[k]:starts[k + 1]]; with `store`, masks[j]
    the OR of `lane_masks` of the elements in sector values[j] (else masks is empty)."""
    n = len(rel)
    nw = _count_warps(rel)
    warps = np.empty(nw, np.int64)
    starts = np.empty(nw + 1, np.int64)
    values = np.empty(n, np.uint64)
    masks = np.empty(n if store else 0, np.uint32)
    buf = np.empty(max(n, 1), np.uint64)
    mbuf = np.empty(max(n, 1), np.uint32)
    out = 0
    k = -1
    i = 0
    while i < n:
        w = rel[i]
        k += 1
        warps[k] = w
        starts[k] = out
        m = 0
        while i < n and rel[i] == w:             # insertion into the sorted distinct sectors so far
            s = sectors[i]
            lm = lane_masks[i] if store else np.uint32(0)
            j = m
            while j > 0 and buf[j - 1] > s:
                j -= 1
            if j > 0 and buf[j - 1] == s:
                if store:
                    mbuf[j - 1] |= lm
            else:
                for t in range(m, j, -1):
                    buf[t] = buf[t - 1]
                    if store:
                        mbuf[t] = mbuf[t - 1]
                buf[j] = s
                if store:
                    mbuf[j] = lm
                m += 1
            i += 1
        for t in range(m):
            values[out + t] = buf[t]
            if store:
                masks[out + t] = mbuf[t]
        out += m
    starts[nw] = out
    return warps, starts, values[:out], masks[:out] if store else masks


@njit(cache=True, nogil=True)
def span_sectors(offs, lo, base, nbytes, store):
    """`warp_sectors` of a global or const access given as the compiled load/store unit
    records it: offs[i] the byte offset of span lane lo + i (-1: inactive), `base` added to
    make the address; a store's lanes write `nbytes` bytes. Warps are batch warp ids."""
    n = 0
    for i in range(len(offs)):
        if offs[i] >= 0:
            n += 1
    warps = np.empty(n, np.int64)
    sectors = np.empty(n, np.uint64)
    lane_masks = np.empty(n if store else 0, np.uint32)
    full = np.uint64((1 << nbytes) - 1) if store else np.uint64(0)
    k = 0
    for i in range(len(offs)):
        o = offs[i]
        if o >= 0:
            addr = np.uint64(o) + base
            warps[k] = (lo + i) >> 5
            sectors[k] = addr >> np.uint64(5)
            if store:
                lane_masks[k] = np.uint32((full << (addr & np.uint64(31))) & np.uint64(0xFFFFFFFF))
            k += 1
    return warp_sectors(warps, sectors, lane_masks, store)
