"""What the timing model needs to know about each SASS instruction before it runs, and
the issue segments a warp's executed PTX path turns into.

For every SASS instruction of a kernel (`gpusim.frontend.sass`): its pipe, how its
result becomes available (the pipe's fixed latency, the MIO path of shared memory and
shuffles, or the L1TEX path of global/local memory and atomics), which registers it
writes and reads (small integers, for the scoreboard), and whether it is a CTA barrier.
No hardware numbers live here (they come from the GPUSpec).

Segments (`IssueProgram.segments`) are what one SASS visit issues: the region of a PTX
block (`SassMap.regions`), or one SASS block of a loop ptxas unrolled
(`SassMap.unrolled`), see `issue_stream.py`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
import dataclasses

import numpy as np

from gpusim.timing import async_groups, tensor_pipe
from gpusim.frontend.sass.opcodes import classify as sass_op
from gpusim.frontend.sass.operands import register_operands

# How a result becomes ready; also names the stall reason of a warp waiting on it
# (Nsight Compute warp states): fixed latency -> 'wait', shared/MIO -> 'short_scoreboard',
# L1TEX (global, local, atomics) -> 'long_scoreboard'.
FIXED, SHARED, GLOBAL = 0, 1, 2
DEP_STALL = {FIXED: "wait", SHARED: "short_scoreboard", GLOBAL: "long_scoreboard"}
PIPE_NAMES = ("alu", "fmaheavy", "fmalite", "fp16", "fp64", "xu", "lsu", "adu", "cbu", "uniform", "tensor", "tex")


# A constant-cache line is ((bank << 32) + offset) >> log2(line bytes): bank 0's (offsets below 64 KiB) are below
# this, every other bank's at or above 2^32 >> 12 (lines of at most 4 KiB, SMSpec)
BANK0_LINE_LIMIT = 1 << 16

@dataclass(frozen=True, slots=True)
class StaticInstr:
    index: int                      # SASS instruction index (stall attribution, payload key)
    unit: tuple[str, ...]           # the physical pipes it may issue to (the first free one)
    result: int                     # FIXED / SHARED / GLOBAL
    dsts: tuple[int, ...]
    srcs: tuple[int, ...]
    is_store: bool
    is_atomic: bool
    is_barrier: bool
    latency: int = 4                # fixed latency (FIXED results; MIO results that are not shared memory)
    iline: int = 0                  # instruction-cache line (byte offset >> line shift)
    const_lines: tuple[int, ...] = ()   # constant-cache lines of its c[bank][offset] operands
    const_load: bool = False        # an indexed constant load (LDC with a register index): lines from its payload
    aggregated: bool = False        # a warp-aggregated atomic: one leader lane's operation per address
    float_atomic: bool = False      # a floating-point read-modify-write (REDG/ATOMG .F32/.F64/.F16x2/.BF16x2)
    cas_loop: bool = False          # ATOMS.CAST: a shared compare-and-swap loop's; its payload is the loop's rounds
    is_local: bool = False          # LDL/STL: the warp's local frame, relocated to its SM slot (sm.py)
    interval: float = -1.0          # cycles it keeps its pipe busy; < 0: the pipe's issue interval (tensor_pipe.py)
    # group scoreboards (async_groups.py): the counter it joins, commits, waits on (-1: none), the groups the
    # wait leaves incomplete; cycles from issue to completion when the issue loop decides it (HGMMA; 0 none)
    group_join: int = -1
    group_commit: int = -1
    group_wait: int = -1
    group_wait_pending: int = 0
    async_latency: int = 0
    shared_operand_cycles: float = 0.0  # cycles its operands hold the SM's shared-memory path (wgmma from shared)
    async_copy: bool = False        # LDGSTS: global -> shared through the L1, no register written (memory/l1.py copy_in)
    bypass_l1: bool = False         # past the L1, nothing allocated: an LDGSTS.BYPASS (cp.async.cg), or a load coherent
    #                                 at GPU or system scope (LDG.E.STRONG.GPU / .SYS: ld.global.cg, ld.relaxed.gpu,
    #                                 volatile), which the L1, not coherent across SMs, may not answer
    tma: bool = False               # a bulk / tensor copy (UTMALDG, UTMASTG, UBLKCP, UTMAPF): the SM's TMA unit (tma.py)
    mbarrier: bool = False          # SYNCS: an mbarrier operation (mbarrier.py), its result when the unit says
    stall: int = 0                  # ptxas' stall count (control bits): cycles before the warp's next issue; 0 unknown
    # derived, for the SM's issue loop: srcs + dsts (the scoreboard's); unit[0]; the other pipes
    regs: tuple[int, ...] = field(init=False, repr=False, compare=False)
    unit0: str = field(init=False, repr=False, compare=False)
    unit_rest: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regs", self.srcs + self.dsts)
        object.__setattr__(self, "unit0", self.unit[0])
        object.__setattr__(self, "unit_rest", self.unit[1:])


@dataclass(frozen=True)
class IssueProgram:
    """A kernel's SASS as the SM issues it."""
    segments: tuple[tuple[StaticInstr, ...], ...]
    region_segment: dict[int, int]          # PTX block -> segment of its region
    block_segment: dict[int, int]           # SASS block of an unrolled loop -> its segment
    owner: np.ndarray                       # SASS instruction -> PTX instruction its stalls are reported on
    n_sass: int

    @cached_property
    def table(self) -> IssueTable:
        """The segments as flat arrays, built once per program (the points of a sweep share it)."""
        return _issue_table(self.segments)


@dataclass(frozen=True, eq=False)
class IssueTable:
    """An IssueProgram's instructions, segment after segment, as the compiled issue loop reads
    them (`issue_loop.py`): `ti` one row per instruction (`issue_loop.T_*` columns; its
    pipes, registers written and read, constant-cache lines as offsets into `tx`)."""
    ti: np.ndarray                          # int64 [instruction, T_COLS]
    tx: np.ndarray                          # int64: the lists
    ts: np.ndarray                          # int64: segment -> its first row; [-1]: the number of rows
    flat: tuple                             # row -> StaticInstr
    const_slots: dict                       # constant-cache line -> its slot in the cache's array (fetch.py)
    ilines: int                             # instruction-cache lines: highest line + 1
    seg_shared: list                        # segment -> its shared-memory accesses: (T_SHQ place, SASS index)
    intervals: tuple = ()                   # instructions' own constants (issue intervals, shared-path cycles):
    #                                         F[issue_loop.F_INTERVAL + len(PIPE_NAMES) + i] (T_IVL, T_SHC name the slot)


def _issue_table(segments) -> IssueTable:
    from gpusim.timing import issue_loop as L  # a cycle: issue_loop imports this module
    flat = tuple(s for seg in segments for s in seg)
    seg_start = [0]
    for seg in segments:
        seg_start.append(seg_start[-1] + len(seg))
    const_slots: dict = {}
    for bank0 in (True, False):              # bank 0's lines first (fetch.ReadOnlyCache: its first slots)
        for s in flat:
            for line in s.const_lines:
                if (line < BANK0_LINE_LIMIT) == bank0:
                    const_slots.setdefault(line, len(const_slots))
    ti = np.zeros((len(flat), L.T_COLS), dtype=np.int64)
    ti[:, L.T_SHQ] = -1
    seg_shared = []
    for a, seg in enumerate(segments):
        mine = [r for r, s in enumerate(seg) if s.result == SHARED and not s.const_load and not s.cas_loop]
        for q, r in enumerate(mine):
            ti[seg_start[a] + r, L.T_SHQ] = q
        seg_shared.append(tuple((q, seg[r].index) for q, r in enumerate(mine)))
    tx: list[int] = []
    pipe = {p: i for i, p in enumerate(PIPE_NAMES)}
    intervals = tuple(sorted({s.interval for s in flat if s.interval >= 0}
                             | {s.shared_operand_cycles for s in flat if s.shared_operand_cycles > 0}))
    slot = {v: L.F_INTERVAL + len(PIPE_NAMES) + i for i, v in enumerate(intervals)}
    for r, s in enumerate(flat):
        row = ti[r]
        row[L.T_SASS], row[L.T_RESULT], row[L.T_LAT] = s.index, s.result, s.latency
        row[L.T_ILINE], row[L.T_BAR] = s.iline, s.is_barrier
        row[L.T_IVL] = slot.get(s.interval, -1) if s.interval >= 0 else -1
        row[L.T_AJOIN], row[L.T_ACOMMIT], row[L.T_AWAIT] = s.group_join, s.group_commit, s.group_wait
        row[L.T_AWAITN], row[L.T_ALAT] = s.group_wait_pending, s.async_latency
        row[L.T_SHC] = slot[s.shared_operand_cycles] if s.shared_operand_cycles > 0 else -1
        row[L.T_STALL] = s.stall
        for n_col, o_col, items in ((L.T_NUNIT, L.T_UNIT, [pipe[u] for u in s.unit]), (L.T_NREG, L.T_REG, s.regs),
                                    (L.T_NDST, L.T_DST, s.dsts),
                                    (L.T_NCONST, L.T_CONST, [const_slots[c] for c in s.const_lines])):
            row[n_col], row[o_col] = len(items), len(tx)
            tx.extend(items)
    return IssueTable(ti, np.array(tx + [0], dtype=np.int64), np.array(seg_start, dtype=np.int64), flat,
                      const_slots,
                      max((s.iline for s in flat), default=0) + 1, seg_shared, intervals)


_PROGRAMS: dict = {}


def issue_program(smap, decoded, classify, spec=None) -> IssueProgram:
    """Segments for a `SassMap` of `decoded` (the functional core's kernel);
    `classify(i, instr, ptx_info) -> StaticInstr` is the architecture's opcode table;
    `spec` (a GPUSpec) sets the instruction and constant cache line sizes. Kept in memory per
    (map, kernel, table, line sizes, whether ptxas' stall counts are honoured): the points of a sweep share one kernel's program
    (`sass_classifier` hands out one table per architecture and pipes)."""
    ishift = (spec.sm.instruction_cache_line_bytes if spec else 128).bit_length() - 1
    cshift = (spec.sm.constant_cache_line_bytes if spec else 64).bit_length() - 1
    stall_counts = spec.sm.stall_counts_from_compiler if spec else True
    key = (id(smap), id(decoded), id(classify), ishift, cshift, stall_counts)
    hit = _PROGRAMS.get(key)
    if hit is not None and hit[0] is smap and hit[1] is decoded and hit[2] is classify:
        return hit[3]
    program = _issue_program(smap, decoded, classify, ishift, cshift, stall_counts)
    if len(_PROGRAMS) >= 32:
        _PROGRAMS.clear()
    _PROGRAMS[key] = (smap, decoded, classify, program)    # holding them keeps their ids unique
    return program


def _issue_program(smap, decoded, classify, ishift: int, cshift: int, stall_counts: bool) -> IssueProgram:

    from gpusim.timing.fetch import constant_operands  # a cycle: fetch imports issue_loop, which imports this module
    ins = smap.listing.instructions
    infos = decoded.infos
    statics = []
    for i, x in enumerate(ins):
        o = smap.origin[i]
        st = classify(i, x, infos[o] if o is not None else None)
        consts = constant_operands(x.operands)
        statics.append(dataclasses.replace(
            st, iline=x.offset >> ishift,
            const_lines=tuple(dict.fromkeys(((b << 32) + off) >> cshift for b, off in consts)),
            const_load=x.base == "LDC" and not consts,
            stall=x.control.stall_cycles if x.control is not None and stall_counts else 0,
            aggregated=st.is_atomic and _leader_only(ins, smap.cfg.blocks[smap.cfg.block_of[i]].start, i)))
    segments: list[tuple[StaticInstr, ...]] = []
    region_segment = {}
    for h, region in smap.regions.items():
        region_segment[h] = len(segments)
        segments.append(tuple(statics[i] for i in region))
    block_segment = {}
    blocks = smap.cfg.blocks
    for h, loop in smap.unrolled.items():
        for k in loop.content:
            block_segment[k] = len(segments)
            segments.append(tuple(statics[i] for i in range(blocks[k].start, blocks[k].end)))
    return IssueProgram(tuple(segments), region_segment, block_segment, _owners(smap, decoded), len(ins))


def _leader_only(ins, start: int, i: int) -> bool:
    """Whether atomic `ins[i]` is ptxas's warp aggregation: in its block a vote of the
    active lanes, a find-leading-one of it, and the atomic guarded (the leader alone
    performs the warp's combined operation, e.g. one add of the lane count)."""
    if ins[i].predicate is None:
        return False
    seen = {x.base for x in ins[max(start, i - 12):i]}
    return bool(seen & {"VOTE", "VOTEU"}) and bool(seen & {"FLO", "UFLO"})


def _owners(smap, decoded) -> np.ndarray:
    """The PTX instruction each SASS instruction's stalls are reported on: its origin;
    for a subroutine or an instruction without one, the first instruction of the PTX
    block whose region issues it."""
    n = len(smap.listing.instructions)
    owner = np.array([o if o is not None else -1 for o in smap.origin], dtype=np.int64)
    for h, region in smap.regions.items():
        first = decoded.blocks[h].first
        for i in region:
            if owner[i] < 0:
                owner[i] = first
    for h in smap.unrolled:
        first = decoded.blocks[h].first
        owner[(owner < 0) & (np.array([smap.home[smap.cfg.block_of[i]] == h for i in range(n)]))] = first
    owner[owner < 0] = 0
    return owner


# ---------------------------------------------------------------------------- the opcode table, timed
def unknown_sass(instructions, cc) -> tuple[int, ...]:
    """Indices of the SASS `instructions` the opcode table (`frontend/sass/opcodes.py`) has no
    entry for on compute capability `cc`: what the timing model would only estimate."""
    return tuple(i for i, x in enumerate(instructions) if not sass_op(x, cc).known)


def unknown_sass_message(kernel: str, instructions, unknown, cc) -> str:
    """One line naming the first unknown opcode of `kernel`, where it is, and the others."""
    x = instructions[unknown[0]]
    where = f"line {x.source_line} of {x.source_file.rsplit('/', 1)[-1]}, " if x.source_line and x.source_file else ""
    others = sorted({instructions[i].base for i in unknown} - {x.base})
    more = f" (also {', '.join(others)})" if others else ""
    return (f"kernel {kernel}: SASS opcode {x.base} ({where}SASS offset {x.offset:#06x}: {x.text!r}){more} has no "
            f"entry in gpusim's opcode table for sm_{cc[0]}{cc[1]} (gpusim/frontend/sass/opcodes.py), so its pipe "
            f"and latency are unknown; TimingOptions(unknown_sass='warn') or gpusim run --unknown-sass warn times "
            f"it as a generic ALU instruction and counts it (gpusim__sass_estimated_inst.sum)")


_DEPENDENCY = {"fixed": FIXED, "mio": SHARED, "l1tex": GLOBAL}
# the type modifiers of a floating-point atomic's SASS opcode (REDG.E.ADD.F32.FTZ.RN.STRONG.GPU)
_FLOAT_TYPES = frozenset({"F32", "F64", "F16x2", "BF16x2", "F16", "BF16"})


_CLASSIFIERS: dict = {}


def sass_classifier(spec):
    """`classify(i, instr, ptx_info) -> StaticInstr` for `spec`'s architecture: the pipe from
    `gpusim.frontend.sass.opcodes`, registers from `operands`, the pipe's latency (tensor and
    async-copy instructions: their own interval and latency, `tensor_pipe.py`). An
    instruction issues to the first free of its physical pipes: FP32 to fmalite or
    fmaheavy (only fmaheavy where fmalite's interval is 0), half precision to the fp16
    pipe or, where it has none (interval 0), to the FMA pipes with the fp16 latency.
    An IMAD.WIDE(.U32) (a 64-bit result) keeps its pipe `imad_wide_issue_interval_cycles`, and its
    result comes that much later than the pipe's interval after the pipe's latency (the second pass).
    Where `fp64_shares_alu_dispatch`, an FP64 instruction holds the alu pipe's dispatch for
    the fp64 interval (the two take turns), with the fp64 latency.
    One function per (architecture, pipes): what it reads of `spec`."""
    key = (spec.compute_capability, spec.sm.pipes, spec.tensor, spec.sm.sub_partitions)
    try:
        fn = _CLASSIFIERS.get(key)
    except TypeError:                                  # unhashable pipes: a table of its own
        return _classifier(*key)
    if fn is None:
        if len(_CLASSIFIERS) >= 32:
            _CLASSIFIERS.clear()
        fn = _CLASSIFIERS[key] = _classifier(*key)
    return fn


_WIDE_IMAD = frozenset(("IMAD", "IMUL"))        # IMAD.WIDE(.U32), IMUL.WIDE(.U32): PipesSpec.imad_wide_issue_interval_cycles


def _classifier(cc, pipes, tensor, nsp):
    fp32 = tuple(p for p in ("fmalite", "fmaheavy") if pipes.of(p).issue_interval_cycles > 0)
    fp16 = ("fp16",) if pipes.fp16.issue_interval_cycles > 0 else fp32
    route = {"fma": fp32, "fp16": fp16}

    def classify(i: int, x, ptx_info) -> StaticInstr:
        op = sass_op(x, cc)
        issue = route.get(op.pipe, (op.pipe,))
        result = _DEPENDENCY[op.dependency]
        if op.memory == "generic" and ptx_info is not None and ptx_info.space == "shared":
            result = SHARED                          # a generic access the functional core found in shared memory
        writes, reads = register_operands(x)
        own = tensor_pipe.timing(x, tensor, nsp, pipes.lsu.issue_interval_cycles)
        latency = pipes.of("fp16" if op.pipe == "fp16" else issue[0]).latency_cycles if op.pipe != "tensor" else 1
        join, commit, wait, pending = async_groups.role(x)
        tma, mbar = x.base in tensor_pipe.TMA, x.base == "SYNCS"
        if mbar:
            result = GLOBAL                          # a wait's predicate: when its phase completes
        async_latency, shared_cycles = 0, 0.0
        if own is not None and own[1] is not None:
            if join == async_groups.WGMMA:           # completes on its own; its accumulators chain at once
                async_latency = math.ceil(own[1])
                shared_cycles = tensor_pipe.shared_operand_cycles(x, tensor)
            else:
                latency = math.ceil(own[1])
        copy = join == async_groups.LDGSTS
        parts = x.opcode.split(".")[1:]
        coherent = (not copy and not op.is_store and not op.is_atomic and op.memory in ("global", "generic")
                    and "STRONG" in parts and ("GPU" in parts or "SYS" in parts))
        if own is None and x.base in _WIDE_IMAD and "WIDE" in parts:
            own = (pipes.imad_wide_issue_interval_cycles, None)      # a 64-bit result: two passes of its pipe,
            latency += math.ceil(max(0.0, own[0] - pipes.of(issue[0]).issue_interval_cycles))   # the second later
        if op.pipe == "fp64" and pipes.fp64_shares_alu_dispatch:
            issue, own = ("alu",), (pipes.fp64.issue_interval_cycles, None)   # one dispatch for both: takes turns
        return StaticInstr(index=i, unit=issue, result=result, dsts=writes, srcs=reads,
                           is_store=(op.is_store and not copy and not tma) or op.is_atomic, is_atomic=op.is_atomic,
                           is_barrier=op.is_barrier, latency=latency, is_local=op.memory == "local",
                           float_atomic=op.is_atomic and not _FLOAT_TYPES.isdisjoint(x.opcode.split(".")[1:]),
                           cas_loop=op.is_atomic and x.opcode.startswith("ATOMS.") and "CAST" in x.opcode.split("."),
                           interval=-1.0 if own is None else float(own[0]),
                           group_join=join, group_commit=commit, group_wait=wait, group_wait_pending=pending,
                           async_latency=async_latency, shared_operand_cycles=shared_cycles, async_copy=copy,
                           bypass_l1=(copy and "BYPASS" in parts) or coherent, tma=tma, mbarrier=mbar)
    return classify
