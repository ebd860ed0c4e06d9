"""The warpgroup tensor-core unit of the functional core: `wgmma.mma_async` and its fence,
commit_group and wait_group, over whole warps.

A warpgroup is four consecutive warps of a block (warps 4 g .. 4 g + 3). `wgmma.mma_async` is
`.sync.aligned` over the warpgroup: a block whose warp count is not a multiple of 4, a warp
that executes it with only some of its threads, or a warp whose warpgroup has a warp that has
already exited is an error naming the kernel, line, block and thread. Each warp w of the group
computes its own rows 16 w .. 16 w + 15 of D (`isa.semantics.wgmma.warp_mma`, all the step's
warps at once), which on the GPU depend only on its own rows of A and all of B, so the warps need
not be in the same step.
The descriptors and scale-d must be the same in every thread of a warp (the instruction is
`.aligned`); a warp whose lanes disagree is an error naming the first lane that differs. A and B are read from the block's
shared memory when the instruction issues, and D is written then: `wgmma.fence`,
`commit_group` and `wait_group` have nothing left to order and do nothing (DEVIATIONS.md).

Counters: `sm__inst_executed_pipe_tensor_op_gmma` counts one per warp that executes
`wgmma.mma_async` (`tensor_gmma_inst`). Shared-memory wavefronts of the operand reads are not
counted (the tensor core reads shared memory outside the LSU's pipeline).

The sanitizer sees the operand reads as 16-byte shared reads by the warp's lanes (racecheck,
initcheck; memcheck through the descriptor bounds check), when `mma_async` issues.

Does not model: time.

Sources: PTX ISA 9.0, 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate".
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from gpusim.errors import BarrierError, KernelError
from gpusim.functional.collectives import pack_lanes
from gpusim.functional.ops import NopOp, Op
from gpusim.functional.tensor_ops import active_warps
from gpusim.functional.wgmma_operands import (addresses, distinct, element_indices, fits, mma_registers, mma_taken,
                                               prologue, read, runs, stacked, taken, whole_warps)
from isa.errors import UnsupportedInstruction
from isa.program import Vector
from isa.semantics import mma_batch as MB
from isa.semantics import wgmma as W

U32 = np.dtype(np.uint32)
U64 = np.dtype(np.uint64)
BOOL = np.dtype(np.bool_)
ROWS16 = np.arange(16)


class WgmmaOp(Op):
    __slots__ = ("form", "c_srcs", "a_srcs", "b_src", "sd_src", "imm_srcs", "imms", "dsts", "acc_slots", "calls")
    sanitizer_bytes = 16                                 # operands are whole 16-byte chunks (core-matrix rows)

    def _check_group(self, x, warps: np.ndarray) -> None:
        """The module docstring's warpgroup rules, for the span-relative `warps`."""
        glob = x.span_w0 + warps
        bad = None
        if x.wpc % 4:
            bad = (int(glob[0]), f"the block has {x.wpc} warps, not whole warpgroups of 4")
        else:
            first = glob - (glob % x.wpc) % 4
            dead = x.stacks.depth[first[:, None] + np.arange(4)] == 0          # (warps, 4 of its group)
            hit = np.flatnonzero(dead.any(axis=1))
            if len(hit):
                i = int(hit[0])
                v = int(first[i]) + int(np.argmax(dead[i]))
                bad = (int(glob[i]), f"warp {v % x.wpc} of its warpgroup has exited")
        if bad is not None:
            block, thread = x.lane_coords(32 * bad[0])
            raise BarrierError("incomplete warpgroup at wgmma.mma_async", kernel=x.kernel_name,
                               source=x.source(self.index), block=block, thread=thread,
                               detail=f"{self.info.mnemonic} needs all 4 warps of a warpgroup: {bad[1]}")

    def _check_uniform(self, x, warps: np.ndarray, vals: list) -> None:
        """Each of `vals` (span warps, 32) the same in every lane of each of `warps`."""
        for v in vals:
            diff = (v[warps] != v[warps, :1])
            if diff.any():
                wi, lane = (int(i) for i in np.argwhere(diff)[0])
                w = int(warps[wi])
                block, thread = x.lane_coords(x.state.lo + 32 * w + lane)
                raise KernelError("non-uniform operand at wgmma.mma_async", kernel=x.kernel_name,
                                  source=x.source(self.index), block=block, thread=thread,
                                  detail=f"{self.info.mnemonic}: the descriptors and scale-d must be the same in every "
                                         f"thread of the warp; lane {lane} has {int(v[w, lane]):#x}, lane 0 "
                                         f"{int(v[w, 0]):#x}")

    def _fail(self, x, smem_bytes: int, desc: int, rows: int, bits: int, major: str, lane: int):
        """The access error of an operand that does not fit the block's shared memory (or whose
        descriptor has a base offset), or None when it fits."""
        if fits(desc, rows, self.form.k, bits, major, smem_bytes):
            return
        addr, hi = addresses(desc, rows, self.form.k, bits, major)
        acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=bits // 8, is_store=False))
        why = ("the descriptor's base-offset field is not 0 (not modelled)" if W.desc_fields(desc)[4] else
               f"descriptor {desc:#x} reaches byte {hi}; the block has {smem_bytes} bytes of shared memory")
        x.fail_access(acc, lane, int(addr.max()), "shared", why)

    def _operands(self, x, lane0, aw, bw, ab, bb, ma, mb):
        """Each warp's descriptors (`bw`, `aw`: the executing warps') checked in warp order (B,
        then A: the first that does not fit raises), and, per distinct descriptor, its operand's
        addresses: (index of each warp's B descriptor, B addresses per distinct one, the same for
        A or None)."""
        f, smem = self.form, x.lsu.shared_bytes
        if (bw == bw[0]).all() and (f.a_regs or (aw == aw[0]).all()) and \
                fits(int(bw[0]), f.n, f.k, bb, mb, smem) and (f.a_regs or fits(int(aw[0]), 64, f.k, ab, ma, smem)):
            zeros = np.zeros(len(bw), np.intp)               # one descriptor each, in bounds: nothing to check per warp
            return zeros, bw[:1], (None if f.a_regs else zeros), (None if f.a_regs else aw[:1])
        ub, ib = distinct(bw)
        ok_b = np.array([fits(int(d), f.n, f.k, bb, mb, smem) for d in ub.tolist()])
        ua = ia = None
        bad = ~ok_b[ib]
        if not f.a_regs:
            ua, ia = distinct(aw)
            bad |= ~np.array([fits(int(d), 64, f.k, ab, ma, smem) for d in ua.tolist()])[ia]
        if bad.any():                                  # the first warp with a bad operand raises, as in order
            i = int(np.flatnonzero(bad)[0])
            self._fail(x, smem, int(ub[ib[i]]), f.n, bb, mb, int(lane0[i]))
            if ua is not None:
                self._fail(x, smem, int(ua[ia[i]]), 64, ab, ma, int(lane0[i]))
        return ib, ub, ia, ua

    def _warps(self, x, a, b, sd):
        """(the executing warps, each one's B descriptor, A descriptor, scale-d): the module
        docstring's rules checked for all of them in one compiled pass (`prologue`); where one
        is broken, the numpy checks find it again and raise its error."""
        masks = x.span_masks
        if self.guard is not None:
            g = self.guard_mask(x)
            masks = masks & pack_lanes(g) if type(g) is np.ndarray else (masks if g else np.zeros_like(masks))
        n = len(masks)
        warps, bw, aw, sdw = np.empty(n, np.int64), np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, bool)
        nw = prologue(masks, x.stacks.depth, x.span_w0, x.wpc, b.reshape(-1),
                       b.reshape(-1) if a is None else a.reshape(-1), sd.reshape(-1), warps, bw, aw, sdw)
        if nw < 0:
            warps = active_warps(self, x)
            self._check_group(x, warps)
            self._check_uniform(x, warps, [b, sd] + ([] if a is None else [a]))
            return warps, b[warps, 0], None if a is None else a[warps, 0], sd[warps, 0]
        return warps[:nw], bw[:nw], aw[:nw], sdw[:nw]

    def _plan(self, x, warps, aw, bw, ab, bb, ma, mb) -> tuple:
        """The operands of the step's warps (descriptors checked by `_operands`, which raises for
        one out of bounds; the sanitizer's reads reported): (B's address tables, the first warp
        of each group sharing a B and its block window, each warp's group, A's address tables or
        None, each warp's A table, first row and block window)."""
        f, lsu = self.form, x.lsu
        lane0 = x.state.lo + 32 * warps
        base = x.cta_slot(lane0).astype(np.int64) * lsu.shared_stride
        wg = (x.span_w0 + warps) % x.wpc % 4
        ib, ub, ia, ua = self._operands(x, lane0, aw, bw, ab, bb, ma, mb)
        b_desc = stacked(tuple(ub.tolist()), f.n, f.k, bb, mb)     # per distinct descriptor
        full = None if f.a_regs else stacked(tuple(ua.tolist()), 64, f.k, ab, ma)
        if x.san is not None:                          # the operands' 16-byte chunks, spread over each warp's lanes
            a_addr = None if full is None else full[ia[:, None], 16 * wg[:, None] + ROWS16]
            acc = SimpleNamespace(index=self.index, info=replace(self.info, access_bytes=16, is_store=False))
            for i in range(len(warps)):
                for addr in (b_desc[ib[i]],) + (() if a_addr is None else (a_addr[i],)):
                    chunks = np.unique(addr >> 4) << 4
                    x.san.access(acc, "shared", int(lane0[i]) + np.arange(len(chunks)) % 32,
                                 (chunks + base[i]).astype(np.uint64))
        # the warps of a warpgroup (same descriptor, same block) share one B: read once
        first, b_index = runs(ib.astype(np.int64) * (1 << 40) + base)
        b_at = element_indices(b_desc, ib[first], np.zeros(len(first), np.int64), base[first], f.n, bb,
                               lsu.shared_stride)
        a_at = None if full is None else element_indices(full, ia, 16 * wg, base, 16, ab, lsu.shared_stride)
        return b_desc, ib[first], base[first], b_index.reshape(-1), full, ia, 16 * wg, base, b_at, a_at

    def _uniform(self, x):
        """`_warps` where the descriptors and scale-d are each one value for every lane of the span
        (a Triton kernel's are: they hold no per-thread part), or None where one is an array:
        (the executing warps, the B descriptor, the A descriptor (0 for A in registers), scale-d),
        uniform by construction, the warpgroup rules checked by one compiled pass (`whole_warps`)."""
        st = x.state
        b = self.b_src(st, x)
        sd = self.sd_src(st, x)
        a = np.uint64(0) if self.form.a_regs else self.a_srcs[0](st, x)
        if type(b) is np.ndarray or type(sd) is np.ndarray or type(a) is np.ndarray:
            return None
        b, a, sd = _u64(b), _u64(a), bool(sd)
        masks = x.span_masks
        if self.guard is not None:
            g = self.guard_mask(x)
            if type(g) is np.ndarray:
                return None
            if not g:
                masks = np.zeros_like(masks)
        else:                                           # the step's last wgmma's warps, where it had no guard either:
            last = x.wgmma_warps                        # the same masks and stacks (no terminator ran between)
            if last is not None and last[0] == x.steps and last[1] is masks:
                return last[2], b, a, sd
        warps = np.empty(len(masks), np.int64)
        nw = whole_warps(masks, x.stacks.depth, x.span_w0, x.wpc, warps)
        if nw < 0:
            return None
        warps = warps[:nw]
        if self.guard is None:
            warps.flags.writeable = False               # (shared with the step's next wgmma)
            x.wgmma_warps = (x.steps, masks, warps)
        return warps, b, a, sd

    def _call(self, x, key: tuple, warps: np.ndarray) -> tuple:
        """The accumulators' group (`BatchState.grouped`) and the kernel's other arguments for them,
        as the last run of plan `key` made them (kept while the group is the same array): (the
        group, its flat view of the accumulator's type, each element's place, each warp's first,
        the kernel plan, scale-d true's zero_c, scale-d false's)."""
        acc = x.state.grouped(self.acc_slots)
        call = self.calls.get(key)
        if call is None or call[0] is not acc:
            if len(self.calls) > 64:
                self.calls.clear()
            cpos, tpos, kplan, narrow = W.acc_places(self.form, acc.shape[1], x.span_w0 + warps)
            zero = np.zeros(len(warps), BOOL)
            call = self.calls[key] = (acc, acc.reshape(-1).view(narrow), cpos, tpos, kplan, zero, ~zero)
        return call

    def run(self, x):
        f = self.form
        st = x.state
        got = self._uniform(x) if self.acc_slots is not None else None
        if got is not None:                             # one value each: arrays of them made only to plan
            warps, bv, av, sdv = got
            descs = (bv, av)
        else:
            a = None if f.a_regs else _lanes(x, self.a_srcs[0], U64)
            b = _lanes(x, self.b_src, U64)
            sd = _lanes(x, self.sd_src, BOOL)
            warps, bw, aw, sdw = self._warps(x, a, b, sd)
            descs = (bw.tobytes(), aw.tobytes())
        if not len(warps):
            return
        consts = self.imms
        if consts is None:                              # (immediates only: fetched once, with what they give)
            imm = [_first(s(st, x)) for s in self.imm_srcs]
            trans_a = imm[2] if len(imm) == 4 else 0
            trans_b = imm[-1] if len(imm) >= 3 else 0
            consts = self.imms = tuple((imm + [1, 1])[:2]) + (W.ELEM_BITS[f.atype], W.ELEM_BITS[f.btype],
                                                              "mn" if trans_a else "k", "mn" if trans_b else "k")
        scale_a, scale_b, ab, bb, ma, mb = consts
        lsu = x.lsu
        # what the step's warps and descriptors make of the operands, checked: kept on the decoded kernel
        # for the steps that come back with the same ones (a K loop's stages, the next launch), keyed
        # with what else it depends on (the block's warps, its shared memory); found afresh with a sanitizer
        key = None if x.san is not None else (self.index, x.span_w0, warps.tobytes(), descs, ma, mb, x.wpc,
                                              lsu.shared_stride, lsu.shared_bytes)
        plan = None if key is None else x.op_memo.get(key)
        if plan is None:
            if got is not None:
                bw, aw = np.full(len(warps), bv, U64), np.full(len(warps), av, U64)
            plan = self._plan(x, warps, aw, bw, ab, bb, ma, mb)
            if key is not None:
                if len(x.op_memo) > 1024:
                    x.op_memo.clear()
                x.op_memo[key] = plan
        b_desc, b_first, b_base, b_index, full, ia, a_row0, base, b_at, a_at = plan
        x.counters.add_extra(self.index, "tensor_gmma_inst", len(warps))
        if self.index in x.value_free:                  # prediction only: no path or address needs D
            return
        smem = x.lsu.shared
        A16 = regs = None
        if full is None:                                # A from registers: their own arrays, else their rows
            regs = _a_arrays(x, self.a_srcs)
            if regs is None:
                A16 = W.a_from_rows(f, _registers(x, self.a_srcs), warps)
        if self.acc_slots is not None and got is not None and key is not None and b_at is not None and \
                (full is None or a_at is not None):
            call = self._call(x, key, warps)            # C read from and D written to the registers in place
            zc = call[5] if sdv else call[6]
            if regs is not None:
                if mma_registers(smem, b_at, bb, regs, f, warps, b_index, call[1], call[2], call[3], zc, call[4],
                                 scale_a == -1, scale_b == -1):
                    return
            elif mma_taken(smem, b_at, bb, a_at, ab, A16, b_index, call[1], call[2], call[3], zc, call[4],
                           scale_a == -1, scale_b == -1):
                return
        if regs is not None:
            A16 = W.a_from_registers(f, regs, warps)
        Bt = taken(smem, b_at, bb)                      # the operands' elements where `_plan` found them
        if Bt is None:
            Bt = read(lsu, b_desc, b_first, np.zeros(len(b_first), np.int64), b_base, f.n, bb)
        if full is not None:
            A16 = taken(smem, a_at, ab)
            if A16 is None:
                A16 = read(lsu, full, ia, a_row0, base, 16, ab)
        if self.acc_slots is not None:                  # C read from and D written to the registers in place
            if got is not None and key is not None:     # the kernel's arguments as this plan's last run made them
                call = self._call(x, key, warps)
                MB.mma_acc(A16, Bt, b_index, call[1], call[2], call[3], call[5] if sdv else call[6], call[4],
                           negate_a=scale_a == -1, negate_b=scale_b == -1)
                return
            acc = st.grouped(self.acc_slots)
            if got is not None:
                sdw = np.full(len(warps), sdv, BOOL)
            W.warp_mma_acc(f, A16, Bt, b_index, acc, x.span_w0 + warps, sdw, scale_a, scale_b)
            return
        nw = len(sd)
        every = len(warps) == nw                        # every warp of the span: no copies in and out
        c = _registers(x, self.c_srcs).reshape(len(self.c_srcs), nw, 32)
        d = W.warp_mma(f, A16, Bt, c if every else c[:, warps], sd[:, 0] if every else sd[warps, 0], scale_a,
                       scale_b, b_transposed=True, b_index=b_index, reg_major=True)
        if every:
            rows = d.reshape(len(self.dsts), -1)        # a row of the span's lanes per register
            for k, r in enumerate(self.dsts):
                if r is not None:
                    st.write(r, rows[k])
        else:                                           # the executing warps' lanes: all active (active_warps)
            for k, r in enumerate(self.dsts):
                if r is not None:
                    st.write_warps(r, d[k], warps)


def _u64(v) -> int:
    """One register value as the uint64 `_lanes` makes of it (a signed one wrapped), an int."""
    return int(v) if type(v) is np.uint64 else int(np.asarray(v).astype(U64))


def _first(v) -> int:
    """An immediate operand's value (the first lane's, as an int64)."""
    return int(v.reshape(-1)[0] if type(v) is np.ndarray else np.int64(v))


def _lanes(x, src, dt) -> np.ndarray:
    """One source over the span as (span warps, 32) of dtype `dt` (a uniform value materialised)."""
    st = x.state
    return st.full(src(st, x), dt).reshape(-1, 32)


def _registers(x, srcs) -> np.ndarray:
    """Sources over the span as (len(srcs), span lanes) uint32: a row per register, each copied
    once (`tensor_ops.gather`'s (warps, 32, registers) transposes them)."""
    st = x.state
    out = np.empty((len(srcs), st.hi - st.lo), np.uint32)
    for k, f in enumerate(srcs):
        out[k] = f(st, x)
    return out


def _a_arrays(x, srcs) -> list | None:
    """A's four registers as their own arrays (uint32, contiguous, over the span: what
    `wgmma.a_from_registers` gathers from), or None where one is not such an array (a uniform one:
    `a_from_rows` of their rows then)."""
    st = x.state
    regs = [s(st, x) for s in srcs]
    if all(type(v) is np.ndarray and v.dtype == U32 and v.flags.c_contiguous for v in regs):
        return regs
    return None


def _in_place(f, dsts: list, reg_dtypes) -> tuple[int, ...] | None:
    """The accumulator registers (C is D: the instruction's first operand is both) when the op
    can hold them as the rows of one array and compute in place (`BatchState.grouped`):
    floating-point accumulators in distinct 32-bit registers of one dtype; else None."""
    if f.dtype == "s32" or None in dsts or len(set(dsts)) != len(dsts):
        return None
    dts = {reg_dtypes[d] for d in dsts}
    return tuple(dsts) if len(dts) == 1 and next(iter(dts)).itemsize == 4 else None


def make(dec, ins, i: int, spec, bound, guard):
    """The op for a `wgmma` instruction (called by `ops.OpFactory.make`)."""
    def reject(why):
        return UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name, reason=why)
    if ins.suffixes[:1] != ("mma_async",):
        W.parse_sync(ins)
        op = NopOp()
    else:
        op = WgmmaOp()
        f = op.form = W.parse_wgmma(ins)
        ops = list(ins.operands)
        if len(ops) != 4 + f.nimm or not isinstance(ops[0], Vector):
            raise reject(f"expected {{d}}, a, b-desc, scale-d and {f.nimm} immediates")
        op.dsts = dec.flat_dests(ops[:1], ins)
        src = dec.flat_sources(ops, bound.src_types, ins)
        nacc, na = f.nacc, 4 if f.a_regs else 1
        op.c_srcs, op.a_srcs = src[:nacc], src[nacc:nacc + na]
        op.b_src, op.sd_src, op.imm_srcs = src[nacc + na], src[nacc + na + 1], src[nacc + na + 2:]
        op.acc_slots = _in_place(f, op.dsts, dec.reg_dtypes)
        if f.nimm:
            for o in ops[4:]:
                if getattr(o, "value", None) not in (1, -1, 0):
                    raise reject(f"immediate operand {o!r} must be 1 or -1 (scale) or 0/1 (transpose)")
        op.imms = None                                 # (scale-a/b, A's and B's bits and majors), once, from immediates
        op.calls = {}                                  # plan key -> the accumulator and the kernel's other arguments
    op.index, op.guard = i, guard
    return op
