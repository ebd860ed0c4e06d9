"""Which tensor-core results a prediction can do without: a kernel's *timing-relevant* registers.

A prediction-only launch (`launch(outputs=False)`) needs from the functional core what the
timing model consumes: each warp's path (branches, guards, active masks), every memory
address, and the arguments of synchronisation (barriers, mbarriers, atomics). A register is
*relevant* when its value can reach one of those. The analysis is flow-insensitive and
conservative, over the whole kernel (register names, every definition of a name together):
- roots: the guard of every instruction, the address (and size, stride, descriptor) operands
  of every memory, tensor and async instruction, and every operand of an instruction not
  listed below (atomics, barriers, mbarriers, calls, votes' member masks, ...);
- an ALU instruction, a load, a warp shuffle or reduction, `mma`, `wgmma.mma_async` and
  `wmma.mma` pass relevance from their destinations to their data sources (all of them);
- memory: when a load from writable memory (global, shared, local, generic) defines a relevant
  register, or the kernel has an atomic or a call, every value stored (st, stmatrix,
  wmma.store) is relevant too (one pool: no alias analysis).
`value_free(kernel)` gives the tensor-core instructions (mma.sync, wgmma.mma_async,
wmma.mma, ldmatrix, wmma.load) none of whose destinations is relevant: their numerics decide no path,
address or synchronisation, so a prediction-only run may leave their destination registers
unwritten (`tensor_ops`, `wgmma_ops`, `wmma_ops`) and times the launch exactly as if it had
computed them. Their checks (partial warps, shared-memory bounds, descriptors), counters,
sanitizer and trace accesses still run. A kernel the analysis cannot bind gets no such set.

Does not model: anything beyond registers and one memory pool (a value stored, reloaded and
used as an address makes every stored value relevant).
"""
from __future__ import annotations

from gpusim.functional.decode import Decoder
from isa import optable
from isa.program import Vector, operand_regs
from isa.semantics.carry import implicit_operands

WRITABLE = (None, "global", "shared", "local", "generic")   # a load from these may read a stored value
STORES = ("st", "stmatrix")
COLLECTIVES = ("shfl", "redux")          # (dst, data, lane/offset/clamp/member mask...)
TENSOR_MMA = ("mma", "wgmma", "wmma")


def regs(*operands) -> set:
    """The registers `operands` mention (`isa.program.operand_regs`), as a set."""
    return set(operand_regs(*operands))


def _space(ins) -> str | None:
    return next((s for s in ins.suffixes if s in ("global", "shared", "local", "const", "param", "generic")), None)


def _classify(ins):
    """(defs, data sources, roots, role) of one instruction; role 'load', 'store', 'mma',
    'ldsm' or ''. Raises for an instruction the optable cannot bind (the caller gives up)."""
    hid_d, hid_s = implicit_operands(ins)
    ops = ins.operands
    op = ins.opcode
    roots = {ins.guard.reg.name} if ins.guard is not None else set()
    if op == "mma" or (op == "wmma" and ins.suffixes[:1] == ("mma",)):
        return regs(ops[0]), regs(*ops[1:]), roots, "mma"
    if op == "wgmma" and ins.suffixes[:1] == ("mma_async",):
        a_regs = isinstance(ops[1], Vector)
        data = regs(ops[0], *((ops[1],) if a_regs else ()))
        return regs(ops[0]), data, roots | regs(*ops[1 + a_regs:]), "mma"
    if op == "ldmatrix":
        return regs(ops[0]), set(), roots | regs(*ops[1:]), "ldsm"
    if op in STORES or (op == "wmma" and ins.suffixes[:1] == ("store",)):
        addr = ops[0]
        return set(), regs(ops[1]), roots | regs(addr, *ops[2:]), "store"
    if op == "wmma" and ins.suffixes[:1] == ("load",):
        return regs(ops[0]), set(), roots | regs(*ops[1:]), "load"
    if op in COLLECTIVES:
        return regs(ops[0]), regs(ops[1]), roots | regs(*ops[2:]), ""
    spec, bound = optable.bind(ins)
    if op in ("ld", "ldu"):
        return regs(ops[0]) | {r.name for r in hid_d}, {r.name for r in hid_s}, roots | regs(*ops[1:]), "load"
    if spec.kind == "alu":
        n = Decoder.ndests(spec, len(bound.dst_types) - len(hid_d), ins)
        return (regs(*ops[:n]) | {r.name for r in hid_d}, regs(*ops[n:]) | {r.name for r in hid_s}, roots, "")
    return set(), set(), roots | regs(*ops) | {r.name for r in hid_d} | {r.name for r in hid_s}, "root"


def value_free(kernel) -> frozenset[int]:
    """Instruction indices of the tensor-core instructions whose results no path, address or
    synchronisation depends on (module docstring); empty where the analysis gives up."""
    instrs = kernel.instructions
    try:
        facts = [_classify(ins) for ins in instrs]
    except Exception:                   # an instruction the optable cannot bind: no claim
        return frozenset()
    memory = any(ins.opcode in ("call", "atom", "red") for ins in instrs)
    relevant: set = set()
    for d, s, r, role in facts:
        relevant |= r
    changed = True
    while changed:
        changed = False
        for ins, (d, s, r, role) in zip(instrs, facts):
            if role == "store":
                if memory and not s <= relevant:
                    relevant |= s
                    changed = True
                continue
            if d & relevant:
                if role in ("load", "ldsm") and _space(ins) in WRITABLE and not memory:
                    memory = changed = True
                if not s <= relevant:
                    relevant |= s
                    changed = True
    return frozenset(i for i, (ins, (d, s, r, role)) in enumerate(zip(instrs, facts))
                     if (role in ("mma", "ldsm") or (role == "load" and ins.opcode == "wmma")) and d
                     and not d & relevant)
