"""The Tensor Memory Accelerator (TMA) of the functional core: `cp.async.bulk` and
`cp.async.bulk.tensor` copies, their bulk groups, and the tensor maps they read (meaning:
`isa.semantics.bulk_copy`, `isa.semantics.tensor_map`).

Each active thread that executes a copy issues one (lane order). A copy is carried out when
it issues: the source is read, the destination written, and for copies into shared memory the
mbarrier named by the instruction receives `complete_tx` of the copy's bytes (the phase then
completes as `isa.semantics.async_copy.mbarrier_update` says). A program that waits on the
mbarrier (or `cp.async.bulk.wait_group`) before touching the data, as PTX requires, sees what
the GPU gives; `commit_group`/`wait_group` have nothing left to wait for. A read of the
destination before the wait sees the new bytes here, where the GPU may show either
(DEVIATIONS.md).

Checks, each an error naming the kernel, line, block and thread: every global and shared byte
of a copy inside an allocation / the CTA's shared memory (compute-sanitizer memcheck's
out-of-bounds and misaligned faults: the first offending element is named); bulk sizes and
addresses 16-byte aligned; a tensor copy's shared address 128-byte aligned; the tensor map
64-byte aligned, a map gpusim encoded (`gpusim.TensorMap`), valid by cuTensorMapEncodeTiled's
rules and of the copy's rank (`KernelError` "invalid tensor map"); a tensor copy's box starting
at a 16-byte aligned global address (`tensor_map.start_problem`: the GPU stops such a kernel
with an illegal instruction; `KernelError` "illegal instruction (misaligned tensor copy)",
memcheck's "illegal instruction" under `check=`).

Counters (`counters.EXTRA_METRICS`, Nsight Compute's names; bulk copies count as TMA
operations like tensor copies): `smsp__sass_inst_executed_op_tma_ld.sum` /
`_op_tma_st.sum` per warp instruction, `l1tex__m_xbar2l1tex_read_{bytes,sectors}_mem_global_op_tma_ld.sum`
(32-byte sectors of global memory a load reads, and their bytes) and
`l1tex__m_l1tex2xbar_write_{bytes,sectors}_mem_global_op_tma_st.sum` (those a store writes).

Does not model: the racecheck view of copies (initcheck sees the bytes they
write), `cp.reduce.async.bulk` (refused at decode).

Timing (gpusim/timing/tma.py, mbarrier.py): each copy traces its global sectors
(`trace_access`, a store's with `is_store`) and its own block's `complete_tx` (`trace_mbarrier`), so
the SM's TMA unit times it and completes the mbarrier when its bytes land.

Sources: PTX ISA 9.0, 9.7.9.25.4-7 (cp.async.bulk, .tensor, commit_group, wait_group);
CUDA Driver API `cuTensorMapEncodeTiled`.
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from gpusim.errors import KernelError
from gpusim.functional.ops import AddressOp, NopOp, Op
from isa.errors import UnsupportedInstruction
from isa.memory_map import (CLUSTER_RANK_SHIFT, CONST_WINDOW_BASE, CTA_OFFSET_MASK, PARAM_WINDOW_BASE,
                            WINDOW_BYTES)
from isa.program import Address
from isa.semantics import async_copy as A
from isa.semantics import bulk_copy as B
from isa.semantics import mma_layout as L
from isa.semantics import tensor_map as T

U64 = np.uint64
CHECKED_MAPS_KEPT = 256
_CHECKED_MAPS: dict[bytes, T.TensorMapFields] = {}   # map bytes -> their fields, decoded and found valid (pure)
SECTOR = 32


def _fetch_address(dec, ins, addr: Address):
    """A function (state, executor) -> the operand's u64 address(es) over the span."""
    h = AddressOp()
    h.set_address(dec, ins, addr)
    base, off = h.base, h.offset
    return lambda st, x: base(st, x) + off


def _at(v, rel: np.ndarray, span: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(v), (span,))[rel]


class _Copy(Op):
    """Shared machinery of the bulk and tensor copies (module docstring)."""
    __slots__ = ("form", "dst", "src", "size", "mbar", "mask", "tmap", "coords")

    def _acc(self, nbytes: int, store: bool):
        return SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=nbytes, is_store=store),
                               dt=np.dtype(np.uint8))

    def run(self, x):
        st = x.state
        m = np.ones(st.hi - st.lo, bool) if st.m is None else st.m
        if self.guard is not None:
            m = m & self.guard_mask(x)
        lanes = st.lo + np.flatnonzero(m)
        if not len(lanes):
            return
        span = st.hi - st.lo
        rel = lanes - st.lo
        vals = {k: _at(f(st, x), rel, span) for k, f in self._fetchers().items()}
        for j, lane in enumerate(lanes.tolist()):
            self.one(x, lane, {k: v[j] for k, v in vals.items()})
        w = lanes >> 5
        x.counters.add_extra(self.index, "tma_st_inst" if self.form.kind == "s2g" else "tma_ld_inst",
                             len(np.unique(w)))

    def _fetchers(self) -> dict:
        out = {k: getattr(self, k) for k in ("dst", "src", "size", "mbar", "mask") if getattr(self, k) is not None}
        if self.coords is not None:
            out["tmap"] = self.tmap
            for i, c in enumerate(self.coords):
                out[f"c{i}"] = c
        return out

    # ------------------------------------------------------------------ pieces
    def _global(self, x, lane: int, addrs: np.ndarray, nbytes: int, store: bool):
        """(buffer, offsets) of global byte addresses `addrs` (each an access of `nbytes`), checked."""
        return x.lsu._place(self._acc(nbytes, store), "global", np.full(len(addrs), lane), addrs.astype(U64))

    def _shared(self, x, lane: int, addrs: np.ndarray, nbytes: int, store: bool):
        return x.lsu._place(self._acc(nbytes, store), "shared", np.full(len(addrs), lane), addrs.astype(U64))

    def _count_global(self, x, off: np.ndarray, load: bool) -> None:
        sectors = len(np.unique(off.astype(np.int64) // SECTOR))
        what = "ld" if load else "st"
        x.counters.add_extra(self.index, f"tma_{what}_sectors", sectors)
        x.counters.add_extra(self.index, f"tma_{what}_bytes", sectors * SECTOR)

    def _trace(self, x, lane: int, off: np.ndarray, store: bool = False) -> None:
        """The copy's global side for the timing model: its 32-byte sectors (whole)."""
        if x.record is not None and len(off):
            sec = np.unique(off.astype(np.int64) // SECTOR) * SECTOR
            x.trace_access(self, "global", np.full(len(sec), lane), sec.astype(U64), is_store=store)

    def _complete_tx(self, x, lane: int, mbar: int, nbytes: int, own: bool = True) -> None:
        buf, off = self._shared(x, lane, np.array([mbar], np.uint64), 8, True)
        words = buf.view(np.uint64)
        i = int(off[0]) // 8
        words[i] = U64(A.mbarrier_update(int(words[i]), "complete_tx", [nbytes])[0])
        if own:                                # the timing model's mbarrier of the issuing block (timing/mbarrier.py)
            x.trace_mbarrier(self, np.array([lane], np.int64), off, "complete_tx", [np.array([nbytes], np.int64)])

    def _targets(self, x, lane: int, values: dict) -> list[int]:
        """Cluster ranks + 1 a copy into shared memory goes to (0: the address as given)."""
        if not self.form.multicast:
            return [0]
        mask = int(values["mask"]) & 0xFFFF
        size = x.geo.cluster_size
        ranks = [r for r in range(16) if mask >> r & 1]
        if not ranks or ranks[-1] >= size:
            block, thread = x.lane_coords(lane)
            raise KernelError("bad multicast mask", kernel=x.kernel_name, source=x.source(self.index), block=block,
                              thread=thread, detail=f"ctaMask {mask:#06x} names CTA ranks the launch's clusters of "
                                                    f"{size} CTA{'s' if size > 1 else ''} do not have")
        return [r + 1 for r in ranks]

    def _fail(self, x, lane: int, what: str, detail: str) -> None:
        block, thread = x.lane_coords(lane)
        raise KernelError(what, kernel=x.kernel_name, source=x.source(self.index), block=block, thread=thread,
                          detail=f"{self.info.mnemonic}: {detail}")

    def _misaligned(self, x, lane: int, addr: int, space: str, align: int, what: str) -> None:
        acc = self._acc(align, self.form.kind != "s2g")
        x.fail_access(acc, lane, addr, space, f"misaligned: {what} needs an address that is a multiple of {align}",
                      kind="misaligned address")

    @staticmethod
    def _rank_addr(addr: int, target: int) -> int:
        return addr if not target else (addr & CTA_OFFSET_MASK) | (target << CLUSTER_RANK_SHIFT)

    def _san_write(self, x, space: str, off: np.ndarray, nbytes: int) -> None:
        if x.san is not None:
            x.san.async_write(space, off, nbytes)


class BulkCopyOp(_Copy):
    """cp.async.bulk (no tensor map): `size` contiguous bytes."""
    __slots__ = ()

    def one(self, x, lane: int, v: dict) -> None:
        f = self.form
        n = int(v["size"])
        dst, src = int(v["dst"]), int(v["src"])
        for a, sp in ((dst, "shared" if f.kind != "s2g" else "global"), (src, "global" if f.kind == "g2s" else "shared")):
            if a % 16:
                self._misaligned(x, lane, a, sp, 16, "a bulk copy")
        if n % 16 or n <= 0:
            self._fail(x, lane, "bad bulk copy size", f"size {n} bytes is not a positive multiple of 16")
        chunks = np.arange(0, n, 16, dtype=np.int64)
        if f.kind == "g2s":
            gbuf, goff = self._global(x, lane, src + chunks, 16, False)
            data = gbuf[goff.astype(np.int64)[:, None] + np.arange(16)]
            self._count_global(x, goff, True)
            self._trace(x, lane, goff)
            for t in self._targets(x, lane, v):
                sbuf, soff = self._shared(x, lane, self._rank_addr(dst, t) + chunks, 16, True)
                sbuf[soff.astype(np.int64)[:, None] + np.arange(16)] = data
                self._san_write(x, "shared", soff, 16)
                self._complete_tx(x, lane, self._rank_addr(int(v["mbar"]), t), n, own=t == 0)
        elif f.kind == "s2s":
            sbuf, soff = self._shared(x, lane, src + chunks, 16, False)
            data = sbuf[soff.astype(np.int64)[:, None] + np.arange(16)].copy()
            dbuf, doff = self._shared(x, lane, dst + chunks, 16, True)
            dbuf[doff.astype(np.int64)[:, None] + np.arange(16)] = data
            self._san_write(x, "shared", doff, 16)
            self._complete_tx(x, lane, int(v["mbar"]), n)
        else:
            sbuf, soff = self._shared(x, lane, src + chunks, 16, False)
            data = sbuf[soff.astype(np.int64)[:, None] + np.arange(16)].copy()
            gbuf, goff = self._global(x, lane, dst + chunks, 16, True)
            gbuf[goff.astype(np.int64)[:, None] + np.arange(16)] = data
            self._count_global(x, goff, False)
            self._trace(x, lane, goff, store=True)
            self._san_write(x, "global", goff, 16)


class TensorCopyOp(_Copy):
    """cp.async.bulk.tensor (tile mode): the box of a tensor map."""
    __slots__ = ()

    def _map(self, x, lane: int, addr: int) -> T.TensorMapFields:
        """The tensor map at generic / param / const / global address `addr`, decoded and checked."""
        if addr % 64:
            self._misaligned(x, lane, addr, "global", 64, "a tensor map")
        if PARAM_WINDOW_BASE <= addr < PARAM_WINDOW_BASE + WINDOW_BYTES or addr < WINDOW_BYTES:
            win, _ = x.lsu.param_window()
            off = addr - PARAM_WINDOW_BASE if addr >= PARAM_WINDOW_BASE else addr
            raw = bytes(win[off:off + T.MAP_BYTES]) if off + T.MAP_BYTES <= len(win) else b""
            if not raw:
                self._fail(x, lane, "invalid tensor map", f"address {addr:#x} is not a 128-byte kernel parameter")
        else:
            space = "const" if CONST_WINDOW_BASE <= addr < CONST_WINDOW_BASE + WINDOW_BYTES else "global"
            a = addr - CONST_WINDOW_BASE if space == "const" else addr
            buf, off = x.lsu._place(self._acc(16, False), space, np.full(8, lane), U64(a) + np.arange(0, 128, 16, dtype=U64))
            raw = bytes(buf[int(off[0]):int(off[0]) + T.MAP_BYTES])
        f = _CHECKED_MAPS.get(raw)
        if f is None:
            try:
                f = T.decode(raw)
            except ValueError as e:
                self._fail(x, lane, "invalid tensor map", str(e))
            why = T.problems(f)
            if why is not None:
                self._fail(x, lane, "invalid tensor map", f"{why} (cuTensorMapEncodeTiled would refuse it)")
            why = T.unmodelled(f)
            if why is not None:
                raise UnsupportedInstruction(self.info.mnemonic, ptx_line=self.info.ptx_line, kernel=x.kernel_name,
                                             source=x.source(self.index), reason=f"a tensor map with {why} is not modelled")
            if len(_CHECKED_MAPS) >= CHECKED_MAPS_KEPT:
                _CHECKED_MAPS.clear()
            _CHECKED_MAPS[raw] = f
        if f.rank != self.form.rank:
            self._fail(x, lane, "invalid tensor map", f"a .{self.form.rank}d copy with a rank-{f.rank} tensor map")
        return f

    def one(self, x, lane: int, v: dict) -> None:
        f = self._map(x, lane, int(v["tmap"]))
        coords = [int(np.int32(np.int64(v[f"c{i}"]) & 0xFFFFFFFF)) for i in range(f.rank)]
        why, title = T.start_problem(f, coords), "misaligned tensor copy"
        if why is None and self.form.kind != "g2s":
            why, title = T.store_problem(f, coords), "tensor store before the tensor"
        if why is not None:
            if x.san is not None:
                x.san.fault("memcheck", "illegal instruction", self.index, lane, "global", None, why)
            self._fail(x, lane, f"illegal instruction ({title})", f"coordinates {tuple(coords)}: {why}")
        load = self.form.kind == "g2s"
        base = int(v["dst"] if load else v["src"])
        if base % 128:
            self._misaligned(x, lane, base, "shared", 128, "a tensor copy's shared-memory box")
        whole = T.box_chunks(f, coords)
        if whole is not None:                  # every element inside the tensor: moved in 16-byte pieces
            self._whole(x, lane, v, f, base, *whole)
            return
        glob, ok, boff = T.box_elements(f, coords)
        esz = f.elem_bytes
        nbytes = T.box_bytes(f)
        sw = f.swizzle_name
        gaddr = np.int64(f.address) + glob[ok]
        lanes_ok = np.arange(esz)
        if load:
            data = np.empty((len(glob), esz), np.uint8)
            fill = np.frombuffer(int(T.fill_bits(f)).to_bytes(esz, "little"), np.uint8)
            data[:] = fill
            if ok.any():
                gbuf, goff = self._global(x, lane, gaddr, esz, False)
                data[ok] = gbuf[goff.astype(np.int64)[:, None] + lanes_ok]
                self._count_global(x, goff, True)
                self._trace(x, lane, goff)
            else:
                self._count_global(x, np.zeros(0, np.int64), True)
            for t in self._targets(x, lane, v):
                addr = L.swizzle_addr(np.int64(self._rank_addr(base, t)) + boff, sw)
                sbuf, soff = self._shared(x, lane, addr, esz, True)
                sbuf[soff.astype(np.int64)[:, None] + lanes_ok] = data
                self._san_write(x, "shared", soff, esz)
                self._complete_tx(x, lane, self._rank_addr(int(v["mbar"]), t), nbytes, own=t == 0)
        else:
            addr = L.swizzle_addr(np.int64(base) + boff[ok], sw)
            if not ok.any():
                self._count_global(x, np.zeros(0, np.int64), False)
                return
            sbuf, soff = self._shared(x, lane, addr, esz, False)
            data = sbuf[soff.astype(np.int64)[:, None] + lanes_ok].copy()
            gbuf, goff = self._global(x, lane, gaddr, esz, True)
            gbuf[goff.astype(np.int64)[:, None] + lanes_ok] = data
            self._count_global(x, goff, False)
            self._trace(x, lane, goff, store=True)
            self._san_write(x, "global", goff, esz)


    def _whole(self, x, lane: int, v: dict, f: T.TensorMapFields, base: int, glob: np.ndarray,
               boff: np.ndarray) -> None:
        """A box wholly inside the tensor, moved as 16-byte pieces (`tensor_map.box_chunks`): the
        bytes, checks, counters and trace of the per-element path, with a sixteenth of its work
        for 1-byte elements. A row's pieces stay whole under every swizzle (it permutes 16-byte
        granules)."""
        piece = np.arange(T.CHUNK_BYTES)
        gaddr = np.int64(f.address) + glob
        n = T.CHUNK_BYTES
        if self.form.kind == "g2s":
            gbuf, goff = self._global(x, lane, gaddr, n, False)
            data = gbuf[goff.astype(np.int64)[:, None] + piece]
            self._count_global(x, goff, True)
            self._trace(x, lane, goff)
            nbytes = T.box_bytes(f)
            for t in self._targets(x, lane, v):
                addr = L.swizzle_addr(np.int64(self._rank_addr(base, t)) + boff, f.swizzle_name)
                sbuf, soff = self._shared(x, lane, addr, n, True)
                sbuf[soff.astype(np.int64)[:, None] + piece] = data
                self._san_write(x, "shared", soff, n)
                self._complete_tx(x, lane, self._rank_addr(int(v["mbar"]), t), nbytes, own=t == 0)
        else:
            addr = L.swizzle_addr(np.int64(base) + boff, f.swizzle_name)
            sbuf, soff = self._shared(x, lane, addr, n, False)
            data = sbuf[soff.astype(np.int64)[:, None] + piece]
            gbuf, goff = self._global(x, lane, gaddr, n, True)
            gbuf[goff.astype(np.int64)[:, None] + piece] = data
            self._count_global(x, goff, False)
            self._trace(x, lane, goff, store=True)
            self._san_write(x, "global", goff, n)


def make(dec, ins, i: int, spec, bound, guard):
    """The op for a `cp.async.bulk...` instruction (called by `async_ops.make`)."""
    f = B.bulk_form(ins)
    if f.kind in ("commit", "wait", "prefetch"):
        op = NopOp()
        op.index, op.guard = i, guard
        return op
    ops = list(ins.operands)
    op = TensorCopyOp() if f.rank else BulkCopyOp()
    op.form = f
    op.dst = op.src = op.size = op.mbar = op.mask = op.tmap = op.coords = None
    nextra = 0
    if f.rank:
        ref = ops[1] if f.kind == "g2s" else ops[0]
        op.tmap = _fetch_address(dec, ins, Address(ref.base, 0))
        op.coords = [dec.fetcher(c, "s32", ins) for c in ref.coords]
        if f.kind == "g2s":
            op.dst, op.mbar = _fetch_address(dec, ins, ops[0]), _fetch_address(dec, ins, ops[2])
            nextra = 3
        else:
            op.src = _fetch_address(dec, ins, ops[1])
            nextra = 2
    else:
        op.dst, op.src = _fetch_address(dec, ins, ops[0]), _fetch_address(dec, ins, ops[1])
        op.size = dec.fetcher(ops[2], "u32", ins)
        if f.kind in ("g2s", "s2s"):
            op.mbar = _fetch_address(dec, ins, ops[3])
            nextra = 4
        else:
            nextra = 3
    if f.multicast:
        op.mask = dec.fetcher(ops[nextra], "u16", ins)
    op.index, op.guard = i, guard
    return op
