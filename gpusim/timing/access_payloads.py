"""What the timing model's memory units need from one traced access of a step (`TraceSource`'s
batches, `step_record.Access` / `SpanAccess`), added to the step's `payloads.StepPayloads`:
the distinct 32-byte sectors a global, local or const access touches per warp (stores with the
bytes they write, atomics with the passes the L1 splits them into), the wavefronts a shared
access takes (wide and merged accesses in lane groups, a float atomic's compare-and-swap rounds),
a cp.async's two sides (its global sectors and the wavefronts its fill takes) and mbarrier
operations. One `AccessPayloads` a batch: it holds the global side of the cp.async being traced
until its shared side comes.
"""
from __future__ import annotations

import numpy as np

from gpusim.functional.copy_counts import ZERO_FILL_SOURCE, copy_pieces, fill_wavefronts
from gpusim.functional.lsu import distinct_per_group
from gpusim.functional.shared_banks import lane_group
from gpusim.functional.step_record import SpanAccess
from gpusim.timing import stream_kernels as K
from gpusim.timing.payloads import ATOMIC, LOAD, STORE, StepPayloads, mbarrier_access
from isa.memory_map import CONST_WINDOW_BASE, GLOBAL_BASE, LOCAL_WINDOW_BASE

U64 = np.uint64
NO_MASKS = np.zeros(0, np.uint32)


class AccessPayloads:
    """`infos`: the decoded kernel's instructions; `merged`: PTX shared access -> the bytes a lane
    of the wider SASS access ptxas merged it into moves (`TraceSource._merged_widths`)."""

    def __init__(self, infos, merged: dict[int, int]):
        self.infos = infos
        self.merged = merged
        self._cp_src = None                                # the global side of the cp.async being traced

    def add(self, a, sp: StepPayloads, lsu, gids: np.ndarray, wpc: int) -> None:
        """Add access `a` of a step to its payloads `sp`; gids[w]: batch warp w's global warp id."""
        if a.wavefronts is not None:                   # shared, counted by the compiled load/store unit
            sp.span_wavefronts(a.instr, *a.wavefronts)
            return
        info = self.infos[a.instr]
        if type(a) is SpanAccess and a.space in ("global", "const") and not info.is_atomic:   # one compiled pass
            base = U64(GLOBAL_BASE) if a.space == "global" else U64(CONST_WINDOW_BASE)
            warps, starts, vals, masks = K.span_sectors(a._offs, a._lo, base, info.access_bytes, info.is_store)
            if info.is_store:
                sp.sectors(STORE, a.instr, warps, starts, vals, masks)
            else:
                sp.sectors(LOAD, a.instr, warps, starts, vals)
            return
        lanes, offsets, order = a.lanes, a.offsets, None
        wl = (lanes >> 5).astype(np.int64)
        if len(wl) > 1 and (wl[1:] < wl[:-1]).any():    # the kernels below take each warp's lanes together
            order = np.argsort(wl, kind="stable")
            lanes, offsets, wl = lanes[order], offsets[order], wl[order]
        w0 = int(wl[0])
        rel = wl - w0
        if a.space == "mbarrier":
            what, args = a.values
            base = (lanes // (wpc * 32)).astype(U64) * U64(lsu.shared_stride)
            local = (offsets - base).astype(np.int64)
            args = [np.asarray(v) if order is None else np.asarray(v)[order] for v in args]
            ks = np.unique(rel).tolist()
            ops = []
            for k in ks:
                sel = rel == k
                ops.append(mbarrier_access(what, int(local[sel][0]), int(sel.sum()), [v[sel] for v in args]))
            sp.mbarriers(a.instr, np.array(ks, np.int64) + w0, ops)
            return
        if a.space == "shared" and info.kind == "async" and info.mnemonic.startswith("cp."):
            self._fills(a.instr, sp, lanes, offsets, wl, w0, lsu, wpc)
            return
        if a.space == "shared" and info.kind == "async" and info.mnemonic.startswith("mbarrier"):
            return          # an mbarrier's object
        if a.space == "shared":
            cta_base = (lanes // (wpc * 32)).astype(U64) * U64(lsu.shared_stride)
            shift = U64(lsu.bank_width.bit_length() - 1)
            words = ((offsets - cta_base) >> shift).astype(np.int64)
            nbytes = a.nbytes or (16 if info.kind == "tensor" else info.access_bytes)   # ldmatrix: 16-byte rows
            plain = info.kind != "tensor" and not info.is_atomic
            if plain and not a.nbytes:
                nbytes = self.merged.get(a.instr, nbytes)
            group = lane_group(nbytes, lsu.banks, lsu.bank_width) if plain else 32
            if group < 32:
                # a wide LDS/STS (or scalar ones ptxas merged into one): served in groups of lanes,
                # each lane's bytes those of the SASS access (shared_banks.shared_wavefronts)
                first = (((offsets - cta_base) & ~U64(nbytes - 1)) >> shift).astype(np.int64)
                warps, wf = K.warp_group_wavefronts(rel, lanes.astype(np.int64), first, nbytes // lsu.bank_width,
                                                    lsu.banks, group, info.is_store)
            else:
                warps, wf = K.warp_wavefronts(rel, words, max(1, nbytes // lsu.bank_width), lsu.banks)
            if info.is_atomic and _cas_loop(info.mnemonic):   # the payload: the loop's rounds (sm.py)
                wf = _cas_rounds(rel, words, lsu.banks)
            sp.wavefronts(a.instr, warps + w0, wf)
            return
        if a.space == "global":
            if info.kind == "async":                   # a cp.async's source: its shared side pairs with it
                self._cp_src = (a.instr, lanes, offsets)
            addr = offsets + U64(GLOBAL_BASE)
        elif a.space == "const":
            addr = offsets + U64(CONST_WINDOW_BASE)
        else:                                          # local: interleaved per warp, a frame per gid (sm.py moves it to the warp's slot)
            hw = lsu._local_hw_offsets(lanes, offsets, info.access_bytes)
            rep = len(hw) // len(lanes)
            gw = np.repeat(gids[wl], rep).astype(U64)
            addr = U64(LOCAL_WINDOW_BASE) + gw * U64(lsu.local_stride * 32) + hw
            rel = np.repeat(rel, rep)
        sectors = addr >> U64(5)
        if info.is_atomic:                             # each lane's operation is one read-modify-write
            self._atomic(a.instr, sp, w0, rel, addr, sectors)
            return
        if info.is_store if a.is_store is None else a.is_store:   # which bytes of each sector the warp writes
            nb = a.nbytes or info.access_bytes
            nb = min(nb, 4) if a.space == "local" else nb
            lane_masks = ((U64((1 << nb) - 1) << (addr & U64(31))).astype(np.uint32) if 0 < nb < 32
                          else np.full(len(addr), 0xFFFFFFFF, np.uint32))    # a bulk copy's whole sectors
            warps, starts, vals, masks = K.warp_sectors(rel, sectors, lane_masks, True)
            sp.sectors(STORE, a.instr, warps + w0, starts, vals, masks)
            return
        warps, starts, vals, _ = K.warp_sectors(rel, sectors, NO_MASKS, False)
        sp.sectors(LOAD, a.instr, warps + w0, starts, vals)

    def _fills(self, instr: int, sp: StepPayloads, lanes, offsets, wl, w0: int, lsu, wpc: int) -> None:
        """A cp.async's shared side: per warp, the wavefronts that write its bytes into shared
        memory (`copy_counts.fill_wavefronts`), from each lane's source (the global side traced
        just before, `_cp_src`) and its destination in its block's shared memory. A lane that
        reads nothing (src-size 0) fills zeros: its destination as its own aligned source."""
        local = (offsets - (lanes // (wpc * 32)).astype(U64) * U64(lsu.shared_stride)).astype(np.int64)
        src = local | ZERO_FILL_SOURCE                 # zero-fill: no global line shared with a read
        got = self._cp_src
        if got is not None and got[0] == instr and len(got[1]):
            k = np.minimum(np.searchsorted(lanes, got[1]), len(lanes) - 1)
            ok = lanes[k] == got[1]                    # every reading lane is one of the copy's lanes
            src[k[ok]] = got[2][ok].astype(np.int64)
        self._cp_src = None
        rel = wl - w0
        ks = np.unique(rel)
        nw = int(rel[-1]) + 1
        wf = fill_wavefronts(rel, src, local, nw)
        reads = src < ZERO_FILL_SOURCE
        if reads.any():                                # a sector read once per shared sector it fills
            rr, rs = rel[reads], src[reads]
            repeated = copy_pieces(rr, rs, local[reads], nw) - distinct_per_group(rr, rs >> 5, nw)
        else:
            repeated = np.zeros(nw, np.int64)
        sp.fills(instr, ks + w0, wf[ks], repeated[ks])

    @staticmethod
    def _atomic(instr: int, sp: StepPayloads, w0: int, rel, addr, sectors) -> None:
        """An atomic's payload per warp: its sectors and, per sector, the passes the L1 splits
        the warp's atomic into: a pass takes at most one lane per address, so each sector is in as
        many passes as the most lanes on one of its addresses (Nsight's lts__t_sectors_op_red/atom, H200)."""
        u_addr, lanes = np.unique((rel.astype(U64) << U64(48)) | (addr - (sectors.min() << U64(5))),
                                  return_counts=True)
        sector_key = (u_addr >> U64(48) << U64(48)) | ((u_addr & U64((1 << 48) - 1)) >> U64(5))
        first = np.flatnonzero(np.r_[True, sector_key[1:] != sector_key[:-1]])
        u = sector_key[first]                          # the distinct (warp, sector) keys, in order
        passes = np.maximum.reduceat(lanes, first)
        owner = (u >> U64(48)).astype(np.int64)
        vals = (u & U64((1 << 48) - 1)) + sectors.min()
        cuts = np.flatnonzero(np.diff(owner)) + 1
        starts = np.r_[0, cuts, len(u)]
        sp.sectors(ATOMIC, instr, owner[starts[:-1]] + w0, starts, vals, passes)


def _cas_loop(mnemonic: str) -> bool:
    """Whether a shared-memory atomic compiles to a compare-and-swap loop (sm_80/sm_90 have no
    shared floating-point add: ptxas emits LDS, FADD, ATOMS.CAST.SPIN, a branch back on failure;
    benchmarks/results/mechanisms_sass.txt, shared_bins_f32)."""
    parts = mnemonic.split(".")
    return "add" in parts and ("f32" in parts or "f64" in parts)


def _cas_rounds(rel, words, banks: int) -> np.ndarray:
    """Per warp (in `rel` order): the rounds of its compare-and-swap loop. ATOMS.CAST.SPIN
    completes one lane a bank a round (the others fail and retry), so a warp takes as many
    rounds as the most of its lanes in one bank, on one address or not: 32 lanes on one word
    32 rounds (shared_lanes/f32_l32: 32 ATOMS a warp), 32 random words 3.6 (shared_bins/f32_b4096)."""
    key = rel.astype(np.int64) * banks + (words & (banks - 1))
    u, counts = np.unique(key, return_counts=True)
    w = u // banks
    first = np.flatnonzero(np.r_[True, w[1:] != w[:-1]])
    return np.maximum.reduceat(counts, first)
