"""Warp-level collectives: shfl.sync, vote.sync, activemask, match.sync, bar.warp.sync.
The executor carries them out over the 32 lanes of each warp.

- `shfl.sync.{up,down,bfly,idx}.b32 d{|p}, a, b, c, membermask`: d = a of the source
  lane; p says whether the source lane was in range. c packs the clamp (bits 0-4) and
  the segment mask (bits 8-12).
- `vote.sync.{all,any,uni}.pred d, {!}a, membermask`; `vote.sync.ballot.b32 d, {!}a, membermask`.
- `activemask.b32 d`: the mask of active lanes.
- `match.sync.{any,all}.b32/b64`: lanes holding the same value.
- `bar.warp.sync membermask` (= `__syncwarp`): a no-op under lockstep execution once the
  member lanes are converged; the executor checks that they are.

Source: PTX ISA, "Parallel Synchronization and Communication Instructions".
"""
from __future__ import annotations

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Instruction, PredPair


def bind_shfl(instr: Instruction) -> Bound:
    t = (instr.types or ("b32",))[0]
    if t not in ("b32",):
        raise UnsupportedInstruction(instr.mnemonic, reason="shfl moves .b32 values")
    d = instr.operands[0]
    ndst = 2 if isinstance(d, PredPair) and d.second is not None else 1
    return Bound(("b32", "pred")[:ndst], ("b32", "u32", "u32", "u32"), None, "shuffle")


def bind_vote(instr: Instruction) -> Bound:
    mods = instr.modifiers
    if "ballot" in mods:
        return Bound(("b32",), ("pred", "u32"), None, "int")
    if any(m in mods for m in ("all", "any", "uni")):
        return Bound(("pred",), ("pred", "u32"), None, "int")
    raise UnsupportedInstruction(instr.mnemonic, reason="vote mode must be all, any, uni or ballot")


def bind_activemask(instr: Instruction) -> Bound:
    return Bound(("b32",), (), None, "int")


def bind_match(instr: Instruction) -> Bound:
    t = (instr.types or ("b32",))[0]
    d = instr.operands[0]
    ndst = 2 if isinstance(d, PredPair) and d.second is not None else 1
    return Bound(("b32", "pred")[:ndst], (t, "u32"), None, "int")


ENTRIES = [
    OpSpec("shfl", "warp", bind_shfl, "exchange a register between lanes of a warp"),
    OpSpec("vote", "warp", bind_vote, "warp vote: all / any / uni / ballot"),
    OpSpec("activemask", "warp", bind_activemask, "mask of the warp's active lanes"),
    OpSpec("match", "warp", bind_match, "lanes of the warp that hold the same value"),
]
