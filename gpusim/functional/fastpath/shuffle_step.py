"""A warp shuffle inside a compiled segment (`segments`): the reduction idiom every compiler
emits for a row's max or sum (Triton's softmax, layer norm and attention; CUDA C++'s
`__shfl_xor_sync` loops) alternates one-instruction ALU runs with `shfl.sync`, so each
shuffle cut a block into separate segments and op calls (a causal attention's row
reductions: SEG, shfl, SEG, shfl, ... about 128 op calls a launch).

A `ShflStep` stands for a `shfl.sync` that a segment can run as a loop of its own between its
ALU lane loops (`segment_ir`): `.b32`, no guard and no predicate destination, its lane, clamp
and membermask operands immediates, the membermask naming all 32 lanes, source and destination
distinct 32-bit unsigned registers. Each lane's source lane within its warp is then a fixed
table (`perm`, from the reference's own `collectives._source_lanes`). The segment runs it
compiled only where every lane of each warp it runs is active (no mask, or whole warps in or
out) and no sanitizer is attached: there the reference finds nothing to check (no membermask
can name an inactive lane) and reads every lane's source as the table says. Anywhere else, and
until the segment is compiled, its reference ops run, this shuffle's among them (`ref`).

Sources: PTX ISA 9.0, 9.7.8.6 (shfl.sync), as `gpusim.functional.collectives`.
"""
from __future__ import annotations

import numpy as np

from gpusim.functional.collectives import _source_lanes
from gpusim.functional.ops import WarpOp
from isa.program import Imm, Reg

U32 = np.dtype(np.uint32)


class ShflStep:
    """A compilable `shfl.sync` in a segment's run (module docstring)."""
    __slots__ = ("ref", "index", "info", "guard", "sources", "dsts", "src_dtypes", "dst_dtypes", "perm")

    @classmethod
    def build(cls, op, dec, ins) -> "ShflStep | None":
        """The step for WarpOp `op` (instruction `ins`), or None where it is not one (docstring)."""
        if type(op) is not WarpOp or op.kind != "shfl" or op.guard is not None or len(op.dsts) != 1:
            return None
        ops = ins.operands
        if ins.types != ("b32",) or len(ops) != 5 or not isinstance(ops[1], Reg) or \
                not all(isinstance(o, Imm) for o in ops[2:]) or (int(ops[4].value) & 0xFFFFFFFF) != 0xFFFFFFFF:
            return None
        src, dst = dec.slot(ops[1], ins), op.dsts[0]
        rd = dec.reg_dtypes
        if dst is None or src == dst or rd[src] != U32 or rd[dst] != U32:
            return None
        step = cls()
        step.ref, step.index, step.info, step.guard = op, op.index, getattr(op, "info", None), None
        step.sources, step.dsts = [("reg", src)], [dst]
        step.src_dtypes, step.dst_dtypes = [U32], [U32]
        lane = np.arange(32, dtype=np.int64)
        j, _ = _source_lanes(op, lane, np.int64(int(ops[2].value)), np.int64(int(ops[3].value)))
        step.perm = tuple(int(v) for v in j)
        return step

    def run(self, x) -> None:
        self.ref.run(x)
