"""What the timing model needs to know about each instruction before it runs.

For every PTX instruction of a decoded kernel: its pipeline (the opcode table's unit
class), how its result becomes available (fixed pipeline latency, shared memory,
or the L1/L2/HBM path), and which registers it reads and writes (small integers,
for the scoreboard). Derived once per kernel from `isa` facts; no hardware numbers
live here (they come from the GPUSpec).
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.program import Address, Guard, Instruction, PredPair, Reg, Vector

# How a result becomes ready; also names the stall reason of a warp waiting on it
# (Nsight Compute warp states): fixed latency -> 'wait', shared/MIO -> 'short_scoreboard',
# L1TEX (global, local, atomics) -> 'long_scoreboard'.
FIXED, SHARED, GLOBAL = 0, 1, 2
DEP_STALL = {FIXED: "wait", SHARED: "short_scoreboard", GLOBAL: "long_scoreboard"}


@dataclass(frozen=True, slots=True)
class StaticInstr:
    index: int
    unit: str                       # pipeline class
    kind: str                       # isa.opcodes.KINDS
    result: int                     # FIXED / SHARED / GLOBAL
    dsts: tuple[int, ...]
    srcs: tuple[int, ...]
    space: str | None
    is_store: bool
    is_atomic: bool
    is_barrier: bool
    is_exit: bool


def _regs(op) -> list[str]:
    if isinstance(op, Reg):
        return [op.name]
    if isinstance(op, Vector):
        return [e.name for e in op.elems if isinstance(e, Reg)]
    if isinstance(op, PredPair):
        return [op.first.name] + ([op.second.name] if op.second is not None else [])
    if isinstance(op, Address) and isinstance(op.base, Reg):
        return [op.base.name]
    if hasattr(op, "reg") and isinstance(getattr(op, "reg"), Reg):
        return [op.reg.name]
    return []


def _n_dest_operands(ins: Instruction, kind: str) -> int:
    if ins.opcode in ("st", "red", "bra", "ret", "exit", "trap", "membar", "fence", "prefetch", "prefetchu",
                      "nanosleep"):
        return 0
    if ins.opcode in ("bar", "barrier"):
        return 1 if "red" in ins.modifiers else 0
    return 1 if ins.operands else 0


def static_table(dk) -> list[StaticInstr]:
    """StaticInstr for every instruction of a DecodedKernel `dk`."""
    slots: dict[str, int] = {}

    def slot(name: str) -> int:
        if name not in slots:
            slots[name] = len(slots)
        return slots[name]

    out = []
    instrs = dk.kernel.instructions
    for info, ins in zip(dk.infos, instrs):
        nd = _n_dest_operands(ins, info.kind)
        dsts = tuple(slot(r) for op in ins.operands[:nd] for r in _regs(op))
        srcs = [slot(r) for op in ins.operands[nd:] for r in _regs(op)]
        if isinstance(ins.guard, Guard):
            srcs.append(slot(ins.guard.reg.name))
        if ins.opcode in ("addc", "subc", "madc"):
            srcs.append(slot("%cc.cf"))
        if "cc" in ins.modifiers:
            dsts = dsts + (slot("%cc.cf"),)
        space = info.space
        if info.kind == "mem" and ins.opcode not in ("prefetch", "prefetchu"):
            result = SHARED if space == "shared" else GLOBAL
            if space in ("param", "const") and ins.opcode == "ld":
                result = FIXED                 # constant-bank operand after ptxas
        elif info.kind == "warp":
            result = SHARED                    # shuffles and votes go through the MIO queue
        else:
            result = FIXED
        out.append(StaticInstr(index=info.index, unit=info.unit, kind=info.kind, result=result, dsts=dsts,
                               srcs=tuple(dict.fromkeys(srcs)), space=space, is_store=info.is_store,
                               is_atomic=info.is_atomic,
                               is_barrier=ins.opcode in ("bar", "barrier") and "warp" not in ins.modifiers,
                               is_exit=ins.opcode in ("ret", "exit")))
    return out
