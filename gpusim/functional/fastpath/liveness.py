"""Register liveness over a kernel's control-flow graph, per thread.

A compiled segment stores back only the registers some later instruction may read
(`segments`): the others are temporaries no instruction, counter or record ever sees
again. Liveness is the textbook backward dataflow over the basic blocks of `isa.cfg`:
a register is live after an instruction when some path from there reads it before an
unguarded instruction writes it. Every lane follows one path of the CFG, so a lane's
value that is not live is never read by that lane; lanes never read other lanes'
registers except through warp collectives, which are reads like any other here.

Conservative where it does not know: every register an instruction mentions is a use
(destinations too), except the destination operands of ALU instructions, loads and
atomics (the value an `atom` returns), which are definitions; only unguarded ones kill.
"""
from __future__ import annotations

from isa import optable
from isa.cfg import CFG, build_cfg
from isa.program import Instruction, operand_regs
from isa.semantics.carry import implicit_operands
from gpusim.functional.decode import Decoder


def uses_defs(ins: Instruction, ndests: int | None) -> tuple[set[str], set[str]]:
    """(registers read, registers surely written) by one instruction; `ndests` is the
    number of leading destination operands of an ALU instruction or load, None otherwise."""
    hidden_dsts, hidden_srcs = implicit_operands(ins)
    uses: list[str] = [r.name for r in hidden_srcs]
    if ins.guard is not None:
        uses.append(ins.guard.reg.name)
    if ndests is None:
        uses += operand_regs(*ins.operands)
        return set(uses) | {r.name for r in hidden_dsts}, set()
    uses += operand_regs(*ins.operands[ndests:])
    defs: list[str] = [r.name for r in hidden_dsts] + operand_regs(*ins.operands[:ndests])
    return set(uses), (set(defs) if ins.guard is None else set())


class Liveness:
    """Live registers after any instruction of a kernel (`live_after(i)`)."""

    def __init__(self, instrs, cfg: CFG, ndests):
        """`ndests(i)`: the destination operand count of instruction i if it is an ALU
        instruction or a load, else None."""
        self.instrs = instrs
        self.cfg = cfg
        self.ud = [uses_defs(ins, ndests(i)) for i, ins in enumerate(instrs)]
        nb = len(cfg.blocks)
        gen: list[set[str]] = []
        kill: list[set[str]] = []
        for bb in cfg.blocks:
            g: set[str] = set()
            k: set[str] = set()
            for i in range(bb.end - 1, bb.start - 1, -1):
                u, d = self.ud[i]
                g = (g - d) | u
                k |= d
            gen.append(g)
            kill.append(k)
        live_in: list[set[str]] = [set() for _ in range(nb)]
        live_out: list[set[str]] = [set() for _ in range(nb)]
        changed = True
        while changed:
            changed = False
            for b in range(nb - 1, -1, -1):
                out: set[str] = set()
                for s in cfg.blocks[b].succs:
                    if 0 <= s < nb:
                        out |= live_in[s]
                inn = gen[b] | (out - kill[b])
                if out != live_out[b] or inn != live_in[b]:
                    live_out[b], live_in[b] = out, inn
                    changed = True
        self.live_out = live_out

    def live_after(self, i: int) -> set[str]:
        """Registers live just after instruction i."""
        b = self.cfg.block_of[i]
        bb = self.cfg.blocks[b]
        live = set(self.live_out[b])
        for j in range(bb.end - 1, i, -1):
            u, d = self.ud[j]
            live = (live - d) | u
        return live


def dest_count(ins: Instruction) -> int | None:
    """The number of leading destination operands of an ALU instruction or a load (as the
    decoder counts them), None for any other instruction."""
    try:
        spec, bound = optable.bind(ins)
    except Exception:                     # not executable (a control instruction's form): all uses
        return None
    if ins.opcode in ("ld", "ldu", "atom"):   # an atom's first operand is the value it returns: a definition
        return 1
    if spec.kind != "alu":
        return None
    return Decoder.ndests(spec, len(bound.dst_types) - len(implicit_operands(ins)[0]), ins)


def kernel_liveness(kernel) -> Liveness:
    """Liveness of an `isa.program.Kernel` (its ALU destinations as the decoder counts them)."""
    instrs = kernel.instructions
    return Liveness(instrs, build_cfg(kernel), lambda i: dest_count(instrs[i]))
