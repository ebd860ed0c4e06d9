"""The wmma unit of the functional core: `wmma.load`, `wmma.store` and `wmma.mma` over whole
warps (meaning: `isa.semantics.wmma`).

`wmma.load`/`wmma.store` are `.sync.aligned`: every thread of the warp executes them together
(a partial warp is an error naming the kernel, line, block and thread, `tensor_ops.active_warps`)
with the same address and stride. Each lane's fragment is moved as ptxas moves it: one access per
run of elements contiguous in memory (`wmma.access_plans`: four 4-byte accesses per lane for an
f16 A or B fragment of m16n16k16 in its natural layout, four 8-byte ones for an f32 D), each a
warp-wide request through the load/store unit's checks, counters, traces and sanitizer hooks
(`lsu.LoadStoreUnit._resolve`): bounds, alignment to the access, global requests and sectors or
shared wavefronts, the bank and coalescing maps. A load from `.shared` of 16- or 8-bit elements is
ptxas's ldmatrix instead (`wmma.ldsm_blocks`: each register's 8-row block, four to an LDSM,
`.trans` where a 16-bit pair spans two memory rows), counted as ldmatrix
(`smsp__inst_executed_op_ldsm`, its wavefronts phase by phase) and drawn as one (8 row addresses
per phase). A pointer that is not 16-byte aligned or a stride that is not a multiple of 16 bytes
is refused (`isa.semantics.wmma` module docstring).

Counters: `wmma.mma` adds the HMMA (IMMA for s8/u8) instructions ptxas emits for it, one per
16 x 8 block of D and step of K (`wmma.HW_K`; `sm__inst_executed_pipe_tensor_op_hmma`/`_imma`).

Does not model: time of its own (its SASS is timed as ptxas emits it, `gpusim.timing`, with the
accesses traced here on that SASS's LDSM/LDS/LDG/STS/STG: `gpusim.frontend.sass.payloads`).

Sources: PTX ISA 9.0, 9.7.13 "Warp Level Matrix Multiply-Accumulate Instructions".
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from gpusim.errors import KernelError
from gpusim.functional.fastpath.lsu_kernels import group_wavefronts
from gpusim.functional.ops import AddressOp, Op
from gpusim.functional.tensor_ops import active_warps, gather, scatter
from isa.errors import UnsupportedInstruction
from isa.program import Address, Vector
from isa.semantics import wmma as W

U64 = np.uint64
U32 = np.dtype(np.uint32)


def _uniform(op, x, warps: np.ndarray, vals: np.ndarray, what: str) -> np.ndarray:
    """Per warp of `warps`, the value `vals` (span warps, 32) has in all of its lanes; an error
    naming the first lane that differs."""
    v = vals[warps]
    diff = v != v[:, :1]
    if diff.any():
        wi, lane = (int(i) for i in np.argwhere(diff)[0])
        block, thread = x.lane_coords(x.state.lo + 32 * int(warps[wi]) + lane)
        raise KernelError(f"non-uniform {what} at {op.info.mnemonic.split('.')[0]}.{op.info.mnemonic.split('.')[1]}",
                          kernel=x.kernel_name, source=x.source(op.index), block=block, thread=thread,
                          detail=f"{op.info.mnemonic}: the {what} must be the same in every thread of the warp; "
                                 f"lane {lane} has {int(v[wi, lane]):#x}, lane 0 {int(v[wi, 0]):#x}")
    return v[:, 0]


class WmmaMemOp(AddressOp):
    """wmma.load (`form.store` False) / wmma.store: see the module docstring."""
    __slots__ = ("form", "groups", "ldsm", "srcs", "dsts", "stride_src")

    @property
    def sanitizer_bytes(self) -> int:
        return min(p.nbytes for p in self.groups)

    def _setup(self, x, warps):
        """(absolute lanes of `warps`, per-lane base address, per-lane stride in elements)."""
        st = x.state
        span = st.hi - st.lo
        base = np.broadcast_to(np.asarray(self.addresses(x), U64), (span,)).reshape(-1, 32)
        p = _uniform(self, x, warps, base, "address")
        if self.stride_src is None:
            stride = np.full(len(warps), W.default_stride(self.form), np.int64)
        else:
            sv = np.asarray(st.full(self.stride_src(st, x), U32)).reshape(-1, 32).astype(np.int64)
            stride = _uniform(self, x, warps, sv, "stride")
        lanes = (st.lo + 32 * warps[:, None] + np.arange(32)).ravel()
        strides = np.unique(stride)
        bad_stride = np.array([W.check_stride(self.form, int(v)) is not None for v in strides.tolist()])
        bad = bad_stride[np.searchsorted(strides, stride)] | (p % U64(16) != 0)
        for k in np.flatnonzero(bad)[:1].tolist():                 # the first warp in order
            why = W.check_stride(self.form, int(stride[k]))
            if why is None and int(p[k]) % 16:
                why = f"address {int(p[k]):#x} is not 16-byte aligned (CUDA requires a 256-bit aligned pointer)"
            if why is not None:
                block, thread = x.lane_coords(int(lanes[32 * k]))
                raise KernelError(f"bad {self.info.mnemonic.split('.')[1]} operand", kernel=x.kernel_name,
                                  source=x.source(self.index), block=block, thread=thread,
                                  detail=f"{self.info.mnemonic}: {why}")
        return lanes, np.repeat(p, 32), np.repeat(stride, 32)

    def run(self, x):
        warps = active_warps(self, x)
        if not len(warps):
            return
        f = self.form
        lanes, p, stride = self._setup(x, warps)
        fm = W.frag_map(f.shape, f.frag, f.etype)
        r, c = fm[..., 0][None], fm[..., 1][None]                 # (1, 32, U, e)
        s = stride.reshape(-1, 32)[:, :, None, None]
        idx = (r * s + c) if f.layout == "row" else (c * s + r)
        offs = (idx * f.esize).reshape(len(lanes), *fm.shape[1:3]).astype(U64)   # (lanes, U, e)
        bits = W.ELEM_BITS[f.etype]
        nu, ne = fm.shape[1], fm.shape[2]
        if f.store:
            regs = gather(x, self.srcs)[warps].reshape(len(lanes), -1)[:, :nu].astype(U64)
            sh = np.arange(ne, dtype=U64) * U64(bits)
            elems = (regs[..., None] >> sh) & U64((1 << bits) - 1)   # (lanes, U, e)
        else:
            elems = np.zeros((len(lanes), nu, ne), U64)
        esz = f.esize
        lsu = x.lsu
        if self.ldsm is not None:
            self._ldsm(x, lanes, p, stride, offs, elems)
        for plan in (() if self.ldsm is not None else self.groups):
            r0, h0 = plan.elems[0]
            nbytes = plan.nbytes
            acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=nbytes, is_store=f.store),
                                  dt=np.dtype(np.uint8), space=f.space, opname="wmma")
            start = W.transposed_offsets(f, r0, stride).astype(U64) if plan.transposed else offs[:, r0, h0]
            addr = p + start
            for space, buf, off, lanes_s, pos in lsu._resolve(acc, lanes, addr):
                if space == "const" and f.store:
                    x.fail_access(acc, int(lanes_s[0]), int(off[0]), "const", "constant memory is read-only")
                x.trace_access(self, space, lanes_s, off, nbytes, f.store)
                if x.san is not None:
                    x.san.access(acc, space, lanes_s, off)
                lsu._count(acc, space, lanes_s, off)
                # each element at its own address (a transposed access moves the same block's
                # bytes between lanes: the address map is the same affine one for the whole block)
                base = off.astype(np.int64) - start[pos].astype(np.int64)
                for rr, hh in (plan.elems if f.store or self.index not in x.value_free else ()):
                    cols = (base + offs[pos, rr, hh].astype(np.int64))[:, None] + np.arange(esz)
                    if f.store:
                        v = elems[pos, rr, hh]
                        buf[cols] = ((v[:, None] >> (U64(8) * np.arange(esz, dtype=U64))) & U64(0xFF)).astype(np.uint8)
                    else:
                        raw = buf[cols].astype(U64)
                        elems[pos, rr, hh] = np.bitwise_or.reduce(raw << (U64(8) * np.arange(esz, dtype=U64)), axis=1)
        if f.store or self.index in x.value_free:     # prediction only: no path or address needs the fragment
            return
        sh = np.arange(ne, dtype=U64) * U64(bits)
        uniq = np.bitwise_or.reduce(elems << sh, axis=-1).astype(np.uint32)     # (lanes, U)
        n = len(self.dsts)
        out = np.zeros(((x.state.hi - x.state.lo) // 32, 32, n), np.uint32)
        out[warps] = uniq[:, np.arange(n) % nu].reshape(len(warps), 32, n)
        scatter(x, self.dsts, out, warps)


    def _ldsm(self, x, lanes, p, stride, offs, elems) -> None:
        """A load from .shared as ptxas makes it: ldmatrix of each register's 8-row block, four
        registers to an instruction (`wmma.ldsm_blocks`); the elements from their own addresses."""
        f = self.form
        lsu = x.lsu
        nw = len(lanes) // 32
        pw, sw = p.reshape(nw, 32)[:, 0], stride.reshape(nw, 32)[:, 0]
        acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=16, is_store=False),
                              dt=np.dtype(np.uint8), space="shared", opname="wmma")
        for c0 in range(0, len(self.ldsm), 4):
            chunk = self.ldsm[c0:c0 + 4]
            rows = np.concatenate([W.ldsm_row_offsets(f, reg, sw) for reg, _ in chunk], axis=1)   # (nw, 8 n)
            row_lanes = lanes.reshape(nw, 32)[:, :rows.shape[1]].ravel()
            buf, off = lsu._place(acc, "shared", row_lanes, (pw[:, None] + rows.astype(U64)).ravel())
            x.trace_access(self, "shared", row_lanes, off, 16, False, 8)
            if x.san is not None:
                x.san.access(acc, "shared", row_lanes, off)
            local = off - x.cta_slot(row_lanes).astype(U64) * U64(lsu.shared_stride)
            # each 8-row matrix of each warp on its own (shared_banks.shared_wavefronts per matrix, compiled)
            words = local >> U64(lsu.bank_width.bit_length() - 1)
            wf = group_wavefronts(words, 8, max(1, 16 // lsu.bank_width), lsu.banks)
            x.counters.add_extra(self.index, "ldsm_inst", nw)
            x.counters.add_extra(self.index, "shared_ldsm_wavefronts", int(wf))
            x.counters.add_shared(self.index, "ld", len(chunk) * nw, int(wf))     # as tensor_ops counts ldmatrix
        if self.index in x.value_free:                 # prediction only: no path or address needs the fragment
            return
        base = x.cta_slot(lanes).astype(np.int64) * lsu.shared_stride + p.astype(np.int64)
        esz = f.esize
        for rr in range(offs.shape[1]):
            for hh in range(offs.shape[2]):
                cols = (base + offs[:, rr, hh].astype(np.int64))[:, None] + np.arange(esz)
                raw = lsu.shared[cols].astype(U64)
                elems[:, rr, hh] = np.bitwise_or.reduce(raw << (U64(8) * np.arange(esz, dtype=U64)), axis=1)


class WmmaMmaOp(Op):
    __slots__ = ("form", "srcs", "dsts", "nregs", "field", "hmmas")

    def run(self, x):
        warps = active_warps(self, x)
        if not len(warps):
            return
        x.counters.add_extra(self.index, self.field, self.hmmas * len(warps))
        if self.index in x.value_free:                   # prediction only: no path or address needs D
            return
        nd, na, nb, nc = self.nregs
        regs = gather(x, self.srcs)
        out = np.zeros(regs.shape[:2] + (nd,), np.uint32)
        rg = regs[warps]                                 # every active warp's tile at once (isa.semantics.wmma.mma)
        out[warps] = W.mma(self.form, rg[..., :na], rg[..., na:na + nb], rg[..., na + nb:])
        scatter(x, self.dsts, out, warps)


def make(dec, ins, i: int, spec, bound, guard):
    """The op for a `wmma` instruction (called by `ops.OpFactory.make`)."""
    def reject(why):
        return UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name, reason=why)
    ops = list(ins.operands)
    if ins.suffixes[:1] == ("mma",):
        op = WmmaMmaOp()
        f = op.form = W.parse_mma(ins)
        op.nregs = f.nregs()
        if len(ops) != 4 or not all(isinstance(o, Vector) for o in ops):
            raise reject("expected {d}, {a}, {b}, {c}")
        op.dsts = dec.flat_dests(ops[:1], ins)
        op.srcs = dec.flat_sources(ops[1:], bound.src_types, ins)
        m, n, k = W.SHAPES[f.shape]
        op.hmmas = (m * n // 128) * (k // W.HW_K[f.atype])
        op.field = "tensor_imma_inst" if f.atype in ("s8", "u8") else "tensor_hmma_inst"
    else:
        op = WmmaMemOp()
        f = op.form = W.parse_mem(ins)
        op.space = f.space
        op.groups = W.access_plans(f.shape, f.frag, f.etype, f.layout)
        op.ldsm = W.ldsm_blocks(f)
        addr, vec = (ops[0], ops[1]) if f.store else (ops[1], ops[0])
        if not isinstance(addr, Address) or not isinstance(vec, Vector) or len(vec.elems) != f.nregs():
            raise reject(f"expected a vector of {f.nregs()} registers and an [address]")
        op.set_address(dec, ins, addr)
        stride = ops[2:3]
        op.stride_src = dec.fetcher(stride[0], "u32", ins) if stride else None
        if f.store:
            op.srcs = dec.flat_sources([vec], bound.src_types[1:1 + f.nregs()], ins)
            op.dsts = []
        else:
            op.dsts = dec.flat_dests([vec], ins)
            op.srcs = []
    op.index, op.guard = i, guard
    return op
