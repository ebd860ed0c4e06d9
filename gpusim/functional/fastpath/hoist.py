"""Register-only instructions moved up past the memory and asynchronous instructions of their
basic block, so that runs of them fuse into fewer compiled segments (`segments`).

Compilers interleave address arithmetic with the loads, stores and copies that use it: a Triton
matmul's prologue is `SEG13 cp.async SEG1 cp.async commit SEG7 cp.async ...`, five segments
where one would do, and each segment run costs its table and its call (some microseconds on a
128-thread program, most of a small launch's time). An ALU instruction reads and writes only
its own lane's registers, so it may run before an earlier instruction X of its block whenever
neither touches a register the other writes: X reads none it writes, X writes none it reads
or writes. The values every register and memory byte ends with are the same; so are the
order of memory effects (only ALU instructions move, and never past each other), the
counters (per block and per memory instruction) and the steps' access records.

Moved past, conservatively: loads and stores (`ld`, `st`; an `ld` writes its destinations),
`cp.async` and its commit and wait groups, warp collectives and the tensor-core instructions
(`mma`, `ldmatrix`/`stmatrix`, `wmma`, `wgmma`: every register they name counted as read and
written), and instructions the functional core does nothing for
(fences, `prefetch`, `setmaxnreg`). Nothing moves past a barrier, an atomic, an `mbarrier`, a
bulk copy or any op not listed, nor does an instruction reading a clock (`%clock`, ...).

A segment that ends up before some of the instructions it was after must also store the
registers those read (`also_live`, added to the liveness of its last instruction).
"""
from __future__ import annotations

from gpusim.functional.async_ops import CpAsyncOp, CpGroupOp
from gpusim.functional.fastpath.async_copy import FastCpAsyncOp
from gpusim.functional.fastpath.liveness import dest_count, uses_defs
from gpusim.functional.fastpath.memops import FastLoadOp, FastStoreOp
from gpusim.functional.fastpath.segments import FastAluOp
from gpusim.functional.loops import CLOCKS
from gpusim.functional.ops import LoadOp, NopOp, StoreOp, WarpOp
from gpusim.functional.tensor_ops import LdsmOp, MmaOp
from gpusim.functional.wgmma_ops import WgmmaOp
from gpusim.functional.wmma_ops import WmmaMemOp, WmmaMmaOp
from isa.program import operand_regs
from isa.semantics.carry import implicit_operands

# op type -> whether the op writes registers: "dests" (its leading destination operands),
# "none" (only registers the instruction names implicitly), "all" (any register it names)
CROSSABLE = {LoadOp: "dests", FastLoadOp: "dests", StoreOp: "none", FastStoreOp: "none",
             CpAsyncOp: "none", FastCpAsyncOp: "none", CpGroupOp: "none", NopOp: "none",
             WarpOp: "all", WgmmaOp: "all", MmaOp: "all", LdsmOp: "all", WmmaMemOp: "all", WmmaMmaOp: "all"}


def _alu_access(ins) -> tuple[set[str], set[str]]:
    """(registers read, registers possibly written) by an ALU instruction."""
    nd = dest_count(ins)
    reads = uses_defs(ins, nd)[0]
    writes = {r.name for r in implicit_operands(ins)[0]} | set(operand_regs(*ins.operands[:nd or 0]))
    return reads, writes


def _other_access(op, ins) -> tuple[set[str], set[str]] | None:
    """(registers named, registers possibly written) by an op ALU ops may move past, or None."""
    kind = CROSSABLE.get(type(op))
    if kind is None:
        return None
    named = uses_defs(ins, None)[0]
    if kind == "all":
        return named, named
    written = {r.name for r in implicit_operands(ins)[0]}
    if kind == "dests":
        written |= set(operand_regs(*ins.operands[:1]))
    return named, written


def hoist(ops: list, instrs) -> tuple[list, dict]:
    """`ops` (a block's, in program order) with each compilable ALU op moved up to just after
    the nearest ALU op before it, or to the block's start, where every op in between allows it
    (module docstring); and per moved-past op, its index -> the registers it names."""
    out: list = []
    access: dict = {}
    named_by: dict = {}
    for op in ops:
        if not isinstance(op, FastAluOp) or any(s[0] == "special" and s[1] in CLOCKS for s in op.sources):
            out.append(op)
            continue
        reads, writes = _alu_access(instrs[op.index])
        j = len(out)
        while j > 0:
            prev = out[j - 1]
            if isinstance(prev, FastAluOp):
                break
            acc = access.get(id(prev))
            if acc is None:
                acc = access[id(prev)] = _other_access(prev, instrs[prev.index]) or False
            if not acc or (writes & acc[0]) or (reads & acc[1]):
                j = len(out)                   # stopped short of a run to join: stays where it is
                break
            j -= 1
        if j < len(out):
            for prev in out[j:]:
                named_by[prev.index] = access[id(prev)][0]
        out.insert(j, op)
    return out, named_by


def also_live(run: list, after: list, named_by: dict) -> frozenset:
    """Registers a segment of the ops `run` must store besides those live after its last
    instruction in program order: those named by the ops placed after it that were before that
    instruction."""
    last = max(op.index for op in run)
    out: set = set()
    for op in after:
        if op.index < last and op.index in named_by:
            out |= named_by[op.index]
    return frozenset(out)
