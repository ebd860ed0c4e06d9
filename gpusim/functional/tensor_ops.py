"""The tensor-core unit of the functional core: `mma.sync`, `ldmatrix`, `stmatrix` over whole warps.

Each op gathers its operands from the 32 lanes of every warp of the step, hands them all at once
to the meaning in `isa.semantics.tensor` (fragment layouts, block-FMA numerics, batched over the
warps by `isa.semantics.mma_batch`), and scatters the result back. These instructions are `.sync.aligned`: every thread of the warp must execute the
same instruction together; a warp with only some of its threads active (a divergent branch, a
guard that differs across lanes, a block size that is not a multiple of 32) is an error naming
the kernel, line, block and thread, never a partial result.

Shared-memory accounting (`gpusim.functional.shared_banks.shared_wavefronts`): each 8x8 matrix of an
`ldmatrix`/`stmatrix` is 8 rows of 16 bytes, one per address lane; the matrices are served one
after another, so a conflict-free `.x4` costs 4 wavefronts, and rows that share banks cost more.

Counters (`gpusim.functional.counters.EXTRA_METRICS`): `sm__inst_executed_pipe_tensor_op_hmma`
(f16/bf16/tf32/fp8 inputs), `_imma` (s8/u8), `_dmma` (f64) per warp instruction;
`smsp__inst_executed_op_ldsm` and the ldmatrix wavefronts, which Nsight also counts among the
shared loads' (`l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld`, its bank conflicts those beyond
one wavefront a matrix: on an H100 and an H200 the mma.sync GEMMs' shared-load wavefronts equal
their ldmatrix wavefronts with no conflicts, data/measurements/h{100,200}_tensor.json); stmatrix
counts as a shared store.
The compiled fast core (`fastpath`) keeps these reference ops as they are.

The sanitizer sees each row of an `ldmatrix`/`stmatrix` as a 16-byte shared read/write by the
lane that gave its address (racecheck, initcheck; memcheck through the bounds and alignment
checks), and the traces (bank maps) get the same rows.

Does not model: time.

Sources: PTX ISA 9.0, 9.7.14 "Warp Level Matrix Multiply-Accumulate Instructions".
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
from numba import njit

from gpusim.errors import BarrierError
from gpusim.functional.collectives import pack_lanes, unpack_lanes
from gpusim.functional.fastpath.lsu_kernels import group_wavefronts
from gpusim.functional.ops import AddressOp, Op
from gpusim.functional.stack_kernels import full_warps
from isa.errors import UnsupportedInstruction
from isa.program import Address, Vector
from isa.semantics import tensor as T

U32 = np.dtype(np.uint32)
U64 = np.uint64
FULL = np.uint32(0xFFFFFFFF)
PIPE_FIELD = {"s8": "tensor_imma_inst", "u8": "tensor_imma_inst", "f64": "tensor_dmma_inst"}


def active_warps(op, x) -> np.ndarray:
    """Span-relative indices of the warps that execute `op` (all 32 lanes, guard applied); an
    error for a warp that executes it with only some of its lanes (module docstring)."""
    masks = x.span_masks
    if op.guard is not None:
        g = op.guard_mask(x)
        masks = masks & pack_lanes(g) if type(g) is np.ndarray else (masks if g else np.zeros_like(masks))
    out = np.empty(len(masks), np.int64)
    n = full_warps(masks, out)                       # (one compiled pass; a partial warp: found below)
    if n >= 0:
        return out[:n]
    part = np.flatnonzero((masks != 0) & (masks != FULL))
    if len(part):
        w = int(part[0])
        lane = int(np.flatnonzero(~unpack_lanes(masks[w:w + 1]))[0])
        block, thread = x.lane_coords(x.state.lo + 32 * w + lane)
        raise BarrierError("partial warp at a .sync.aligned instruction", kernel=x.kernel_name,
                           source=x.source(op.index), block=block, thread=thread,
                           detail=f"{op.info.mnemonic} needs all 32 threads of the warp; active mask "
                                  f"{int(masks[w]):#010x} (thread {thread} does not execute it)")
    return np.flatnonzero(masks == FULL)


def lane_mask(x, warps: np.ndarray) -> np.ndarray:
    """Bool over the span: the lanes of `warps`."""
    m = np.zeros(x.state.hi - x.state.lo, bool)
    m.reshape(-1, 32)[warps] = True
    return m


def gather(x, srcs, dt=U32) -> np.ndarray:
    """Source values over the span as an array (warps of the span, 32, len(srcs))."""
    st = x.state
    return np.stack([st.full(f(st, x), dt) for f in srcs], -1).reshape(-1, 32, len(srcs))


def scatter(x, dsts, vals: np.ndarray, warps: np.ndarray) -> None:
    """Write vals (warps of the span, 32, len(dsts)) into `dsts` for the lanes of `warps`."""
    m = None if len(warps) == vals.shape[0] else lane_mask(x, warps)   # None: every warp of the span
    rows = np.ascontiguousarray(np.moveaxis(vals, 2, 0)).reshape(len(dsts), -1)  # one copy, a row per register
    for k, d in enumerate(dsts):
        if d is not None:
            x.state.write(d, rows[k], m)


class MmaOp(Op):
    __slots__ = ("form", "srcs", "dsts", "nregs", "field")

    def run(self, x):
        warps = active_warps(self, x)
        if not len(warps):
            return
        if self.index in x.value_free:                   # prediction only: no path or address needs D
            x.counters.add_extra(self.index, self.field, len(warps))
            return
        na, nb, nc = self.nregs
        regs = gather(x, self.srcs)
        out = np.zeros(regs.shape[:2] + (nc,), np.uint32)
        r = regs[warps]                                  # every executing warp at once
        out[warps] = T.mma_sync(self.form, r[..., :na], r[..., na:na + nb], r[..., na + nb:])
        scatter(x, self.dsts, out, warps)
        x.counters.add_extra(self.index, self.field, len(warps))


class LdsmOp(AddressOp):
    """ldmatrix (`store` False) / stmatrix: see the module docstring."""
    __slots__ = ("form", "map", "srcs", "dsts")
    sanitizer_bytes = 16                                 # one row of an 8 x 8 b16 matrix per address lane

    def _rows(self, x, warps):
        """The active warps' rows, all at once: (lanes giving row addresses (W, 8 nmat), their
        shared offsets within the block, each warp's block window in the shared buffer (W,), row
        offsets into the buffer (W, 8 nmat), the access for errors)."""
        f = self.form
        a = self.addresses(x)
        a = np.broadcast_to(np.asarray(a, U64), (x.state.hi - x.state.lo,)).reshape(-1, 32)
        nrow = 8 * f.nmat
        acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=16, is_store=f.store))
        lsu = x.lsu
        rows = a[warps, :nrow]                                         # (W, nrow)
        lanes = x.state.lo + 32 * warps.astype(np.int64)[:, None] + np.arange(nrow)
        bad = np.flatnonzero(((rows + U64(16) > U64(lsu.shared_bytes)) | (rows & U64(15) != 0)).ravel())
        if len(bad):                                                   # the first in warp, then row, order
            k = int(bad[0])
            row, lane = int(rows.ravel()[k]), int(lanes.ravel()[k])
            bad_align = row % 16 != 0
            x.fail_access(acc, lane, row, "shared",
                          "misaligned: each row address must be a multiple of 16" if bad_align else
                          f"the block has {lsu.shared_bytes} bytes of shared memory",
                          kind="misaligned address" if bad_align else "out-of-bounds address")
        base = x.cta_slot(lanes[:, 0]).astype(U64) * U64(lsu.shared_stride)          # (W,)
        return lanes, rows, base, rows + base[:, None], acc

    def _elements(self, rows, base) -> np.ndarray:
        """Byte offsets (W, 32, nmat, 2) into the shared buffer of each lane's registers' halves."""
        src, col = self.map
        return (rows[:, src] + (U64(2) * col.astype(U64) + base[:, None, None, None])).astype(np.int64)

    def _count(self, x, rows) -> int:
        """Wavefronts of every active warp: each 8x8 matrix (8 rows of 16 bytes) of each warp
        served on its own (`shared_banks.shared_wavefronts` per matrix, compiled over all of them)."""
        width = x.lsu.bank_width
        words = rows.ravel() >> U64(width.bit_length() - 1)
        return int(group_wavefronts(words, 8, max(1, 16 // width), x.lsu.banks))

    def run(self, x):
        warps = active_warps(self, x)
        if not len(warps):
            return
        f = self.form
        fast = None if f.store or x.san is not None or x.record is not None else self._fast_rows(x, warps)
        if fast is not None:
            rows, base = fast
        else:
            lanes, rows, base, off, acc = self._rows(x, warps)
            x.trace_access(self, "shared", lanes.ravel(), off.ravel(), 16, f.store, 8)
            if x.san is not None:                                      # each row: 16 bytes, in buffer offsets
                for ln, o in zip(lanes, off):
                    x.san.access(acc, "shared", ln, o)
        wf = self._count(x, rows)
        if f.store:
            buf = x.lsu.shared.view(np.uint16)
            vals = gather(x, self.srcs)
            for e, w in zip(self._elements(rows, base), warps):       # warp by warp: a later warp's rows win
                v = vals[w]                                            # (32, nmat)
                halves = np.stack([v & 0xFFFF, v >> 16], -1).astype(np.uint16)
                buf[e // 2] = halves
            x.counters.add_shared(self.index, "st", len(warps), wf)
            return
        if self.index not in x.value_free:                             # prediction only: no path or address needs them
            self._load(x, warps, rows, base)
        x.counters.add_extra(self.index, "ldsm_inst", len(warps))
        x.counters.add_extra(self.index, "shared_ldsm_wavefronts", wf)
        # Nsight counts them among the shared loads' wavefronts too, and their bank conflicts
        # beyond one wavefront a matrix (module docstring)
        x.counters.add_shared(self.index, "ld", f.nmat * len(warps), wf)

    def _arrays(self, st, every: bool) -> list | None:
        """The destination registers' own arrays (`BatchState.array_for`'s, uint32, over the
        batch; made where one holds one value, filled with it unless `every` warp of a whole span
        writes it), for `_halves` to write the executing warps' lanes into: what `BatchState.write`
        with their lanes' mask gives, without a row per register and a masked copy of each; None
        where a register is not a distinct uint32 one or holds an array not its own (`_load`'s
        rows then)."""
        regs, rd = st.regs, st.reg_dtypes
        d = self.dsts
        if None in d or len(set(d)) != len(d) or any(rd[r] != U32 for r in d):
            return None
        fill = not (every and st.whole)
        out = []
        for r in d:
            v = regs[r]
            if type(v) is not np.ndarray:
                v = regs[r] = st.array_for(r, v if fill else None)
            elif v is not st.spare[r]:
                return None                              # (only its own array is written in place)
            out.append(v)
        return out

    def _fast_rows(self, x, warps) -> tuple | None:
        """`_rows`' row addresses and block windows (the same arrays) in one compiled pass, for an
        ldmatrix with neither sanitizer nor trace; None, having changed nothing, where a row is
        out of bounds or misaligned (`_rows` then reports it) or the addresses are not one uint64
        per lane."""
        a = self.addresses(x)
        if type(a) is not np.ndarray or a.dtype != U64:
            return None
        lsu = x.lsu
        rows = np.empty((len(warps), 8 * self.form.nmat), U64)
        base = np.empty(len(warps), U64)
        if not _checked_rows(a, np.asarray(warps, np.int64), lsu.shared_bytes, x.state.lo, x.wpc * 32,
                             U64(lsu.shared_stride), rows, base):
            return None
        return rows, base

    def _load(self, x, warps, rows, base) -> None:
        """The registers of the lanes of `warps` from their rows (`_rows`' rows and windows): a
        register's 32 bits from its two b16 halves, in one compiled pass where the shared buffer
        is one array of them."""
        st = x.state
        nmat = self.form.nmat
        nlanes = st.hi - st.lo
        smem = x.lsu.shared
        dst = self._arrays(st, len(warps) == nlanes // 32)
        if dst is not None and smem.size % 2 == 0 and smem.flags.c_contiguous:   # into the registers themselves
            src, col = self.map
            lo = st.lo
            _halves(smem.view(np.uint16), rows.view(np.int64), src, col, base.view(np.int64), np.asarray(warps, np.int64),
                    dst[0][lo:], dst[1 % nmat][lo:], dst[2 % nmat][lo:], dst[3 % nmat][lo:])
            return
        out = np.zeros((nmat, nlanes), np.uint32)                      # a row per register
        if smem.size % 2 == 0 and smem.flags.c_contiguous:
            src, col = self.map                                        # (rows and windows: uint64 offsets)
            _halves(smem.view(np.uint16), rows.view(np.int64), src, col, base.view(np.int64), np.asarray(warps, np.int64),
                    *(out[k % nmat] for k in range(4)))
        else:
            h = smem.view(np.uint16)[self._elements(rows, base) // 2].astype(np.uint32)     # (W, 32, nmat, 2)
            out.reshape(nmat, -1, 32)[:, warps] = np.moveaxis(h[..., 0] | (h[..., 1] << 16), 2, 0)
        m = None if len(warps) == nlanes // 32 else lane_mask(x, warps)
        for k, d in enumerate(self.dsts):
            if d is not None:
                st.write(d, out[k], m)


@njit(cache=True, nogil=True)
def _checked_rows(addr, warps, shared_bytes, lo, block_lanes, stride, rows, base):
    """What `LdsmOp._rows` finds, for address lanes addr (the span's): rows[w] the row addresses
    of executing warp warps[w] (its first rows.shape[1] lanes'), base[w] its block's window in
    the shared buffer; False, with them partly written, where a row is out of the block's
    shared bytes or not 16-byte aligned."""
    for w in range(len(warps)):
        for r in range(rows.shape[1]):
            a = addr[32 * warps[w] + r]
            if a & U64(15) or a + U64(16) > U64(shared_bytes):
                return False
            rows[w, r] = a
        base[w] = U64((lo + 32 * warps[w]) // block_lanes) * stride
    return True


@njit(cache=True, nogil=True)
def _halves(buf, rows, src, col, base, warps, o0, o1, o2, o3):
    """Each register of an ldmatrix from its two b16 halves of `buf` (uint16): lane l of warp
    warps[w] register j (o_j[32 warps[w] + l], the span's lanes from 0; j < src.shape[1], the
    others unused) half h at byte rows[w, src[l, j, h]] + 2 col[l, j, h] + base[w]
    (`LdsmOp._elements`; the rows checked), the low half first."""
    for w in range(len(warps)):
        b = base[w]
        for lane in range(32):
            at = 32 * warps[w] + lane
            for j in range(src.shape[1]):
                lo = buf[(rows[w, src[lane, j, 0]] + 2 * col[lane, j, 0] + b) >> 1]
                hi = buf[(rows[w, src[lane, j, 1]] + 2 * col[lane, j, 1] + b) >> 1]
                v = np.uint32(lo) | (np.uint32(hi) << 16)
                if j == 0:
                    o0[at] = v
                elif j == 1:
                    o1[at] = v
                elif j == 2:
                    o2[at] = v
                else:
                    o3[at] = v


def make(dec, ins, i: int, spec, bound, guard):
    """The op for a `tensor`-kind instruction (called by `ops.OpFactory.make`)."""
    if ins.opcode == "mma":
        op = MmaOp()
        op.form = T.parse_mma(ins)
        op.nregs = op.form.nregs()
        op.field = PIPE_FIELD.get(op.form.atype, "tensor_hmma_inst")
        op.dsts = dec.flat_dests(ins.operands[:1], ins)
        op.srcs = dec.flat_sources(ins.operands[1:], bound.src_types, ins)
    elif ins.opcode in ("ldmatrix", "stmatrix"):
        op = LdsmOp()
        op.form = T.parse_ldsm(ins)
        src, col = T.ldsm_map(op.form.nmat, op.form.trans)
        op.map = (src, np.asarray(col, np.int64))   # (the compiled load's column type, converted once)
        op.space = "shared"
        addr = ins.operands[0 if op.form.store else 1]
        vec = ins.operands[1 if op.form.store else 0]
        if not isinstance(addr, Address) or not isinstance(vec, Vector):
            raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                         reason="expected a register vector and a [address]")
        op.set_address(dec, ins, addr)
        if op.form.store:
            op.srcs = dec.flat_sources([vec], bound.src_types[1:], ins)
            op.dsts = []
        else:
            op.dsts = dec.flat_dests([vec], ins)
            op.srcs = []
    else:
        return None
    op.index, op.guard = i, guard
    return op
