"""Thread-block cluster addressing: `mapa`, which maps a shared-memory address of the executing
CTA to the same location in another CTA of its cluster (distributed shared memory).

What it models: `mapa.shared::cluster.{u32,u64} d, a, r` takes a `.shared::cta` or
`.shared::cluster` address `a` and returns the `.shared::cluster` address of the same offset in
the CTA of rank `r` of the cluster; `mapa{.u32,.u64} d, a, r` (generic) does the same for a
generic address in the shared window. gpusim's `.shared::cluster` encoding is
`isa.memory_map.CLUSTER_RANK_SHIFT`'s: the offset in bits 0-23, rank + 1 above. Whether rank `r`
exists in the launch's clusters is checked where the address is used (the load/store unit names
the kernel, line and thread); `mapa` itself only computes.

Not modelled: `mapa` of a generic address outside the shared window (undefined in PTX; gpusim
keeps the rank bits out of such addresses, so using the result faults as out of bounds).

Sources: PTX ISA 9.0, 9.7.9.23 "mapa"; 5.1.7 "Shared State Space" (the cluster window).
"""
from __future__ import annotations

import numpy as np

from isa.errors import UnsupportedInstruction
from isa.memory_map import CLUSTER_RANK_SHIFT, CTA_OFFSET_MASK, SHARED_WINDOW_BASE, WINDOW_BYTES
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction


def _bind_mapa(instr: Instruction) -> Bound:
    mods = [m for m in instr.modifiers]
    t = instr.types
    if t not in (("u32",), ("u64",)) or len(instr.operands) != 3 or mods not in ([], ["shared::cluster"]):
        raise UnsupportedInstruction(instr.mnemonic, reason="expected mapa{.shared::cluster}.{u32,u64} d, a, rank")
    dt = np.dtype(np.uint32 if t[0] == "u32" else np.uint64)
    low = dt.type(CTA_OFFSET_MASK)
    shift = dt.type(CLUSTER_RANK_SHIFT)
    if mods:
        def fn(a, r):
            return ((a & low) | ((r.astype(dt) + dt.type(1)) << shift)).astype(dt)
        return Bound((t[0],), (t[0], "u32"), fn, "int")
    base, span = np.uint64(SHARED_WINDOW_BASE), np.uint64(WINDOW_BYTES)

    def generic(a, r):
        a64 = np.asarray(a, np.uint64)
        inside = (a64 - base) < span
        mapped = base + (((a64 - base) & np.uint64(CTA_OFFSET_MASK)) |
                         ((np.asarray(r, np.uint64) + np.uint64(1)) << np.uint64(CLUSTER_RANK_SHIFT)))
        return np.where(inside, mapped, a64).astype(dt)
    return Bound((t[0],), (t[0], "u32"), generic, "int")


ENTRIES = [
    OpSpec("mapa", "alu", _bind_mapa, "address of the same shared-memory location in another CTA of the cluster"),
]
