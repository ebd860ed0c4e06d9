"""The load/store unit of the functional core: where each lane's access goes, whether
it is legal, what it reads or writes, and what the memory pipeline counts.

For every memory instruction executed by a step it
- resolves each active lane's address to a state space (generic addresses by their
  window, see `isa.memory_map`) and a byte offset in that space's backing store; a shared
  address with a cluster rank (`.shared::cluster`, `isa.memory_map.CLUSTER_RANK_SHIFT`) goes to
  that CTA of the lane's cluster (`gpusim.functional.cluster`), and a generic address in the
  param window (`cvta.param` of a `__grid_constant__` parameter) reads the kernel's parameters;
- checks it like compute-sanitizer's memcheck: inside one allocation (global,
  const), inside the block's shared size, inside the thread's local frame, and
  aligned to the access size; otherwise raises `MemoryAccessError` naming kernel,
  source line, block, thread and address;
- gathers or scatters the values (vector accesses as consecutive elements);
- applies atomics in lane order (lowest lane of the step first), so results are
  deterministic;
- counts, per instruction, the Nsight Compute quantities of the access: global
  requests and 32-byte sectors, shared-memory wavefronts (`sm.shared_banks` banks of
  `sm.shared_bank_width_bytes`, 32 of 4 bytes on every NVIDIA GPU since Maxwell: word
  w = offset // width lives in bank w % banks; a warp needs as many wavefronts as the
  largest number of distinct words mapped to one bank, lanes reading one word share
  it, an access wider than a word spans consecutive words), local sectors.

Does not model: caches or timing (issue 3), texture/surface memory, memory ordering
between blocks of different batches (a batch completes before the next starts).

Sources: CUDA C++ Programming Guide, "Shared Memory" (banks) and "Device Memory
Accesses" (32-byte segments); Nsight Compute "Kernel Profiling Guide", memory tables.
"""
from __future__ import annotations

import numpy as np

from gpusim.functional.shared_banks import BANK_WIDTH, BANKS, shared_wavefronts
from isa.memory_map import (CLUSTER_RANK_SHIFT, CONST_WINDOW_BASE, CTA_OFFSET_MASK, LOCAL_WINDOW_BASE,
                            PARAM_WINDOW_BASE, SHARED_WINDOW_BASE, WINDOW_BYTES)

U64 = np.uint64
SECTOR_SHIFT = np.uint64(5)            # 32-byte sectors


def distinct_per_group(groups: np.ndarray, keys: np.ndarray, ngroups: int) -> np.ndarray:
    """Number of distinct `keys` within each group id 0..ngroups-1."""
    if len(keys) == 0:
        return np.zeros(ngroups, np.int64)
    pair = (groups.astype(U64) << U64(42)) | (keys.astype(U64) & U64((1 << 42) - 1))
    u = np.unique(pair)
    return np.bincount((u >> U64(42)).astype(np.int64), minlength=ngroups)


def atomic_passes(groups: np.ndarray, offsets: np.ndarray) -> int:
    """The passes a global atomic's lanes take, summed over groups (warps): the L1 splits a
    warp's atomic into passes of at most one lane per address, so each 32-byte sector is in
    as many passes as the most lanes on one of its addresses (Nsight counts a sector once
    per pass in l1tex__t_sectors_pipe_lsu_mem_global_op_{atom,red}, H100/H200)."""
    if len(offsets) == 0:
        return 0
    pair = (groups.astype(U64) << U64(42)) | (offsets.astype(U64) & U64((1 << 42) - 1))
    u, lanes = np.unique(pair, return_counts=True)
    sector = u >> U64(SECTOR_SHIFT)
    first = np.flatnonzero(np.r_[True, sector[1:] != sector[:-1]])
    return int(np.maximum.reduceat(lanes, first).sum())


def typed_view(buf: np.ndarray, dt: np.dtype) -> np.ndarray:
    """The byte buffer `buf` seen as elements of `dt`: its longest prefix that holds a whole
    number of elements. A backing store's size need not be a multiple of the access width
    (the last global allocation may be a 1-byte array); an access that passed the bounds and
    alignment checks ends inside its allocation, hence inside this prefix."""
    n = buf.size - buf.size % dt.itemsize
    return buf[:n].view(dt)


_PARAM_VALUES: dict = {}      # (a parameter's bytes, offset, type, count) -> its values (numpy scalars)


class LoadStoreUnit:
    """Memory access for one batch; `x` is its executor (state, geometry, counters)."""

    def __init__(self, x, memory, params: dict[str, bytes], shared_bytes: int, local_bytes: int,
                 banks: tuple[int, int] = (BANKS, BANK_WIDTH)):
        self.x = x
        self.banks, self.bank_width = banks           # shared memory: bank count, bytes per bank
        self.mem = memory
        self.params = params
        self.shared_bytes = shared_bytes
        self.shared_stride = -(-max(shared_bytes, 1) // 16) * 16
        self.shared = np.zeros(x.nctas * self.shared_stride, np.uint8)
        self.local_bytes = local_bytes
        self.local_stride = -(-max(local_bytes, 1) // 16) * 16
        self.local = np.zeros(x.nlanes * self.local_stride, np.uint8) if local_bytes else np.zeros(16, np.uint8)
        # PTX shared access -> the bytes a lane of the SASS instruction ptxas merged it into moves
        # (four ld.shared.f32 -> one LDS.128), set by the timing's trace (functional_streams.py)
        self.count_bytes: dict[int, int] = {}

    # ------------------------------------------------------------------ params
    def load_param(self, name: str, offset: int, dt: np.dtype, n: int):
        raw = self.params.get(name)
        if raw is None:
            raise KeyError(f"kernel parameter {name} has no value")
        if type(raw) is not bytes:
            raw = bytes(raw)
        key = (raw, offset, dt, n)                  # by value: launches of a kernel mostly pass the same
        hit = _PARAM_VALUES.get(key)
        if hit is None:
            hit = tuple(np.frombuffer(raw, dt, count=1, offset=offset + k * dt.itemsize)[0] for k in range(n))
            if len(_PARAM_VALUES) > 4096:
                _PARAM_VALUES.clear()
            _PARAM_VALUES[key] = hit
        return hit

    # ------------------------------------------------------------------ resolution
    def _active(self, op, addrs, g):
        """Absolute lane ids and addresses of the lanes that perform the access."""
        x = self.x
        m = x.state.m
        if g is not None and type(g) is np.ndarray:
            m = g if m is None else (m & g)
        elif g is not None and not g:
            return None, None
        span = x.state.hi - x.state.lo
        if type(addrs) is not np.ndarray:
            addrs = np.full(span, addrs, U64)
        if m is None:
            return np.arange(x.state.lo, x.state.hi), addrs
        idx = np.flatnonzero(m)
        return idx + x.state.lo, addrs[idx]

    def _resolve(self, op, lanes, addrs):
        """Yield (space, buffer, byte offsets, lane positions) per space touched."""
        space = op.space
        if space is None:
            cls = np.full(len(addrs), 0, np.int8)             # 0 global, 1 shared, 2 local, 3 const, 4 param
            for code, base in ((1, SHARED_WINDOW_BASE), (2, LOCAL_WINDOW_BASE), (3, CONST_WINDOW_BASE),
                               (4, PARAM_WINDOW_BASE)):
                cls[(addrs >= U64(base)) & (addrs < U64(base + WINDOW_BYTES))] = code
            present = np.unique(cls)
            for code in present:
                pos = np.flatnonzero(cls == code) if len(present) > 1 else slice(None)
                sp = ("global", "shared", "local", "const", "param")[code]
                a = addrs[pos]
                if sp == "shared":
                    a = a - U64(SHARED_WINDOW_BASE)
                elif sp == "local":
                    a = a - U64(LOCAL_WINDOW_BASE)
                elif sp == "const":
                    a = a - U64(CONST_WINDOW_BASE)
                elif sp == "param":
                    a = a - U64(PARAM_WINDOW_BASE)
                lp = lanes[pos]
                yield (sp,) + self._place(op, sp, lp, a) + (lp, pos)
        elif space == "shared::cluster":
            yield ("shared",) + self._place(op, "shared", lanes, addrs) + (lanes, slice(None))
        else:
            yield (space,) + self._place(op, space, lanes, addrs) + (lanes, slice(None))

    def _place(self, op, space, lanes, a):
        """(buffer, byte offsets into it) after bounds and alignment checks."""
        nbytes = op.info.access_bytes
        x = self.x
        if space == "global" or space == "const":
            heap = self.mem.global_heap if space == "global" else self.mem.const_heap
            absa = a if space == "global" else a + U64(CONST_WINDOW_BASE)
            if heap.aliases:                                  # captured device arrays (memory.Heap.map_alias)
                absa = heap.translate(absa)
            ok = heap.check(absa, nbytes)
            if not ok.all():
                k = int(np.flatnonzero(~ok)[0])
                shown = int(a[k]) if space == "global" else int(absa[k])
                x.fail_access(op, int(lanes[k]), shown, space, heap.nearest(int(absa[k])))
            off = absa - U64(heap.base)
            buf = heap.data
        elif space == "shared":
            slot = x.cta_slot(lanes)
            if (a >> U64(CLUSTER_RANK_SHIFT)).any():              # .shared::cluster: another CTA's window
                slot, a = self._cluster_slot(op, lanes, a, slot)
            bad = a + U64(nbytes) > U64(self.shared_bytes)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                x.fail_access(op, int(lanes[k]), int(a[k]), "shared",
                              f"the block has {self.shared_bytes} bytes of shared memory")
            off = slot.astype(U64) * U64(self.shared_stride) + a
            buf = self.shared
        elif space == "param":
            if op.info.is_store or op.info.is_atomic:
                x.fail_access(op, int(lanes[0]), int(a[0]) + PARAM_WINDOW_BASE, "param",
                              "kernel parameters are read-only")
            buf, off = self.param_window()
            bad = a + U64(nbytes) > U64(len(buf))
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                x.fail_access(op, int(lanes[k]), int(a[k]) + PARAM_WINDOW_BASE, "param",
                              f"the kernel's parameters are {len(buf)} bytes")
            off = a
        elif space == "local":
            bad = a + U64(nbytes) > U64(self.local_bytes)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                x.fail_access(op, int(lanes[k]), int(a[k]), "local",
                              f"each thread has {self.local_bytes} bytes of local memory")
            off = lanes.astype(U64) * U64(self.local_stride) + a
            buf = self.local
        else:
            raise AssertionError(space)
        align = op.info.access_bytes if op.info.access_bytes in (1, 2, 4, 8, 16) else op.dt.itemsize
        mis = (a & U64(align - 1)) != 0
        if mis.any():
            k = int(np.flatnonzero(mis)[0])
            x.fail_access(op, int(lanes[k]), int(a[k]), space, f"misaligned: a {align}-byte access needs "
                          f"an address that is a multiple of {align}", kind="misaligned address")
        return buf, off

    def _cluster_slot(self, op, lanes, a, slot):
        """(CTA slots, offsets) of `.shared::cluster` addresses `a` (module docstring)."""
        x = self.x
        size = x.geo.cluster_size
        rank = (a >> U64(CLUSTER_RANK_SHIFT)).astype(np.int64) - 1
        bad = (rank >= size)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            x.fail_access(op, int(lanes[k]), int(a[k]), "shared", f"a distributed shared-memory address of CTA rank "
                          f"{int(rank[k])}, but the launch's clusters have {size} CTA{'s' if size > 1 else ''}")
        own = rank < 0
        return np.where(own, slot, (slot // size) * size + rank), a & U64(CTA_OFFSET_MASK)

    def param_window(self) -> tuple[np.ndarray, int]:
        """The kernel's parameters as bytes at their `.param` offsets (`variable_layout.layout`)."""
        buf = getattr(self, "_pwin", None)
        if buf is None:
            offs = {n: o for n, (sp, o) in self.x.dk.symbols.items() if sp == "param"}
            end = max([o + len(self.params.get(n, b"")) for n, o in offs.items()], default=0)
            buf = np.zeros(max(end, 1), np.uint8)
            for n, o in offs.items():
                raw = self.params.get(n, b"")
                buf[o:o + len(raw)] = np.frombuffer(raw, np.uint8)
            self._pwin = buf
        return buf, 0

    # ------------------------------------------------------------------ counters
    def _count(self, op, space, lanes, off):
        x = self.x
        c = x.counters
        i = op.index
        w = lanes >> 5
        w0 = int(w[0])
        wl = w - w0
        nw = int(wl[-1]) + 1
        nreq = int(np.count_nonzero(np.bincount(wl, minlength=nw)))
        if op.info.is_atomic:
            kind = "atom" if op.opname == "atom" else "red"
        else:
            kind = "st" if op.info.is_store else "ld"
        if space == "shared":
            plain = not op.info.is_atomic                # a wide load or store is served in groups of lanes
            wf, free = shared_wavefronts(wl, off % U64(self.shared_stride),      # the offset in its CTA's window
                                         op.info.access_bytes, nw, self.banks, self.bank_width,
                                         lanes if plain else None, kind == "st", free=True)
            c.add_shared(i, kind, int(free.sum()), int(wf.sum()))
            return
        if space == "local":
            off = self._local_hw_offsets(lanes, off, op.info.access_bytes)
            wl = np.repeat(wl, len(off) // len(wl))
        if op.info.is_atomic:                   # a sector once per pass (at most one lane per address)
            sectors = atomic_passes(wl, off)
        else:
            sectors = int(distinct_per_group(wl, off >> SECTOR_SHIFT, nw).sum())
        c.add_memory(i, space, kind, nreq, sectors)

    def _local_hw_offsets(self, lanes, off, nbytes):
        """Local memory as hardware lays it out: each 4-byte word of a thread's frame is
        interleaved across the 32 lanes of its warp, so a warp reading the same local
        offset touches 128 consecutive bytes (4 sectors). Returns one address per word."""
        lane_in_batch = lanes.astype(U64)
        frame = off - lane_in_batch * U64(self.local_stride)
        word = frame >> U64(2)
        nwords = max(1, nbytes // 4)
        if nwords > 1:
            word = (word[:, None] + np.arange(nwords, dtype=U64)).ravel()
            lane_in_batch = np.repeat(lane_in_batch, nwords)
        return (word * U64(32) + (lane_in_batch & U64(31))) * U64(4)

    # ------------------------------------------------------------------ access
    def load(self, op, addrs, g):
        lanes, a = self._active(op, addrs, g)
        if lanes is None or len(lanes) == 0:
            return
        x = self.x
        dt = op.dt
        for space, buf, off, lanes_s, pos in self._resolve(op, lanes, a):
            if space != "param":                          # parameters: the constant bank, not counted
                x.trace_access(op, space, lanes_s, off)
                if x.san is not None:
                    x.san.access(op, space, lanes_s, off)
                self._count(op, space, lanes_s, off)
            view = typed_view(buf, dt)
            base = (off // U64(dt.itemsize)).astype(np.int64)
            for k, d in enumerate(op.dsts):
                if d is not None:
                    x.write_lanes(d, lanes_s, view[base + k] if k else view[base])

    def store(self, op, addrs, vals, g):
        lanes, a = self._active(op, addrs, g)
        if lanes is None or len(lanes) == 0:
            return
        x = self.x
        dt = op.dt
        for space, buf, off, lanes_s, pos in self._resolve(op, lanes, a):
            if space == "const":
                x.fail_access(op, int(lanes_s[0]), int(off[0]), "const", "constant memory is read-only")
            x.trace_access(op, space, lanes_s, off)
            if x.san is not None:
                x.san.access(op, space, lanes_s, off)
            self._count(op, space, lanes_s, off)
            view = typed_view(buf, dt)
            base = (off // U64(dt.itemsize)).astype(np.int64)
            for k, v in enumerate(vals):
                view[base + k] = x.lane_values(v, lanes_s)

    def atomic(self, op, addrs, vals, g):
        lanes, a = self._active(op, addrs, g)
        if lanes is None or len(lanes) == 0:
            return
        x = self.x
        dt = op.dt
        for space, buf, off, lanes_s, pos in self._resolve(op, lanes, a):
            x.trace_access(op, space, lanes_s, off)
            if x.san is not None:
                x.san.access(op, space, lanes_s, off)
            self._count(op, space, lanes_s, off)
            view = typed_view(buf, dt)
            idx = (off // U64(dt.itemsize)).astype(np.int64)
            operands = [x.lane_values(v, lanes_s) for v in vals]
            old = apply_in_lane_order(view, idx, operands, op.combine)
            if op.dst is not None:
                x.write_lanes(op.dst, lanes_s, old)


def apply_in_lane_order(view: np.ndarray, idx: np.ndarray, operands: list, combine) -> np.ndarray:
    """Apply `view[idx[k]] = combine(view[idx[k]], *operands[k])` for k in order and
    return the old values, vectorized in rounds of distinct addresses (integer additions,
    `np.add`, at once: each lane's old value is its address's value plus the lanes before it)."""
    n = len(idx)
    if combine is np.add and n > 1 and view.dtype.kind in "iu":
        return _add_in_lane_order(view, idx, operands[0].astype(view.dtype, copy=False))
    old = np.empty(n, view.dtype)
    remaining = np.arange(n)
    while len(remaining):
        _, first = np.unique(idx[remaining], return_index=True)
        sel = remaining[first]
        o = view[idx[sel]]
        view[idx[sel]] = combine(o, *[v[sel] for v in operands])
        old[sel] = o
        if len(first) == len(remaining):
            break
        keep = np.ones(len(remaining), bool)
        keep[first] = False
        remaining = remaining[keep]
    return old


def _add_in_lane_order(view: np.ndarray, idx: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Integer atomic additions in lane order (modular, so any grouping gives the same sums)."""
    order = np.argsort(idx, kind="stable")
    si, sv = idx[order], v[order]
    starts = np.flatnonzero(np.r_[True, si[1:] != si[:-1]])
    ends = np.r_[starts[1:], len(si)]
    incl = np.cumsum(sv, dtype=view.dtype)
    excl = incl - sv                                   # sum of the lanes before, over all addresses
    group = np.repeat(np.arange(len(starts)), ends - starts)
    base = view[si[starts]]
    old = np.empty(len(idx), view.dtype)
    old[order] = base[group] + (excl - excl[starts][group])
    view[si[starts]] = base + (incl[ends - 1] - excl[starts])
    return old
