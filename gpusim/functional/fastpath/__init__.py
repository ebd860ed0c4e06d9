"""The fast functional core: the reference interpreter's structure with compiled ops.

The reference core (`gpusim.functional.ops`, `.lsu`) is the executable definition of
every instruction: numpy over the lanes of a step. The fast core decodes the same
kernel into the same basic blocks and runs them with the same executor, warp stacks,
barriers, collectives and counters; only ops it compiles are replaced, each by an op
of the same interface (`run(executor)`) that produces the same register values,
memory contents, counters and step records, and that falls back to the reference
behaviour for any case it does not compile (`memops`, `lsu`).

Measured (2-core shared machine, functional mode, `benchmarks/functional_speed.py`):
memory instructions dominated: the reference counts sectors and bank wavefronts with
`np.unique` over every lane (80% of a 256^3 tiled matmul), which the compiled pass of
`lsu_kernels` does per warp in one loop.

New instructions (tensor-core `mma`, `ldmatrix`, `cp.async`, `mbarrier`) are ops of the
same kind: a reference op in `gpusim.functional.ops`, and where it matters for speed a
compiled one here, registered by `FastOpFactory`.

`core="reference"` (`gpusim.launch(..., core=...)`, or `GPUSIM_CORE=reference`) runs
the reference core; the differential tests hold the two equal.
"""
from __future__ import annotations

import os

from gpusim.errors import LaunchError
from gpusim.functional.async_ops import CpAsyncOp
from gpusim.functional.fastpath.async_copy import FastCpAsyncOp
from gpusim.functional.fastpath.async_run import copy_runs
from gpusim.functional.fastpath.hoist import also_live, hoist
from gpusim.functional.fastpath.lsu import FastLoadStoreUnit
from gpusim.functional.fastpath.memops import FastLoadOp, FastStoreOp, fast_copy
from gpusim.functional.fastpath.memory_run import MemoryRunOp
from gpusim.functional.fastpath.segment_op import SegmentOp
from gpusim.functional.fastpath.segments import FastAluOp, KernelCode
from gpusim.functional.fastpath.shuffle_step import ShflStep
from gpusim.functional.lsu import LoadStoreUnit
from gpusim.functional.ops import AluOp, LoadOp, OpFactory, StoreOp, WarpOp

CORES = ("fast", "reference")


def resolve_core(core: str | None) -> str:
    """`core`, or GPUSIM_CORE, or 'fast'; a LaunchError for anything else."""
    c = core if core is not None else os.environ.get("GPUSIM_CORE", "fast")
    if c not in CORES:
        raise LaunchError(f"core must be one of {', '.join(CORES)}, got {c!r}"
                          + (" (from GPUSIM_CORE)" if core is None else ""))
    return c


class FastOpFactory(OpFactory):
    """The reference factory, with compiled loads and stores where their form allows, and
    runs of compilable ALU instructions fused into segments (`segments`)."""
    lsu_class = FastLoadStoreUnit

    def __init__(self, alu: bool = True):
        self.alu = alu and os.environ.get("GPUSIM_FAST_ALU", "1") != "0"
        self.code = KernelCode()

    def make(self, dec, ins, i, spec, bound):
        op = super().make(dec, ins, i, spec, bound)
        self.code.dec = dec
        if self.alu and type(op) is AluOp:
            return FastAluOp.build(op, dec, ins, bound) or op
        if type(op) is CpAsyncOp:
            return FastCpAsyncOp.from_op(op, dec, ins)
        return op

    def finish_block(self, ops: list, reg_dtypes) -> list:
        """The block's ops with FastAluOps moved up past the memory ops they may pass (`hoist`)
        and each run of them (with the shuffles between them that compile: `shuffle_step`)
        replaced by one SegmentOp."""
        named_by: dict = {}
        if self.alu and ops:                 # (a block with no ops may come before any op is made)
            ops, named_by = hoist(ops, self.code.dec.kernel.instructions)
        out, run = [], []
        for k, op in enumerate(ops + [None]):
            step = ShflStep.build(op, self.code.dec, self.code.dec.kernel.instructions[op.index]) \
                if self.alu and type(op) is WarpOp else None
            if isinstance(op, FastAluOp) or step is not None:
                run.append(op if step is None else step)
                continue
            if run:
                out.append(SegmentOp(run, reg_dtypes, self.code, also_live(run, ops[k:], named_by)))
                run = []
            if op is not None:
                out.append(op)
        return copy_runs(memory_runs(out)) if self.alu else out

    def _mem(self, dec, ins, i, guard, bound):
        op = super()._mem(dec, ins, i, guard, bound)
        if type(op) is LoadOp and op.param is None and op.space in ("global", "shared", "local", "const"):
            return fast_copy(FastLoadOp, op, dec, ins, ins.operands[1]) or op
        if type(op) is StoreOp and op.space in ("global", "shared", "local"):
            return fast_copy(FastStoreOp, op, dec, ins, ins.operands[0]) or op
        return op


def memory_runs(ops: list) -> list:
    """`ops` with each row of at least two consecutive fast loads and stores one `MemoryRunOp`."""
    out, row = [], []
    for op in ops + [None]:
        if type(op) in (FastLoadOp, FastStoreOp):
            row.append(op)
            continue
        if len(row) > 1:
            out.append(MemoryRunOp(row))
        else:
            out.extend(row)
        row = []
        if op is not None:
            out.append(op)
    return out


class ReferenceOpFactory(OpFactory):
    lsu_class = LoadStoreUnit


def factory(core: str) -> OpFactory:
    return FastOpFactory() if core == "fast" else ReferenceOpFactory()
