"""Control flow and synchronisation: bra, ret, exit, trap, bar/barrier, membar/fence,
nanosleep, call. The executor carries them out (they change the warp's PC stack or
wait on other warps); these entries give operand types and unit class.

- `bra{.uni} target`: branch; divergence and reconvergence at the immediate
  post-dominator are the SIMT model's job (`gpusim.functional.warps`).
- `ret`, `exit`: the active threads finish.
- `trap`: aborts the kernel (reported as an error).
- `bar{.cta}.sync a{, b}`, `barrier{.cta}.sync{.aligned}`, `bar.red.{popc,and,or}`:
  CTA barriers; `bar.red` also reduces a predicate or counts it.
- `call malloc` / `call free` / `call __assertfail`: PTX system calls (device heap, a
  failed C `assert`); the executor carries
  them out (`gpusim.functional.syscalls`); every other call is inlined before decoding.
- `membar.{cta,gl,sys}`, `fence.*`: ordering only; lanes run in lockstep here, so
  they have no functional effect.

Source: PTX ISA, "Control Flow Instructions" and "Parallel Synchronization and
Communication Instructions".
"""
from __future__ import annotations

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction, Sym


def _no_operands(unit: str):
    def bind(instr: Instruction) -> Bound:
        return Bound((), (), None, unit)
    return bind


CLUSTER_BARRIER_MODS = ("release", "relaxed", "acquire", "aligned")


def bind_bar(instr: Instruction) -> Bound:
    mods = instr.modifiers
    if "cluster" in mods:
        # barrier.cluster.arrive{.release,.relaxed}{.aligned} / barrier.cluster.wait{.acquire}{.aligned}
        rest = [m for m in mods if m not in CLUSTER_BARRIER_MODS]
        if instr.opcode != "barrier" or rest not in (["cluster", "arrive"], ["cluster", "wait"]) or instr.operands:
            raise UnsupportedInstruction(instr.mnemonic, reason="expected barrier.cluster.arrive or "
                                         "barrier.cluster.wait (no operands)")
        return Bound((), (), None, "sync")
    if "arrive" in mods:
        raise UnsupportedInstruction(instr.mnemonic, reason="bar.arrive (producer/consumer barriers) is not modelled")
    if "red" in mods:
        # bar.red.popc.u32 d, a{, b}, {!}c  |  bar.red.and.pred p, a{, b}, {!}c
        dst = "u32" if "popc" in mods else "pred"
        nsrc = len(instr.operands) - 1
        return Bound((dst,), ("u32",) * (nsrc - 1) + ("pred",), None, "sync")
    return Bound((), ("u32",) * len(instr.operands), None, "sync")


# PTX system calls the executor carries out (PTX ISA "System Calls"): name -> (result types, argument types)
SYSTEM_CALL_TYPES = {"malloc": (("u64",), ("u64",)), "free": ((), ("u64",)),
                     "__assertfail": ((), ("u64", "u64", "u32", "u64", "u64"))}


def bind_call(instr: Instruction) -> Bound:
    target = instr.operands[1] if len(instr.operands) > 1 and not isinstance(instr.operands[0], Sym) \
        else (instr.operands[0] if instr.operands else None)
    if isinstance(target, Sym) and target.name in SYSTEM_CALL_TYPES:
        dsts, srcs = SYSTEM_CALL_TYPES[target.name]
        return Bound(dsts, srcs, None, "misc")
    raise UnsupportedInstruction(instr.mnemonic, reason="calls to non-inlined device functions are not supported yet; "
                                 "NVVM inlines Numba device functions unless they are recursive or forced out of line")


ENTRIES = [
    OpSpec("bra", "control", _no_operands("branch"), "branch (possibly divergent) to a label"),
    OpSpec("ret", "control", _no_operands("branch"), "return: active threads of the kernel finish"),
    OpSpec("exit", "control", _no_operands("branch"), "active threads finish"),
    OpSpec("trap", "control", _no_operands("branch"), "abort the kernel"),
    OpSpec("bar", "sync", bind_bar, "CTA barrier (sync / red)"),
    OpSpec("barrier", "sync", bind_bar, "CTA barrier (sync / red), PTX 6.0 spelling"),
    OpSpec("membar", "sync", _no_operands("sync"), "memory barrier (no functional effect in lockstep execution)"),
    OpSpec("fence", "sync", _no_operands("sync"), "memory fence (no functional effect in lockstep execution)"),
    OpSpec("nanosleep", "sync", _no_operands("sync"), "sleep hint; no functional effect"),
    OpSpec("call", "control", bind_call, "call a device function"),
]
