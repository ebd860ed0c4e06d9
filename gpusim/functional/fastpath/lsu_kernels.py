"""Compiled kernels of the fast load/store unit: one pass over a step's lanes resolves,
checks and counts a memory instruction, one pass per vector element moves its data.

The `place_*` kernels do for every active lane what `gpusim.functional.lsu.
LoadStoreUnit._place` and `_count` do with numpy: the byte offset of the access in its
space's backing store (global/const: inside one allocation of the heap; shared: inside
the block's shared size; local: inside the thread's frame), the alignment check, and
per warp what the counters take: a request, and distinct 32-byte sectors (global,
const; for local, sectors of the hardware layout that interleaves each 4-byte word
across the warp's lanes) or shared wavefronts (distinct words per bank, maximum over
banks). They never raise and write nothing but their outputs: on any lane that would
fault they return FAIL and the caller runs the reference unit, which reports the
error exactly as always. `gather` and `scatter` move one vector element of every
active lane, with the register conversion rules of `gpusim.functional.state.convert`
(same size: bits; narrower: low bits; wider: sign extension from signed integer types,
zero extension otherwise).

Lanes are visited in increasing order, so a store whose lanes hit one address leaves
the highest lane's value, as the reference's numpy assignment does. Address arithmetic
is unsigned 64-bit and wraps, as in the reference.

Inputs of every `place_*`: base (the address register over the whole batch, uint32 or
uint64; `bval` instead when `buniform`) plus `offset`; the span's active mask `m` and
the guard `g` (bool arrays over the span, used when use_m / use_g); span lanes
lo .. lo + n - 1 (batch lane ids); nbytes per lane and the alignment required. Outputs:
offs[i] (byte offset in the store, -1 for an inactive lane) and res = (active lanes,
requests, sectors or wavefronts).

Compiled once per machine (numba, `cache=True`); `nogil`, so threads may run them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

OK = 0
FAIL = 1

U64 = np.uint64


@njit(cache=True, nogil=True, inline="always")
def _add_key(keys, nkeys, key):
    """Add `key` to keys[:nkeys] unless present (most recent first); the new count. The last
    slot of `keys` (callers allocate one more) holds the largest key added since nkeys was 0:
    a key above it is new without a search (a warp's addresses mostly increase)."""
    top = len(keys) - 1
    if nkeys == 0 or key > keys[top]:
        keys[nkeys] = key
        keys[top] = key
        return nkeys + 1
    for t in range(nkeys - 1, -1, -1):
        if keys[t] == key:
            return nkeys
    keys[nkeys] = key
    return nkeys + 1


@njit(cache=True, nogil=True)
def _alloc_index(starts, addr, last):
    """searchsorted(starts, addr, side='right') - 1, trying `last` first (consecutive
    lanes mostly hit one allocation)."""
    n = len(starts)
    if last >= 0 and starts[last] <= addr and (last + 1 == n or starts[last + 1] > addr):
        return last
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= addr:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@njit(cache=True, nogil=True)
def place_heap(base, bval, buniform, offset, m, use_m, g, use_g, lo, n, nbytes, align,
               starts, ends, delta, heap_base, buflen, offs, res):
    """Global or const memory: the address plus `delta` (the const window) must lie,
    with its nbytes, inside one allocation [starts[k], ends[k]); offset = address -
    heap_base. Counts distinct 32-byte sectors per warp."""
    nb = U64(nbytes)
    amask = U64(align - 1)
    keys = np.empty(33, np.uint64)               # (and the largest: `_add_key`)
    nkeys = 0
    nactive = nreq = total = 0
    cur_warp = -1
    last = -1
    for i in range(n):
        if (use_m and not m[i]) or (use_g and not g[i]):
            offs[i] = -1
            continue
        lane = lo + i
        a = (bval if buniform else U64(base[lane])) + offset
        absa = a + delta
        k = _alloc_index(starts, absa, last)
        if k < 0 or absa + nb > ends[k] or (a & amask) != U64(0):
            return FAIL
        last = k
        off = absa - heap_base
        if off > U64(buflen) or off + nb > U64(buflen) or off + nb < off:
            return FAIL
        offs[i] = np.int64(off)
        nactive += 1
        w = lane >> 5
        if w != cur_warp:
            total += nkeys
            nkeys = 0
            nreq += 1
            cur_warp = w
        nkeys = _add_key(keys, nkeys, off >> U64(5))
    res[0] = nactive
    res[1] = nreq
    res[2] = total + nkeys
    return OK


@njit(cache=True, nogil=True)
def place_local(base, bval, buniform, offset, m, use_m, g, use_g, lo, n, nbytes, align,
                limit, stride, buflen, offs, res):
    """Local memory: address + nbytes <= limit (the frame); offset = lane * stride +
    address. Counts sectors of the hardware layout: word w of lane l's frame at byte
    (w * 32 + l % 32) * 4 of the warp's interleaved frames."""
    nb = U64(nbytes)
    amask = U64(align - 1)
    per_lane = max(1, nbytes // 4)
    keys = np.empty(32 * per_lane + 1, np.uint64)
    nkeys = 0
    nactive = nreq = total = 0
    cur_warp = -1
    for i in range(n):
        if (use_m and not m[i]) or (use_g and not g[i]):
            offs[i] = -1
            continue
        lane = lo + i
        a = (bval if buniform else U64(base[lane])) + offset
        if a + nb > limit or (a & amask) != U64(0):
            return FAIL
        off = U64(lane) * stride + a
        if off > U64(buflen) or off + nb > U64(buflen) or off + nb < off:
            return FAIL
        offs[i] = np.int64(off)
        nactive += 1
        w = lane >> 5
        if w != cur_warp:
            total += nkeys
            nkeys = 0
            nreq += 1
            cur_warp = w
        word = a >> U64(2)
        for q in range(per_lane):
            nkeys = _add_key(keys, nkeys, ((word + U64(q)) * U64(32) + U64(lane & 31)) * U64(4) >> U64(5))
    res[0] = nactive
    res[1] = nreq
    res[2] = total + nkeys
    return OK


@njit(cache=True, nogil=True)
def _wavefronts(words, nw, bmask, lists, counts):
    """Distinct words per bank among words[:nw], maximum over banks (`lists`: scratch of
    banks x len(words), `counts`: scratch of banks)."""
    counts[:] = 0
    cap = lists.shape[1]
    best = 0
    for i in range(nw):
        word = words[i]
        b = np.int64(word & bmask)
        c = counts[b]
        new = True
        for t in range(c):
            if lists[b, t] == word:
                new = False
                break
        if new:
            if c < cap:
                lists[b, c] = word
            counts[b] = c + 1
            if c + 1 > best:
                best = c + 1
    return best


@njit(cache=True, nogil=True)
def group_wavefronts(words, size, nwords, banks):
    """The wavefronts of consecutive groups of `size` elements of `words` (each element the
    first of `nwords` consecutive bank words), summed: per group, distinct words per bank,
    maximum over banks, as `gpusim.functional.shared_banks.shared_wavefronts` counts one group (the
    8 rows of one ldmatrix matrix)."""
    bmask = U64(banks - 1)
    k = size * nwords
    lists = np.empty((banks, k), np.uint64)
    counts = np.zeros(banks, np.int64)
    buf = np.empty(k, np.uint64)
    total = 0
    for g in range(len(words) // size):
        nw = 0
        for i in range(g * size, (g + 1) * size):
            for q in range(nwords):
                buf[nw] = U64(words[i]) + U64(q)
                nw += 1
        total += _wavefronts(buf, nw, bmask, lists, counts)
    return total


@njit(cache=True, nogil=True)
def grouped_wavefronts(words, grp, nw, store, bmask, lists, counts):
    """A wide access's (wavefronts, conflict-free wavefronts) (`gpusim.functional.shared_banks.shared_wavefronts`):
    words[:nw] in lane order, grp[i] the lane group of words[i] (non-decreasing); a store takes
    each group's count, summed; a load one wavefront for two neighbouring groups (2u, 2u + 1)
    that together need one, else each group's count. Conflict-free: one a group (a merged
    pair: one), what Nsight's bank-conflict counter subtracts."""
    total = 0
    ideal = 0
    i = 0
    while i < nw:
        u = grp[i] >> 1
        j = i
        while j < nw and (grp[j] >> 1) == u:
            j += 1
        k = i
        while k < j and grp[k] == grp[i]:
            k += 1
        first = _wavefronts(words[i:k], k - i, bmask, lists, counts)
        second = _wavefronts(words[k:j], j - k, bmask, lists, counts) if k < j else 0
        groups = 2 if k < j else 1
        if store:
            total += first + second
            ideal += groups
        else:
            both = _wavefronts(words[i:j], j - i, bmask, lists, counts) if k < j else first
            if both <= 1:
                total += both
                ideal += 1
            else:
                total += first + second
                ideal += groups
        i = j
    return total, ideal


@njit(cache=True, nogil=True)
def _warp_wavefronts(grouped, clash, words, grp, nw, store, bmask, lists, counts):
    """One warp's (wavefronts, conflict-free wavefronts) in `place_shared`: a wide access's
    groups (`grouped_wavefronts`), else its busiest bank (one when no bank holds two words)."""
    if grouped and clash:
        return grouped_wavefronts(words, grp, nw, store, bmask, lists, counts)
    if grouped:                    # no bank holds two words: one wavefront a group (a load: a pair of them)
        served = 0
        last = -1
        for i in range(nw):
            g = grp[i] if store else grp[i] >> 1
            if g != last:
                served += 1
                last = g
        return served, served
    return (_wavefronts(words, nw, bmask, lists, counts) if clash else 1), 1


@njit(cache=True, nogil=True)
def place_shared(base, bval, buniform, offset, m, use_m, g, use_g, lo, n, nbytes, align,
                 limit, stride, lanes_per_cta, buflen, banks, bank_shift, offs, res, per_warp, keep,
                 group=32, store=False, count_bytes=0):
    """Shared memory: address + nbytes <= limit (the block's shared size); offset =
    block slot * stride + address. Counts wavefronts per warp: `banks` banks of
    2**bank_shift bytes, each lane touching max(1, nbytes / bank width) consecutive
    words. A warp whose words never put two different words in one bank takes one
    wavefront; others are counted word by word (`_wavefronts`); lanes served in groups of
    `group` (a wide access: `grouped_wavefronts`, `store` its kind) by the group rule. With
    `keep`, per_warp[w - lo // 32] = warp w's wavefronts (-1: no active lane), for the trace.
    `count_bytes` > nbytes: the wavefronts are counted as the SASS instruction that ptxas merged
    this access into moves them (each lane's aligned `count_bytes`). res: active lanes, the
    conflict-free wavefronts (a request a warp; a wide access's groups), wavefronts."""
    nb = U64(nbytes)
    amask = U64(align - 1)
    cb = count_bytes if count_bytes > nbytes else nbytes
    cmask = ~U64(cb - 1)
    per_lane = max(1, cb >> bank_shift)
    words = np.empty(32 * per_lane, np.uint64)
    grp = np.empty(32 * per_lane, np.int64)
    grouped = group < 32
    gshift = 0
    while (1 << gshift) < group:   # groups are powers of two lanes: a shift, not a division, per word
        gshift += 1
    bank_word = np.empty(banks, np.uint64)
    lists = np.empty((banks, 32 * per_lane), np.uint64)
    counts = np.zeros(banks, np.int64)
    bmask = U64(banks - 1)
    nactive = total = ideal = 0
    nw = 0
    used = U64(0)                  # banks of the current warp holding a word (banks <= 64)
    clash = False
    cur_warp = -1
    cta_base = U64(0)
    for i in range(n):
        if (use_m and not m[i]) or (use_g and not g[i]):
            offs[i] = -1
            continue
        lane = lo + i
        a = (bval if buniform else U64(base[lane])) + offset
        if a + nb > limit or (a & amask) != U64(0):
            return FAIL
        w = lane >> 5
        if w != cur_warp:
            if cur_warp >= 0:
                wf, free = _warp_wavefronts(grouped, clash, words, grp, nw, store, bmask, lists, counts)
                ideal += free
                total += wf
                if keep:
                    per_warp[cur_warp - (lo >> 5)] = wf
            cta_base = U64(lane // lanes_per_cta) * stride
            cur_warp = w
            nw = 0
            used = U64(0)
            clash = False
        off = cta_base + a
        if off > U64(buflen) or off + nb > U64(buflen) or off + nb < off:
            return FAIL
        offs[i] = np.int64(off)
        nactive += 1
        word = (a & cmask) >> U64(bank_shift)
        for q in range(per_lane):
            words[nw] = word
            grp[nw] = (lane & 31) >> gshift
            nw += 1
            b = word & bmask
            bit = U64(1) << b
            if used & bit:
                if bank_word[b] != word:
                    clash = True
            else:
                used |= bit
                bank_word[b] = word
            word += U64(1)
    if cur_warp >= 0:
        wf, free = _warp_wavefronts(grouped, clash, words, grp, nw, store, bmask, lists, counts)
        ideal += free
        total += wf
        if keep:
            per_warp[cur_warp - (lo >> 5)] = wf
    res[0] = nactive
    res[1] = ideal                 # requests, or a wide access's conflict-free wavefronts (bank conflicts = total - this)
    res[2] = total
    return OK


@njit(cache=True, nogil=True)
def gather(dst, src, offs, lo, k, shift):
    """dst[lo + i] = element k of the access at offs[i] for every active lane i. src is
    the store as unsigned words of the access type (`shift` = log2 of their size), dst
    the register as unsigned words of its size: the copy keeps the bits, truncates or
    zero-extends."""
    for i in range(len(offs)):
        o = offs[i]
        if o >= 0:
            dst[lo + i] = src[(o >> shift) + k]


@njit(cache=True, nogil=True)
def gather_signed(dst, src, offs, lo, k, shift, bits):
    """gather into a wider register from a signed integer type of `bits` bits: sign extension."""
    for i in range(len(offs)):
        o = offs[i]
        if o >= 0:
            v = np.int64(src[(o >> shift) + k])
            if v >= (np.int64(1) << (bits - 1)):
                v -= np.int64(1) << bits
            dst[lo + i] = v


@njit(cache=True, nogil=True)
def scatter(dst, offs, k, shift, vals, uniform):
    """Element k of every active lane's store: dst[(offs[i] >> shift) + k] = vals[i]
    (vals[0] when `uniform`), lanes in increasing order."""
    for i in range(len(offs)):
        o = offs[i]
        if o >= 0:
            dst[(o >> shift) + k] = vals[0] if uniform else vals[i]


@njit(cache=True, nogil=True)
def scatter_rows(dst, offs, shift, vals):
    """`scatter` of every element k of a vector store at once: element k of lane i is vals[k, i];
    elements in order, each one's lanes in increasing order (the order the separate calls write)."""
    for k in range(vals.shape[0]):
        for i in range(len(offs)):
            o = offs[i]
            if o >= 0:
                dst[(o >> shift) + k] = vals[k, i]
