"""racecheck: data hazards between threads, in shared and in global memory.

Two accesses to one byte race when they come from different threads, at least one is
a write, not both are atomics, and nothing orders them:
- threads of different blocks are never ordered within a launch (global memory);
- threads of different warps of one block are ordered by a barrier (`syncthreads`)
  released between the two accesses;
- lanes of one warp are ordered by a barrier or by a `syncwarp` the earlier lane
  passed after its access. The functional core runs a warp's lanes in lock-step,
  which hides such races (Volta+ hardware does not promise lock-step); racecheck
  tracks each lane's epoch so it reports them anyway;
- the same thread is always ordered with itself;
- fences with atomic (strong) accesses, and the grid barrier, order threads of any
  block or warp as the PTX memory model says (`ordering.py`: release/acquire through a
  flag, the last-block idiom, `this_grid().sync()`);
- strong accesses (atomics, `red`, volatile/relaxed loads and stores) never race with
  each other.

Shadow memory, per granule (the kernel's smallest shared/global access, see
`sanitizer.granule`) of each space (the batch's shared memory; the launch's global
heap): the last writer and up to two readers since, each as (global thread id,
instruction, epoch). A lane's epoch is (barrier count of its block << 12) | (syncwarps
it passed since that barrier, mod 4096). Keeping two readers is enough to find a
concurrent reader other than a writing thread. Two lanes of one warp instruction
writing the same byte are not reported (hardware keeps one of them); lanes of
different warps are (WAW).

Everything is vectorised over the bytes of one instruction's access (numpy gathers and
scatters); a correct program costs about a dozen array operations per memory
instruction. Findings are one record per (kind, space, earlier instruction, later
instruction), with the first pair seen (two threads, two lines) and a count.

Cost: 36 bytes of shadow per granule (4 bytes for a kernel of word accesses: 9x the
arrays and shared memory of the launch), allocated when the launch starts; 48 for a
kernel with fences or a grid barrier (each access's fence count), which also keeps
`ordering.py`'s per-lane state.

Asynchronous copies (`cp.async`): the shared bytes a copy writes are *pending* from its issue
to the issuing thread's `cp.async.wait_group`/`wait_all` that completes it (a per-granule
record of the copy's thread and instruction, kept only for kernels with cp.async). Any access
to pending bytes, by any thread including the issuing one, is a hazard (RAW for a read, WAW
for a write or a second copy): the data may or may not have landed. At issue the copy is
checked as a write of its thread (WAR/WAW against unordered earlier accesses: a stage
refilled before the barrier that ends its last use); at completion it becomes an ordinary
write of that thread, which other threads may read after a barrier. Tensor-core instructions
are accesses of the lanes that perform them: each ldmatrix/stmatrix row (16 bytes) by the
lane giving its address, wmma fragment moves per lane, wgmma operand chunks (16 bytes) spread
over the warp's lanes when `mma_async` issues.

Does not model: hazards between launches, local memory (private to a thread).

Source: NVIDIA compute-sanitizer documentation, "Racecheck Tool" (hazard kinds);
CUDA C++ Programming Guide, "Synchronization Functions" (__syncwarp, __syncthreads
memory ordering).
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import ConfigError
from gpusim.sanitizer import granule, spread
from gpusim.sanitizer.ordering import SW_BITS, SW_MASK, BatchOrder, Order, fence_scope, strong_read, strong_write
from gpusim.sanitizer.report import Access


class Shadow:
    """Last writer and two readers of every granule of one buffer (`fences`: and each
    access's fence count)."""

    def __init__(self, nbytes: int, g: int, fences: bool = False):
        n = -(-nbytes // g)
        self.thr = [np.full(n, -1, np.int32) for _ in range(3)]          # writer, reader 1, reader 2
        self.ins = [np.zeros(n, np.int32) for _ in range(3)]             # instruction (~index: atomic)
        self.ep = [np.zeros(n, np.int32) for _ in range(3)]
        self.fc = [np.zeros(n, np.int32) for _ in range(3)] if fences else None


class Tool:
    name = "racecheck"

    def __init__(self, san, prepared, uninitialized=()):
        self.san = san
        self.geo = prepared.geometry
        self.heap = prepared.memory.global_heap
        if self.geo.nblocks * self.geo.warps_per_block * 32 >= 2 ** 31:
            raise ConfigError(f"racecheck supports launches of fewer than 2**31 threads; {prepared.name} has "
                              f"{self.geo.nblocks} blocks of {self.geo.threads_per_block}")
        self.g = granule(prepared.decoded)
        infos = prepared.decoded.infos
        self.scope = [fence_scope(i.mnemonic) for i in infos]
        self.sread = np.array([strong_read(i.mnemonic) for i in infos], bool)
        self.swrite = np.array([strong_write(i.mnemonic) for i in infos], bool)
        self.rmw = np.array([i.mnemonic.split(".")[0] in ("atom", "red") for i in infos], bool)
        grid = any(getattr(b.barrier, "scope", "cta") == "grid" for b in prepared.decoded.blocks)
        self.async_copies = any(i.mnemonic.startswith("cp.async.") and i.kind == "async" for i in infos)
        tpbw = self.geo.warps_per_block * 32
        self.order = Order(tpbw) if any(self.scope) or grid else None
        self.glob = Shadow(len(self.heap.data), self.g, self.order is not None)

    def batch(self, x, hooks):
        return _Batch(self, x, hooks)


class _Batch:
    def __init__(self, tool: Tool, x, hooks):
        self.tool = tool
        self.x = x
        self.hooks = hooks
        self.tpbw = x.wpc * 32                          # lanes per block slot (warps padded to 32)
        self.base = x.first_block * self.tpbw           # global thread id of batch lane 0
        self.cep = np.zeros(x.nctas, np.int32)          # barriers released per block slot
        self.sw = np.zeros(x.nlanes, np.int32)          # syncwarps passed per lane since the last barrier
        self.shared = Shadow(len(x.lsu.shared), tool.g, tool.order is not None)
        self.stride = x.lsu.shared_stride
        n = len(self.shared.thr[0])
        # cp.async bytes issued but not yet completed: the copy's thread (-1: none) and instruction
        self.pend_thr = np.full(n, -1, np.int32) if tool.async_copies else None
        self.pend_ins = np.zeros(n, np.int32) if tool.async_copies else None
        self.hb = None if tool.order is None else BatchOrder(tool.order, x, self.base, self.epoch)

    def epoch(self, lanes: np.ndarray) -> np.ndarray:
        """Lanes' sync epochs: (barriers released << 12) | syncwarps passed since."""
        return (self.cep[lanes // self.tpbw] << SW_BITS) | (self.sw[lanes] & SW_MASK)

    # ------------------------------------------------------------------ epochs
    def barrier(self, slots: np.ndarray, grid: bool = False) -> None:
        self.cep[slots] += 1
        self.sw.reshape(self.x.nctas, self.tpbw)[slots] = 0
        if self.hb is not None:
            self.hb.barrier(slots, grid)

    def syncwarp(self, op, lanes: np.ndarray) -> None:
        self.sw[lanes] += 1
        if self.hb is not None:
            self.hb.syncwarp(lanes)

    def fence(self, op, lanes: np.ndarray) -> None:
        if self.hb is not None and len(lanes):
            self.hb.fence(lanes, self.tool.scope[op.index])

    def racy(self, p: np.ndarray, e: np.ndarray, pins: np.ndarray, t: np.ndarray, atomic: bool,
             fc: np.ndarray | None = None) -> np.ndarray:
        """Whether the recorded accesses (thread p, epoch e, instruction pins, fence count fc)
        and the current ones by threads t are unordered accesses of different threads."""
        c = (p >= 0) & (p != t)
        if atomic:
            c &= pins >= 0                               # atomics never race with atomics
        if not c.any():
            return c
        idx = np.flatnonzero(c & ((p // self.tpbw) == (t // self.tpbw)))
        if len(idx):
            pl = p[idx] - self.base                      # the same block: p is a lane of this batch
            cep = self.cep[pl // self.tpbw]
            same_warp = (p[idx] >> 5) == (t[idx] >> 5)
            ei = e[idx]
            ordered = np.where(same_warp, ((cep << SW_BITS) | (self.sw[pl] & SW_MASK)) != ei,
                               cep > (ei >> SW_BITS))
            c[idx[ordered]] = False
        if fc is not None and self.hb.knows:
            idx = np.flatnonzero(c)
            if len(idx):
                c[idx[self.hb.known(p[idx], e[idx], fc[idx], t[idx])]] = False
        return c

    # ------------------------------------------------------------------ accesses
    def access(self, op, space: str, lanes: np.ndarray, off: np.ndarray, mode: str) -> None:
        b, k = spread(off, op.info.access_bytes, self.tool.g)
        lanes0 = lanes
        if k > 1:
            lanes = np.repeat(lanes, k)
        t = (lanes + self.base).astype(np.int32)
        if space == "shared" and self.pend_thr is not None:
            self._pending(b, lanes, op.index, "RAW" if mode == "read" else "WAW", mode)
        e = (self.cep[lanes // self.tpbw] << SW_BITS) | (self.sw[lanes] & SW_MASK)
        sh = self.shared if space == "shared" else self.tool.glob
        index = op.index
        hb = self.hb
        f = None if hb is None else hb.fc[lanes]
        if mode == "read":
            strong = bool(self.tool.sread[index])
            self._check(sh, 0, b, t, strong, "RAW", space, lanes, index, "write", "read")
            self._read(sh, b, t, e, f, ~index if strong else index)
            if strong and hb is not None:
                hb.strong_read(lanes0, b[::k], space == "shared")
            return
        strong = bool(self.tool.swrite[index])
        atomic = mode == "atomic" or strong
        if strong and hb is not None:                    # a releasing write counts as before the fence
            rf = hb.rel_fc[lanes]
            f = np.where(rf > 0, rf - 1, f)
        cur = "atomic" if atomic else "write"
        self._check(sh, 0, b, t, atomic, "WAW", space, lanes, index, None, cur)
        self._check(sh, 1, b, t, atomic, "WAR", space, lanes, index, "read", cur)
        self._check(sh, 2, b, t, atomic, "WAR", space, lanes, index, "read", cur)
        thr, ins, ep = sh.thr, sh.ins, sh.ep
        thr[0][b] = t
        ins[0][b] = ~index if atomic else index
        ep[0][b] = e
        if f is not None:
            sh.fc[0][b] = f
        thr[1][b] = -1
        thr[2][b] = -1
        if hb is not None:
            if strong:
                hb.strong_write(lanes0, b[::k], bool(self.tool.rmw[index]), bool(self.tool.sread[index]),
                                space == "shared")
            else:
                hb.weak_write(b[::k], space == "shared")
        if not atomic:                                   # lanes of other warps storing the same byte
            got = thr[0][b]
            lost = np.flatnonzero(got != t)
            if len(lost):
                other = got[lost]
                diff = lost[(other >> 5) != (t[lost] >> 5)]
                if len(diff):
                    k = int(diff[0])
                    self._report("WAW", space, b[k], int(got[k]), index, "write", int(lanes[k]), index, "write",
                                 len(np.unique(lanes[diff])))

    # ------------------------------------------------------------------ asynchronous copies
    def _pending(self, b, lanes, index: int, kind: str, mode: str) -> None:
        """Report accesses (granules b by `lanes`) of bytes a cp.async has not completed yet."""
        p = self.pend_thr[b]
        hit = np.flatnonzero(p >= 0)
        if not len(hit):
            return
        pins = self.pend_ins[b[hit]]
        for pi in np.unique(pins):
            mine = hit[pins == pi]
            j = int(mine[0])
            self._report(kind, "shared", b[j], int(p[j]), int(pi), "write", int(lanes[j]), index, mode,
                         len(np.unique(lanes[mine])),
                         what="an access to bytes of a cp.async copy before the cp.async.wait_group that completes it")

    def async_issue(self, op, lanes: np.ndarray, off: np.ndarray) -> None:
        """A cp.async's shared destination: checked as a write of its thread now, pending until its wait."""
        b, k = spread(off, op.info.access_bytes, self.tool.g)
        if k > 1:
            lanes = np.repeat(lanes, k)
        t = (lanes + self.base).astype(np.int32)
        self._pending(b, lanes, op.index, "WAW", "write")
        sh = self.shared
        for slot, kind, prev in ((0, "WAW", None), (1, "WAR", "read"), (2, "WAR", "read")):
            self._check(sh, slot, b, t, False, kind, "shared", lanes, op.index, prev, "write")
        self.pend_thr[b] = t
        self.pend_ins[b] = op.index

    def async_done(self, op, lanes: np.ndarray, off: np.ndarray) -> None:
        """The copy completes: its bytes are no longer pending and hold a write of its thread."""
        b, k = spread(off, op.info.access_bytes, self.tool.g)
        if k > 1:
            lanes = np.repeat(lanes, k)
        t = (lanes + self.base).astype(np.int32)
        self.pend_thr[b] = -1
        sh = self.shared
        sh.thr[0][b] = t
        sh.ins[0][b] = op.index
        sh.ep[0][b] = self.epoch(lanes)
        if sh.fc is not None:
            sh.fc[0][b] = self.hb.fc[lanes]
        sh.thr[1][b] = -1
        sh.thr[2][b] = -1
        if self.hb is not None:
            self.hb.weak_write(b[::k], True)

    def _read(self, sh: Shadow, b, t, e, f, index) -> None:
        """Record a read by threads t (instruction `index`, ~index for a strong read)."""
        thr, ins, ep, fc = sh.thr, sh.ins, sh.ep, sh.fc
        keep = self.racy(thr[1][b], ep[1][b], ins[1][b], t, False,     # a concurrent reader of another thread
                         None if fc is None else fc[1][b])
        new = ~keep
        if new.all():
            thr[1][b], ep[1][b], ins[1][b] = t, e, index
            if fc is not None:
                fc[1][b] = f
            lost = thr[1][b] != t                        # another lane of this instruction holds the slot
            sel = lost
        else:
            bn = b[new]
            thr[1][bn], ep[1][bn], ins[1][bn] = t[new], e[new], index
            if fc is not None:
                fc[1][bn] = f[new]
            sel = keep | (new & (thr[1][b] != t))
        if sel.any():
            bs = b[sel]
            thr[2][bs], ep[2][bs], ins[2][bs] = t[sel], e[sel], index
            if fc is not None:
                fc[2][bs] = f[sel]

    def _check(self, sh: Shadow, slot: int, b, t, atomic: bool, kind: str, space: str, lanes, index: int,
               prev_mode: str | None, cur_mode: str) -> None:
        p = sh.thr[slot][b]
        if not (p >= 0).any():
            return
        pins = sh.ins[slot][b]
        c = self.racy(p, sh.ep[slot][b], pins, t, atomic, None if sh.fc is None else sh.fc[slot][b])
        hit = np.flatnonzero(c)
        if not len(hit):
            return
        ph = pins[hit]
        for pi in (np.unique(ph) if (ph != ph[0]).any() else ph[:1]):   # one record per earlier instruction
            mine = hit[ph == pi]
            k = int(mine[0])
            pi = int(pi)
            pmode = "atomic" if pi < 0 else (prev_mode or "write")
            self._report(kind, space, b[k], int(p[k]), ~pi if pi < 0 else pi, pmode, int(lanes[k]), index, cur_mode,
                         len(np.unique(lanes[mine])))

    def _report(self, kind, space, byte, prev_thread, prev_index, prev_mode, lane, index, mode, count,
                what: str | None = None) -> None:
        geo = self.tool.geo
        prev = self.hooks.who(prev_thread - self.base, prev_index, prev_mode) if \
            0 <= prev_thread - self.base < self.x.nlanes else None
        if prev is None:                                 # a block of an earlier batch
            info = self.tool.san.infos[prev_index]
            prev = Access(geo.block_coords(prev_thread // self.tpbw), geo.thread_coords(prev_thread % self.tpbw),
                          info.line, info.file, prev_mode, prev_index)
        cur = self.hooks.who(lane, index, mode)
        byte = int(byte) * self.tool.g
        if space == "shared":
            address = byte - (lane // self.tpbw) * self.stride
        else:
            address = byte + self.tool.heap.base
        what = what or ("threads of different blocks" if prev.block != cur.block else (
            "lanes of one warp with no syncwarp between them" if prev_thread >> 5 == (lane + self.base) >> 5
            else "threads of one block with no barrier between them"))
        self.hooks.report("racecheck", kind, space, address, (prev, cur), f"{what}", count)
