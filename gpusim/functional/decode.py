"""Decode a kernel once into basic blocks of ready-to-run ops.

Decoding binds every instruction to its opcode-table entry (`isa.optable.bind`),
turns operands into fetchers (register slot + dtype, immediate as a numpy scalar of
the operand type, special register, symbol address) and records per-instruction
facts the counters and the timing model need: unit class, kind, memory space,
access size, Python source line. Work done here is never repeated per step.

Does not model: SASS (counters count PTX instructions; see DEVIATIONS.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import numpy as np

from isa import optable
from isa.opcodes import OpSpec
from isa.cfg import CFG, build_cfg
from isa.errors import UnsupportedInstruction
from isa.semantics.carry import CARRY_FLAG
from isa.program import Imm, Instruction, Kernel, PredPair, Reg, Special, Sym, Vector
from isa.types import dtype as ptx_dtype, type_bytes, unsigned_dtype
from gpusim.functional.state import StatePool
from gpusim.functional.syscalls import SysCallOp


# PTX ISA "Predefined Identifiers" that are constants: `WARP_SZ` (threads per warp, 32 on every
# target; numba-cuda's `cuda.warpsize` lowers to `mov.u32 %r, WARP_SZ`).
PREDEFINED = {"WARP_SZ": 32}


@dataclass(frozen=True, slots=True)
class InstrInfo:
    """Static facts about one instruction (index into kernel.instructions)."""
    index: int
    mnemonic: str
    kind: str                   # isa.opcodes.KINDS
    unit: str                   # isa.opcodes.UNIT_CLASSES
    line: int                   # Python source line (0 if unknown)
    file: str
    ptx_line: int
    space: str | None = None    # memory instructions: 'global', 'shared', 'local', 'const', 'param', or None=generic
    access_bytes: int = 0       # bytes per lane for memory instructions
    is_store: bool = False
    is_atomic: bool = False


@dataclass
class Block:
    """A decoded basic block: ops to run, then how control leaves it."""
    index: int
    ops: list                    # op objects with .run(executor)
    first: int                   # first instruction index
    last: int                    # one past the last instruction index
    terminator: str              # isa.cfg terminator kinds
    succs: tuple[int, ...]
    ipdom: int
    guard: tuple[int, bool] | None = None     # (pred slot, negated) of a conditional branch/exit
    barrier: Any = None                       # the BarrierOp ending this block, if any
    # the blocks straight after this one that only it leads to (`chains`): run with it in one step, as
    # `chain_ops`, where the executor may (executor.py); () for none
    chain: tuple[int, ...] = ()
    chain_ops: list | None = None
    chain_blocks: Any = None                  # (this block,) + chain as an int64 array (budget.count_chain)


@dataclass
class DecodedKernel:
    kernel: Kernel
    cfg: CFG
    blocks: list[Block]
    infos: list[InstrInfo]
    reg_slots: dict[str, int]
    reg_dtypes: list[np.dtype]
    symbols: dict[str, tuple[str, int]] = field(default_factory=dict)
    lsu_class: Any = None                     # the load/store unit the ops expect (None: the reference one)
    # what ops work out once and key themselves with everything it depends on (wgmma_ops: the warps,
    # descriptors and the launch's block shape and shared memory), kept for every batch and launch
    op_memo: dict = field(default_factory=dict, compare=False, repr=False)
    # idle batch states, each executor's taken from here and given back when it closes
    states: StatePool = field(default_factory=StatePool, compare=False, repr=False)

    @cached_property
    def counter_maps(self) -> tuple[np.ndarray, np.ndarray]:
        """(each instruction's block, each block's conditional branch or exit instruction or -1), as
        int64 arrays: how `Counters.instruction_table` spreads block counts, found once a kernel."""
        branch_of = np.array([b.last - 1 if b.terminator in ("cond_branch", "cond_exit") else -1 for b in self.blocks],
                             np.int64)
        block_of = np.array(self.cfg.block_of, dtype=np.int64)
        block_of.flags.writeable = branch_of.flags.writeable = False     # shared by every launch
        return block_of, branch_of


    @cached_property
    def barrier_sites(self) -> tuple:
        """(each barrier by its instruction index, this_grid().sync() sites and barrier.cluster.wait
        sites as int64 arrays or None, and per block whether it can only exit: nothing but ret/exit,
        plus EXIT itself in the last slot (index -1), where parked lanes need not arrive at a barrier,
        as exited threads need not on hardware); read-only, found once a kernel."""
        barriers = {b.barrier.index: b.barrier for b in self.blocks if b.barrier is not None}
        sites = []
        for scope in ("grid", "cluster"):
            found = sorted(i for i, b in barriers.items() if getattr(b, "scope", "cta") == scope)
            sites.append(np.array(found, np.int64) if found else None)
        exit_only = np.array([b.terminator == "exit" and not b.ops for b in self.blocks] + [True])
        for a in sites + [exit_only]:
            if a is not None:
                a.flags.writeable = False
        return (barriers, *sites, exit_only)


def imm_value(imm: Imm, t: str):
    """An immediate as a numpy scalar of PTX type `t` (integers wrap to the width)."""
    dt = ptx_dtype(t)
    if dt == np.bool_:
        return np.bool_(bool(imm.value))
    if imm.bits is not None:
        raw = unsigned_dtype(imm.width // 8).type(imm.bits)
        if dt.kind == "f":
            f = raw.view(np.float32 if imm.width == 32 else np.float64)
            return dt.type(f)
        if dt.itemsize * 8 == imm.width:
            return raw.view(dt)
        return dt.type(int(imm.bits) & ((1 << (8 * dt.itemsize)) - 1))
    if dt.kind == "f":
        return dt.type(imm.value)
    v = int(imm.value) & ((1 << (8 * dt.itemsize)) - 1)
    return unsigned_dtype(dt.itemsize).type(v).view(dt)


def chains(cfg: CFG, blocks: list[Block]) -> dict[int, tuple[int, ...]]:
    """Per block that starts one, the blocks that follow it in a chain: each falls through (no
    barrier) into the next, which only it leads to and which is no branch's reconvergence point, so
    warps that run the first run the rest straight after with the same lanes (Triton's PTX starts a
    block at every debug label: the matmul default's first six blocks are one chain)."""
    preds: dict[int, int] = {}
    for b in cfg.blocks:
        for t in b.succs:
            preds[t] = preds.get(t, 0) + 1
    rejoin = {cfg.ipdom[b.index] for b in cfg.blocks if b.terminator in ("cond_branch", "cond_exit")}
    out: dict[int, tuple[int, ...]] = {}
    b = 0
    while b < len(blocks):
        members = []
        cur = blocks[b]
        while cur.terminator == "fallthrough" and cur.barrier is None and cur.succs == (cur.index + 1,) \
                and cur.index + 1 < len(blocks) and preds.get(cur.index + 1) == 1 and cur.index + 1 not in rejoin:
            cur = blocks[cur.index + 1]
            members.append(cur.index)
        if members:
            out[b] = tuple(members)
        b = cur.index + 1
    return out


class Decoder:
    """Builds a DecodedKernel; `symbol_value(name)` resolves symbols to (space, address)."""

    def __init__(self, kernel: Kernel, symbols: dict[str, tuple[str, int]], op_factory: Any):
        self.kernel = kernel
        self.symbols = symbols
        self.ops = op_factory
        self.reg_slots: dict[str, int] = {}
        self.reg_dtypes: list[np.dtype] = []
        for name, t in list(kernel.register_types.items()) + [(CARRY_FLAG, "pred")]:
            self.reg_slots[name] = len(self.reg_dtypes)
            self.reg_dtypes.append(ptx_dtype(t))

    # ----------------------------------------------------------------- operands
    def slot(self, reg: Reg, instr: Instruction) -> int:
        try:
            return self.reg_slots[reg.name]
        except KeyError:
            raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, kernel=self.kernel.name,
                                         reason=f"register {reg.name} is not declared") from None

    def fetcher(self, op: Any, t: str, instr: Instruction) -> Callable:
        """A function (state, executor) -> value of PTX type t for source operand `op`."""
        want = ptx_dtype(t)
        if isinstance(op, Reg):
            s = self.slot(op, instr)
            return lambda st, x: st.read(s, want)
        if getattr(op, "negated", False) and hasattr(op, "reg"):        # a `!%p` source
            s = self.slot(op.reg, instr)
            return lambda st, x: ~st.read(s, want)
        if isinstance(op, Imm):
            v = imm_value(op, t)
            return lambda st, x: v
        if isinstance(op, Special):
            name = op.name
            return lambda st, x: x.special(name, want)
        if isinstance(op, Sym):
            if op.name in PREDEFINED and op.name not in self.symbols:
                v = imm_value(Imm(PREDEFINED[op.name]), t)
            else:
                v = imm_value(Imm(self.symbol_address(op.name, instr)), t)
            return lambda st, x: v
        raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, kernel=self.kernel.name,
                                     reason=f"operand {op!r} cannot be a source here")

    def symbol_address(self, name: str, instr: Instruction) -> int:
        try:
            return self.symbols[name][1]
        except KeyError:
            raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, kernel=self.kernel.name,
                                         reason=f"symbol {name} is not declared") from None

    def flat_sources(self, operands, types: tuple[str, ...], instr: Instruction) -> list[Callable]:
        vals: list[Any] = []
        for op in operands:
            vals.extend(op.elems if isinstance(op, Vector) else (op,))
        if len(vals) != len(types):
            raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, kernel=self.kernel.name,
                                         reason=f"expected {len(types)} source values, found {len(vals)}")
        return [self.fetcher(v, t, instr) for v, t in zip(vals, types)]

    def flat_dests(self, operands, instr: Instruction) -> list[int | None]:
        out: list[int | None] = []
        for op in operands:
            if isinstance(op, Vector):
                out.extend(None if e is None else self.slot(e, instr) for e in op.elems)
            elif isinstance(op, PredPair):
                out.append(None if op.first is None else self.slot(op.first, instr))
                if op.second is not None:
                    out.append(self.slot(op.second, instr))
            elif isinstance(op, Reg):
                out.append(self.slot(op, instr))
            else:
                raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, kernel=self.kernel.name,
                                             reason=f"operand {op!r} cannot be a destination")
        return out

    @staticmethod
    def ndests(spec: OpSpec, n_values: int, instr: Instruction) -> int:
        """How many leading operands hold the instruction's `n_values` destination values."""
        if spec.kind == "alu" or spec.kind == "warp" or instr.opcode in ("ld", "ldu", "atom"):
            n, k = 0, 0
            while k < n_values:
                op = instr.operands[n]
                k += len(op.elems) if isinstance(op, Vector) else (
                    (2 if op.second is not None else 1) if isinstance(op, PredPair) else 1)
                n += 1
            return n
        if instr.opcode == "bar" and "red" in instr.modifiers:
            return 1
        return 0

    def guard(self, instr: Instruction) -> tuple[int, bool] | None:
        if instr.guard is None:
            return None
        return self.slot(instr.guard.reg, instr), instr.guard.negated

    # ----------------------------------------------------------------- kernel
    def decode(self) -> DecodedKernel:
        k = self.kernel
        cfg = build_cfg(k)
        instrs = k.instructions
        infos: list[InstrInfo] = []
        bounds = []
        for i, ins in enumerate(instrs):
            spec, bound = optable.bind(ins, kernel=k.name)
            bounds.append((spec, bound))
            space = ins.space if spec.kind == "mem" else None
            nbytes = 0
            if spec.kind == "mem" and ins.types:
                nbytes = type_bytes(ins.types[0]) * max(1, sum(int(m[1:]) for m in ins.modifiers if m in ("v2", "v4", "v8")))
            infos.append(InstrInfo(
                index=i, mnemonic=ins.mnemonic, kind=spec.kind, unit=bound.unit,
                line=ins.loc.line if ins.loc else 0, file=ins.loc.file if ins.loc else "",
                ptx_line=ins.ptx_line, space=space, access_bytes=nbytes,
                is_store=ins.opcode in ("st", "red") or ins.opcode == "atom",
                is_atomic=ins.opcode in ("atom", "red")))
        blocks: list[Block] = []
        raw: list[list] = []                    # each block's ops before the factory fuses them
        finish = getattr(self.ops, "finish_block", None)     # a factory may fuse ops (fastpath segments)
        for bb in cfg.blocks:
            ops = []
            barrier = None
            guard = None
            for i in range(bb.start, bb.end):
                ins = instrs[i]
                spec, bound = bounds[i]
                if spec.kind == "control":
                    if ins.opcode == "trap":
                        ops.append(self.ops.trap(self, ins, i))
                        ops[-1].info = infos[i]
                    elif ins.opcode == "call":          # a system call (others are inlined or refused)
                        ops.append(SysCallOp(self, ins, i, self.guard(ins)))
                        ops[-1].info = infos[i]
                        continue
                    if i == bb.end - 1:
                        guard = self.guard(ins)
                    continue
                op = self.ops.make(self, ins, i, spec, bound)
                op.info = infos[i]
                if op is not None:
                    ops.append(op)
                    if getattr(op, "is_cta_barrier", False):
                        barrier = op
            raw.append(list(ops))
            if finish is not None:
                ops = finish(ops, self.reg_dtypes)
            blocks.append(Block(index=bb.index, ops=ops, first=bb.start, last=bb.end,
                                terminator=bb.terminator, succs=bb.succs, ipdom=cfg.ipdom[bb.index],
                                guard=guard, barrier=barrier))
        for head, members in chains(cfg, blocks).items():
            ops = [op for b in (head,) + members for op in raw[b]]
            blocks[head].chain = members
            blocks[head].chain_blocks = np.array((head,) + members, np.int64)
            blocks[head].chain_ops = finish(ops, self.reg_dtypes) if finish is not None else ops
        return DecodedKernel(k, cfg, blocks, infos, self.reg_slots, self.reg_dtypes, self.symbols,
                             getattr(self.ops, "lsu_class", None))
