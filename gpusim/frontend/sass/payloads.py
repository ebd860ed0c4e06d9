"""Where a PTX memory instruction's addresses go in the SASS: the memory payloads of the
PTX -> SASS mapping (`mapping.py`).

A PTX memory instruction's per-visit addresses go to the SASS memory instruction compiled
from it (`payload_target`), which is issued in a region (`payload_home`): the latest visit
of that home when the home dominates the memory instruction's block (code ptxas hoisted or
if-converted into it), else the next one (code ptxas sank into a block that follows). A PTX
memory instruction with no SASS of its own (ptxas merged two accesses into one wider one)
lends its payload to the nearest SASS memory instruction of the same kind and space in the
same region. In a loop ptxas unrolled, the j-th SASS copy of a PTX memory instruction in a
pass takes the j-th iteration's addresses (`copies`).

Which SASS memory instruction does what a PTX one does (`does`): an atomic, a store, a load
of its space, a copy, an `ldmatrix`/`stmatrix`, an mbarrier operation (SYNCS); ptxas files
the constant loads an access needs under the access's line too.
"""
from __future__ import annotations

import numpy as np

from isa.graphs import dominates
from isa.memory_map import CONST_WINDOW_BASE, WINDOW_BYTES
from isa.program import Address

MEMORY = frozenset({"LDG", "STG", "LD", "ST", "LDS", "STS", "LDL", "STL", "ATOM", "ATOMG", "ATOMS", "RED", "REDG",
                    "REDAS", "LDSM", "STSM", "LDC", "LDGSTS", "UBLKCP", "UTMALDG", "UTMASTG", "SYNCS"})
_COPY = frozenset({"LDGSTS", "UBLKCP", "UTMALDG", "UTMASTG"})      # asynchronous copies (cp.async, bulk, TMA)
_MATRIX = ("ldmatrix", "stmatrix")
_WMMA_MEMORY = ("wmma.load", "wmma.store")


def place_payloads(m, ins, dk, ptx) -> None:
    """Where each PTX memory instruction's addresses go (module docstring), into `m` (the
    `mapping.SassMap` being built: its regions, homes, unrolled loops; `ptx`: `homes._PtxFacts`)."""
    issued_in: dict[int, int] = {}
    for h, region in m.regions.items():
        for i in region:
            issued_in.setdefault(i, h)
    by_origin: dict[int, list[int]] = {}
    for i, o in enumerate(m.origin):
        if o is not None and ins[i].base in MEMORY and (i in issued_in or m.home[m.cfg.block_of[i]] in m.unrolled):
            by_origin.setdefault(o, []).append(i)
    for h in m.unrolled:
        for k in m.unrolled[h].content:
            blk = m.cfg.blocks[k]
            per: dict[int, list[int]] = {}
            for i in range(blk.start, blk.end):
                o = m.origin[i]
                if o is not None and ins[i].base in MEMORY and does(ins[i].base, dk.infos[o]):
                    per.setdefault(o, []).append(i)
            m.copies[k] = {o: tuple(v) for o, v in per.items()}
    unmatched = []
    for info in dk.infos:
        if not is_access(info) or info.space == "param":
            continue
        p = info.index
        if ptx.block_of[p] in m.unrolled_member:
            continue
        cands = by_origin.get(p)
        if cands:
            s = _best_kind(ins, cands, info, issued_in, ptx, p)
        else:
            s = _nearest(m, ins, dk, p, issued_in, by_origin)
            if s is None:
                unmatched.append(p)
                continue
        m.payload_target[p] = s
        m.payload_home[p] = issued_in[s]
        m.payload_back[p] = dominates(ptx.idom, issued_in[s], ptx.block_of[p])
    m.unmatched = tuple(unmatched)


_ATOMIC = frozenset({"ATOM", "ATOMG", "ATOMS", "RED", "REDG", "REDAS"})
_STORE = frozenset({"STG", "ST", "STS", "STL", "STSM"})


def is_access(info) -> bool:
    """Whether PTX instruction `info` accesses memory (the functional core traces its
    addresses): loads, stores, atomics, `ldmatrix`/`stmatrix`, and the asynchronous copies
    (`cp.async`, `cp.async.bulk*`: kind 'async', a `.shared` state space in the name; their
    commit and wait instructions and mbarriers are not accesses), `wmma.load`/`wmma.store`."""
    return info.kind == "mem" or (info.kind == "async" and info.mnemonic.startswith("cp.")
                                  and ".shared" in info.mnemonic) \
        or (info.kind == "tensor" and info.mnemonic.startswith(_MATRIX + _WMMA_MEMORY)) or is_mbarrier(info)


def is_wmma_access(info) -> bool:
    """A `wmma.load`/`wmma.store`: ptxas compiles it into several SASS accesses (an f32 D
    fragment's store: four STG.E.64; a 16-bit fragment from shared memory: one LDSM), not one
    for one."""
    return info.kind == "tensor" and info.mnemonic.startswith(_WMMA_MEMORY)


def is_mbarrier(info) -> bool:
    """An mbarrier operation: its payload (`timing.payloads.MbarrierAccess`) goes on the SYNCS
    ptxas makes of it (not an anchor of unrolled loops: a try_wait has two SYNCS, the check
    and its retry loop's)."""
    return info.kind == "async" and info.mnemonic.startswith("mbarrier")


def is_tensor_op(info) -> bool:
    """Whether PTX instruction `info` is a tensor-core operation (`mma`, `wgmma.mma_async`),
    which ptxas compiles one for one into HMMA/IMMA/HGMMA... (an unrolled loop's copies)."""
    return info.kind == "tensor" and info.mnemonic.startswith(("mma.", "wgmma.mma_async"))


def does(base: str, info) -> bool:
    """Whether a SASS memory instruction `base` filed under PTX memory instruction `info`'s
    line does what that instruction does (an atomic, a store, a load of its space): ptxas
    files the constant loads an access needs under the access's line too (the address of a
    warp-aggregated atomic, the value of an atomic that adds a kernel parameter), so an
    `LDC` is the access only where the PTX instruction reads constant or parameter space."""
    if not is_access(info) or base not in MEMORY:
        return False
    if is_mbarrier(info) or base == "SYNCS":
        return is_mbarrier(info) and base == "SYNCS"
    if (base in _COPY) != (info.kind == "async"):
        return False
    if is_wmma_access(info):                     # LDSM, LDS or LDG; STS or STG
        store = info.mnemonic.startswith("wmma.store")
        return base not in _ATOMIC and base not in ("LDC", "STSM") and (base in _STORE) == store
    if info.kind == "tensor":                    # ldmatrix / stmatrix
        return base == ("STSM" if info.mnemonic.startswith("stmatrix") else "LDSM")
    if base == "LDC":
        return info.space in ("const", "param") and not info.is_store and not info.is_atomic
    kind = "atomic" if base in _ATOMIC else "store" if base in _STORE else "load"
    return kind == ("atomic" if info.is_atomic else "store" if info.is_store else "load")


def _best_kind(ins, cands: list[int], info, issued_in: dict, ptx, p: int) -> int:
    """Of `cands` (SASS memory instructions compiled from PTX instruction p's line), those that do
    what the PTX instruction does (`does`: a warp-aggregated atomic's LDC of the address comes
    before its leader's REDG), the first issued in a region whose home dominates p's block (so
    issued whenever p is), else the first. ptxas may copy an instruction into code p's block does
    not always pass through: a rotated wait loop (`WAIT: mbarrier.try_wait; @!p bra WAIT`) has its
    first check at the end of the block before the loop, which may be one of several paths there
    (the remainder of an unrolled copy loop), and its retry out of line in the wait's own block;
    the wait then belongs on the retry, or a path that skips that block never waits."""
    doing = [i for i in cands if does(ins[i].base, info)] or cands[:1]
    for i in doing:
        h = issued_in.get(i)
        if h is not None and dominates(ptx.idom, h, ptx.block_of[p]):
            return i
    return doing[0]


def _nearest(m, ins, dk, p: int, issued_in, by_origin) -> int | None:
    """The SASS memory instruction of the PTX memory instruction of the same kind and space
    in p's block that ptxas merged p into: one whose SASS access is wider (LDS.128) and
    covers p's address (the same base register, p's offset within its width: numba's
    unrolled `sa[ty, k]`, four `ld.shared.f32` in one LDS.128, between which the PTX has
    other loads), else the nearest that has one."""
    me = dk.infos[p]
    blk = dk.blocks[dk.cfg.block_of[p]]
    same = [q for q in range(blk.first, blk.last) if q != p and q in by_origin
            and dk.infos[q].space == me.space and dk.infos[q].is_store == me.is_store
            and dk.infos[q].is_atomic == me.is_atomic]
    if not same:
        return None
    mine = _address(dk, p)
    for q in sorted(same, key=lambda q: abs(q - p)):
        a, s = _address(dk, q), by_origin[q][0]
        w = access_bytes(ins[s].opcode)
        if mine is not None and a is not None and a.base == mine.base and w and a.offset <= mine.offset < a.offset + w:
            return s
    q = min(same, key=lambda q: abs(q - p))
    return by_origin[q][0]


def _address(dk, p: int) -> Address | None:
    """PTX instruction p's memory operand."""
    return next((o for o in dk.kernel.instructions[p].operands if isinstance(o, Address)), None)


def access_bytes(opcode: str) -> int:
    """The bytes a lane of a wide SASS load or store moves (LDS.128: 16, STS.64: 8); 0 for
    any other instruction."""
    parts = opcode.split(".")
    if parts[0] not in ("LDS", "STS", "LDG", "STG", "LDL", "STL", "LD", "ST"):
        return 0
    return 16 if "128" in parts else 8 if "64" in parts else 0


def folded_constant(payload) -> bool:
    """Whether `payload` is a constant-space load's sectors (`ld.const` at an address ptxas knows): the
    SASS reads it as a `c[bank][offset]` operand, which the constant cache times (fetch.py), so its
    lack of a load instruction of its own leaves nothing untimed."""
    return (type(payload) is np.ndarray and payload.size > 0
            and CONST_WINDOW_BASE <= int(payload.flat[0]) << 5 < CONST_WINDOW_BASE + WINDOW_BYTES)
