"""What the figures are computed from: a launch's chosen blocks re-executed by the
functional core one step at a time, keeping every step's active masks and every
memory instruction's per-lane byte offsets.

`capture(subject, blocks=(0,))` prepares the launch (`gpusim.prepare`: its own copy of
the arguments in simulated memory, so the caller's arrays are not touched), creates a
batch of the chosen blocks and drives it with `BatchExecutor.step()`, the per-step
interface the timing model uses (`StepRecord`: block, warps, masks, accesses). Nothing
in the functional core changes and nothing is recorded unless a figure asks, so
ordinary launches cost exactly what they did.

The chosen blocks run from the launch's initial memory, as the first batch of a real
launch does: for blocks that do not communicate through global memory (every program
in `programs/`) each lane's mask and addresses are the ones the full launch executes.
Tensor-core and async-copy instructions give their own access size and direction
(`step_record.Access.nbytes`, `is_store`): an ldmatrix row is 16 bytes, a cp.async copy appears
twice (its global read, its shared write), a wmma fragment move once per request it makes.
Counts are PTX-level: one executed PTX instruction per column, as the functional core
counts them (ptxas may predicate a short branch the PTX takes; the SASS counters of
`Result` then show less divergence than these pictures).
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim import api
from isa.memory_map import GLOBAL_BASE

U64 = np.uint64


@dataclass(frozen=True)
class Subject:
    """One launch: `kernel[grid, block, 0, shared_bytes](*args)` on `gpu`."""
    kernel: Any
    grid: Any
    block: Any
    args: tuple
    gpu: Any = "h100"
    shared_bytes: int = 0
    name: str = ""


def subject_of(x, gpu=None) -> Subject:
    """A Subject from a Subject, a `programs` Case, a program name ('transpose_shared',
    its default case) or a tuple (kernel, grid, block, args[, shared_bytes])."""
    if isinstance(x, Subject):
        return x if gpu is None else Subject(x.kernel, x.grid, x.block, x.args, gpu, x.shared_bytes, x.name)
    if isinstance(x, str):
        import programs  # programs/ sits above gpusim: loaded only when a program is named
        x = programs.get(x).case("default")
    if hasattr(x, "kernel") and hasattr(x, "args"):               # programs.base.Case
        return Subject(x.kernel, x.grid, x.block, tuple(x.args), gpu or "h100", getattr(x, "shared_bytes", 0),
                       getattr(x, "name", ""))
    if isinstance(x, tuple) and len(x) in (4, 5):
        return Subject(x[0], x[1], x[2], tuple(x[3]), gpu or "h100", x[4] if len(x) == 5 else 0)
    raise TypeError(f"gpusim.viz: cannot make a launch of {type(x).__name__}; pass a programs Case, a program "
                    "name, a Subject or (kernel, grid, block, args[, shared_bytes])")


@dataclass(frozen=True)
class WarpAccess:
    """One warp's execution of one memory instruction (the part in one state space)."""
    instr: int                   # PTX instruction index
    line: int                    # Python source line (0: unknown)
    mnemonic: str
    space: str                   # 'global', 'shared', 'local' or 'const'
    block: int                   # linear block id
    warp: int                    # warp within the block
    occurrence: int              # k-th execution of this instruction by this warp (from 0)
    lanes: np.ndarray            # active lanes (0..31)
    offsets: np.ndarray          # bytes: shared = offset in the block's shared memory, global = address
    access_bytes: int            # bytes per lane
    is_store: bool
    is_atomic: bool
    phase_lanes: int = 32        # lanes the shared-memory unit serves together (ldmatrix/stmatrix: 8 row
    #                              addresses, one 8 x 8 matrix, per phase; `step_record.Access.phase_lanes`)


@dataclass(frozen=True)
class WarpStep:
    """One basic block executed by one warp, with the lanes active in it."""
    block: int                   # linear thread-block id
    warp: int                    # warp within the thread block
    bb: int                      # basic block index (gpusim.functional.decode.Block)
    mask: int                    # active lanes (bit i = lane i)
    exited: int                  # lanes of the warp that had exited after this step


@dataclass
class Capture:
    """Every step and memory access of the captured blocks, in execution order."""
    subject: Subject
    kernel_name: str
    source_file: str
    blocks: tuple[int, ...]
    decoded: Any                                  # gpusim.functional.decode.DecodedKernel
    prepared: Any                                 # gpusim.functional.prepared.PreparedLaunch
    steps: list[WarpStep] = field(default_factory=list)
    accesses: list[WarpAccess] = field(default_factory=list)

    @property
    def infos(self):
        return self.decoded.infos

    def source(self, line: int) -> str:
        return linecache.getline(self.source_file, line).strip() if line else ""

    def select(self, line: int | None = None, space: str | None = None, instr: int | None = None,
               block: int | None = None, warp: int | None = None) -> list[WarpAccess]:
        """The captured accesses matching every given field."""
        return [a for a in self.accesses
                if (line is None or a.line == line) and (space is None or a.space == space)
                and (instr is None or a.instr == instr) and (block is None or a.block == block)
                and (warp is None or a.warp == warp)]

    def pick(self, what: str, space: str, worst, line: int | None, block: int, warp: int | None,
             occurrence: int | None, instr: int | None, cost=None) -> WarpAccess:
        """One `space` access of `line` by block `block` (`instr`: one PTX instruction of the
        line): warp `warp`'s `occurrence`-th execution; `warp` or `occurrence` None: the
        execution costing the most (`cost(access)`: wavefronts, sectors), the first such on a
        tie. `line=None`: `worst(self)` gives the (line, instr), and a warp that never runs it
        falls back to any warp. `what` names the figure in the error."""
        auto = line is None
        if auto:
            line, instr = worst(self)
        hits = [a for a in self.select(line, space, instr, block, warp)
                if occurrence is None or a.occurrence == occurrence]
        if not hits and auto:
            hits = self.select(line, space, instr, block)
        if not hits:
            raise ValueError(f"{what}: no {space} access on line {line} by warp {warp} of block {block} "
                             f"(execution {occurrence}) in {self.kernel_name}; lines with {space} accesses: "
                             f"{self.lines_with(space)}")
        if cost is not None and (warp is None or occurrence is None) and len(hits) > 1:
            return max(hits, key=lambda a: (cost(a), -a.warp, -a.occurrence, -a.instr))
        return hits[0]

    def executions(self, a: WarpAccess) -> int:
        """How many times a's warp executed a's instruction in the capture."""
        return sum(1 for b in self.accesses if b.instr == a.instr and b.block == a.block and b.warp == a.warp
                   and (b.space == "shared") == (a.space == "shared"))

    def line_instructions(self, line: int, space: str) -> list[int]:
        """The PTX instructions of `line` accessing `space` (an unrolled loop: one per copy), in order."""
        return sorted({a.instr for a in self.accesses if a.line == line and a.space == space})

    def block_efficiency(self) -> dict[int, float]:
        """Per captured block: active lanes over the lanes its warps launched with, summed over
        every executed PTX instruction (1.0: never divergent; exited lanes count as idle)."""
        dk = self.decoded
        wpc = self.prepared.geometry.warps_per_block
        last = self.prepared.geometry.threads_per_block - 32 * (wpc - 1)
        on: dict[int, float] = {}
        full: dict[int, float] = {}
        for st in self.steps:
            k = dk.blocks[st.bb].last - dk.blocks[st.bb].first
            on[st.block] = on.get(st.block, 0.0) + k * bin(st.mask).count("1")
            full[st.block] = full.get(st.block, 0.0) + k * (last if st.warp == wpc - 1 else 32)
        return {b: on[b] / full[b] for b in sorted(on) if full[b]}

    def lines_with(self, space: str) -> list[int]:
        """Source lines with at least one captured access to `space`, in line order."""
        return sorted({a.line for a in self.accesses if a.space == space and a.line})


def where_of(a: WarpAccess, cap: Capture | None) -> tuple[int, int, int]:
    """(copy, copies, executions) of an access within its capture ((0, 1, 1) without one)."""
    if cap is None:
        return 0, 1, 1
    instrs = cap.line_instructions(a.line, a.space)
    return (instrs.index(a.instr) if a.instr in instrs else 0), max(len(instrs), 1), cap.executions(a)


def where_text(m) -> str:
    """Which access a map draws: instruction, copy of the line (an unrolled loop has one PTX
    instruction per copy), block, warp and execution, e.g. 'ld.shared.f32 (access 2 of 4 on
    this line, PTX 57), block 0, warp 3, execution 5 of 8'."""
    copies = getattr(m, "copies", 1)
    copy = f"access {m.copy + 1} of {copies} on this line, " if copies > 1 else ""
    return (f"{m.mnemonic} ({copy}PTX {m.instr}), block {m.block}, warp {m.warp}, "
            f"execution {m.occurrence + 1} of {max(getattr(m, 'executions', 1), m.occurrence + 1)}")


def sample_blocks(nblocks: int, k: int = 8) -> tuple[int, ...]:
    """Up to `k` blocks spread evenly over the launch, the first and the last included."""
    return tuple(sorted({int(round(x)) for x in np.linspace(0, nblocks - 1, min(k, nblocks))}))


def capture(subject, blocks=(0,), gpu=None) -> Capture:
    """Run the launch's `blocks` (linear ids; consecutive ones run as one batch) step by
    step and keep their masks and accesses (see the module docstring)."""
    s = subject_of(subject, gpu)
    p = api.prepare(s.kernel, s.grid, s.block, s.args, s.gpu, s.shared_bytes)
    nblocks = p.geometry.nblocks
    blocks = tuple(sorted({int(b) for b in blocks}))
    if not blocks or blocks[0] < 0 or blocks[-1] >= nblocks:
        raise ValueError(f"gpusim.viz.capture: blocks {blocks} outside the launch's 0..{nblocks - 1}")
    cap = Capture(s, p.name, p.compiled.source_file, blocks, p.decoded, p)
    runs, start = [], blocks[0]
    for a, b in zip(blocks, blocks[1:] + (None,)):
        if b != a + 1:
            runs.append((start, a - start + 1))
            start = b
    with np.errstate(all="ignore"):
        for first, n in runs:
            _run(cap, p, first, n)
    return cap


def _run(cap: Capture, p, first: int, n: int) -> None:
    ex = p.batch(first, n)
    wpc = p.geometry.warps_per_block
    infos = p.decoded.infos
    stride = ex.lsu.shared_stride
    seen: dict[tuple[int, int, int], int] = {}
    while True:
        rec = ex.step()
        if rec is None:
            ex.close()
            return
        exited = ex.stacks.exited[rec.warps]
        for w, m, e in zip(rec.warps.tolist(), rec.masks.tolist(), exited.tolist()):
            cap.steps.append(WarpStep(first + w // wpc, w % wpc, rec.block, int(m), int(e)))
        for a in rec.accesses:
            info = infos[a.instr]
            lanes = a.lanes.astype(np.int64)
            wl = lanes >> 5
            if a.space == "shared":
                off = a.offsets - (lanes // (wpc * 32)).astype(U64) * U64(stride)
            elif a.space == "global":
                off = a.offsets + U64(GLOBAL_BASE)
            else:
                off = a.offsets
            cuts = np.flatnonzero(np.diff(wl)) + 1
            for s0, s1 in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(wl)].tolist()):
                w = int(wl[s0])
                key = (w, a.instr, 0 if a.space == "shared" else 1)
                k = seen.get(key, 0)
                seen[key] = k + 1
                cap.accesses.append(WarpAccess(
                    a.instr, info.line, info.mnemonic, a.space, first + w // wpc, w % wpc, k,
                    (lanes[s0:s1] & 31), off[s0:s1].copy(), a.nbytes or info.access_bytes,
                    info.is_store if a.is_store is None else a.is_store, info.is_atomic, a.phase_lanes))
