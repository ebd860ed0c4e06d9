"""What a kernel's loops can depend on: the static half of runaway detection (`watchdog.py`).

For every natural loop of the kernel's PTX control-flow graph (a header and the blocks that
branch back to it, `isa.graphs.natural_loops`) this computes its *control slice*: the
instructions inside the loop whose results can decide where the loop's warps go and what
memory they touch. Its roots are
- the predicate of every conditional branch or exit inside the loop, and the guard of every
  instruction in the slice (which lanes compute it);
- the address of every load, store and atomic inside the loop, and every operand of an atomic
  (its effect on memory, and the old value it returns);
and it grows backwards along register definitions inside the loop (a register defined only
outside the loop does not change while a warp stays inside). The slice's registers defined
inside the loop and live at its header (`LoopFacts.slots`: values one iteration leaves to
the next; the rest is recomputed) and the values its loads read (`slice_loads`: global,
shared and local loads whose value enters the slice; param and const memory cannot change)
are all a warp's next iteration depends on: a warp that comes back to the header with the same
values in those registers, having read the same values from memory, takes the same path again.
A store's *value* is not in the slice, so a warp that spins on a flag while counting
(`while flag[0] == 0: n[0] += 1`) still repeats.

A loop whose slice reads the clock (`%clock`, `%clock64`, `%globaltimer` as an operand) or
that makes a system call (printf, malloc) is marked `analysable = False`: it never counts as
repeating.

For each conditional branch of a loop whose predicate is one `setp` comparison inside the loop
of integer *counters* (registers whose every definition in the loop is a `mov`, `add` or `sub`
of counters, loop invariants and immediates, or the old value of an `atom.add` of an invariant
at an invariant address) or loop invariants, `ExitTest` names the comparison and its operand
registers (or a value loaded inside the loop from a loop-invariant address: a bound the
compiler reloads because the loop stores to memory): a warp whose comparison operands advance
by the same step every iteration (`wraparound.py`) can be told whether the branch will ever
change its way before one of them wraps around. A value computed any other way (`abs`, `min`, a product of counters, a load)
may turn around, so its loop gets no such test.

Does not model: loops across device-function calls (numba-cuda inlines them; gpusim's
recursion support keeps its own stack in memory, whose loads are ordinary local loads).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isa import optable
from isa.graphs import dominators, natural_loops
from isa.program import Address, Imm, PredPair, Reg, Special, Vector, operand_regs
from isa.semantics.carry import implicit_operands

CLOCKS = frozenset({"%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"})
READ_ONLY_SPACES = frozenset({"param", "const"})


@dataclass(frozen=True)
class ExitTest:
    """A loop's conditional branch decided by one integer `setp` in the loop."""
    block: int                       # the block the branch ends
    setp: int                        # instruction index of the setp
    cmp: str                         # 'lt', 'le', 'gt', 'ge', 'eq', 'ne' (and 'lo', 'ls', 'hi', 'hs')
    ptx_type: str                    # the comparison's type, e.g. 's32', 'u64'
    a: int | None                    # register slots of the two operands (None: an immediate)
    b: int | None
    a_imm: int | None = None         # the immediate operand's value, where one is
    b_imm: int | None = None
    loads: bool = False              # an operand is loaded inside the loop from an invariant address


@dataclass
class Loop:
    header: int
    body: frozenset[int]
    slots: tuple[int, ...] = ()                  # slice registers defined inside the loop
    slice_loads: frozenset[int] = frozenset()    # instruction indices of the loads in the slice
    analysable: bool = True
    exit_tests: tuple[ExitTest, ...] = ()
    all_tests: bool = False                      # every conditional branch of the loop has an ExitTest
    fixed_stores: bool = False                   # every store and atomic of the loop has an invariant address


@dataclass
class LoopFacts:
    """The loops of a decoded kernel (module docstring), and lookup tables by block."""
    loops: list[Loop]
    in_loop: np.ndarray              # [loop, block + 1] bool (the last column: EXIT, in no loop)
    header_of: np.ndarray            # [block + 1] -> loop index of which it is the header, or -1
    slice_loads: frozenset[int] = field(default_factory=frozenset)   # over all loops


def _n_dest_operands(ins, spec, bound) -> int:
    """How many leading operands are destinations (as `decode.Decoder.ndests`)."""
    if ins.opcode in ("st", "red") or spec.kind in ("sync", "control") and not (
            ins.opcode == "bar" and "red" in ins.modifiers):
        return 0
    if ins.opcode == "bar" and "red" in ins.modifiers:
        return 1
    hidden = len(implicit_operands(ins)[0])
    want = len(bound.dst_types) - hidden
    n = k = 0
    while k < want and n < len(ins.operands):
        op = ins.operands[n]
        k += len(op.elems) if isinstance(op, Vector) else (
            (2 if op.second is not None else 1) if isinstance(op, PredPair) else 1)
        n += 1
    return n


@dataclass(frozen=True)
class _Instr:
    defs: tuple[str, ...]
    uses: tuple[str, ...]            # sources, address bases, guard
    roots: tuple[str, ...]           # uses that are slice roots (addresses; every operand of an atomic)
    is_slice_load: bool              # a load whose value can change (not param/const)
    clock: bool                      # reads a clock as an operand
    call: bool


def _facts(ins, kernel: str) -> _Instr:
    if ins.opcode == "call":
        return _Instr((), (), (), False, False, True)
    spec, bound = optable.bind(ins, kernel=kernel)
    nd = _n_dest_operands(ins, spec, bound)
    hidden_d, hidden_s = implicit_operands(ins)
    defs = operand_regs(*ins.operands[:nd]) + [r.name for r in hidden_d]
    srcs = operand_regs(*ins.operands[nd:]) + [r.name for r in hidden_s]
    guard = [ins.guard.reg.name] if ins.guard is not None else []
    roots: list[str] = []
    load = False
    if spec.kind == "mem":
        addr = next((op for op in ins.operands if isinstance(op, Address)), None)
        roots += operand_regs(addr) if addr is not None else []
        if ins.opcode in ("atom", "red"):
            roots += srcs
        load = ins.opcode in ("ld", "ldu") and ins.space not in READ_ONLY_SPACES
    clock = any(isinstance(op, Special) and op.name in CLOCKS for op in ins.operands)
    return _Instr(tuple(defs), tuple(srcs + guard), tuple(roots + (guard if roots else [])), load, clock, False)


def _live_at_header(dk, header: int, body: frozenset[int], facts: dict) -> set[str]:
    """Registers live on entry to the loop's header along paths inside the loop: each lane's
    values that the next iteration can read before writing them (a guarded definition does
    not kill). The rest of a slice is recomputed every iteration."""
    instrs = dk.kernel.instructions
    use: dict[int, set[str]] = {}
    kill: dict[int, set[str]] = {}
    for b in body:
        u: set[str] = set()
        k: set[str] = set()
        blk = dk.blocks[b]
        for i in range(blk.first, blk.last):
            f = facts[i]
            u |= {r for r in f.uses if r not in k}
            if instrs[i].guard is None:
                k |= set(f.defs)
        use[b], kill[b] = u, k
    live_in: dict[int, set[str]] = {b: set(use[b]) for b in body}
    changed = True
    while changed:
        changed = False
        for b in body:
            out = set().union(*(live_in[t] for t in dk.blocks[b].succs if t in body))
            new = use[b] | (out - kill[b])
            if new != live_in[b]:
                live_in[b] = new
                changed = True
    return live_in[header]


def _ok_counter_def(ins, counters: set[str], defs_in: dict[str, list[int]]) -> bool:
    """Whether `ins` keeps its destination a counter: an unguarded mov, add or sub (no carry,
    no saturation) of counters, loop invariants and immediates, or the old value of an
    integer atom.add at a loop-invariant address adding a loop-invariant value."""
    if ins.guard is not None:
        return False

    def plain(op) -> bool:
        return isinstance(op, Imm) or isinstance(op, Reg) and (op.name in counters or op.name not in defs_in)

    def invariant(op) -> bool:
        return isinstance(op, Imm) or isinstance(op, Reg) and op.name not in defs_in

    types, ops = ins.types, ins.operands
    integer = len(types) == 1 and types[0][0] in "sub"
    if ins.opcode == "mov" and len(ops) == 2:
        return plain(ops[1])
    if ins.opcode in ("add", "sub") and integer and len(ops) == 3 and not {"cc", "sat"} & set(ins.modifiers):
        return plain(ops[1]) and plain(ops[2])
    if ins.opcode == "atom" and "add" in ins.modifiers and integer and len(ops) == 3 and isinstance(ops[1], Address):
        base = ops[1].base
        return (not isinstance(base, Reg) or base.name not in defs_in) and invariant(ops[2])
    return False


def _counters(defs_in: dict[str, list[int]], instrs) -> set[str]:
    """Registers that advance by a fixed step per iteration along a fixed path (`ExitTest`):
    the greatest set whose every definition inside the loop keeps it a counter."""
    s = set(defs_in)
    while True:
        keep = {r for r in s if all(_ok_counter_def(instrs[i], s, defs_in) for i in defs_in[r])}
        if keep == s:
            return s
        s = keep


def _exit_test(dk, b: int, defs_in: dict[str, list[int]], counters: set[str]) -> ExitTest | None:
    """The integer setp deciding block b's branch, defined once inside the loop and comparing
    counters or loop invariants of its own width, or None."""
    instrs = dk.kernel.instructions
    pred = instrs[dk.blocks[b].last - 1].guard.reg.name
    sites = defs_in.get(pred, [])
    if len(sites) != 1:
        return None
    ins = instrs[sites[0]]
    if ins.opcode != "setp" or len(ins.operands) < 3 or ins.guard is not None:
        return None
    types = ins.types
    mods = [m for m in ins.modifiers if m in ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")]
    if len(types) != 1 or types[0][0] not in "sub" or len(mods) != 1 or len(ins.operands) != 3:
        return None
    if isinstance(ins.operands[0], PredPair) and ins.operands[0].second is not None:
        return None
    slots, imms = [], []
    loads = False
    for op in ins.operands[1:]:
        if isinstance(op, Reg):
            if op.name in defs_in and op.name not in counters:
                if not _invariant_load(defs_in[op.name], instrs, defs_in):
                    return None
                loads = True
            slot = dk.reg_slots[op.name]
            if dk.reg_dtypes[slot].itemsize * 8 != int(types[0][1:]):
                return None
            slots.append(slot)
            imms.append(None)
        elif isinstance(op, Imm) and isinstance(op.value, int):
            slots.append(None)
            imms.append(int(op.value))
        else:
            return None
    return ExitTest(b, sites[0], mods[0], types[0], slots[0], slots[1], imms[0], imms[1], loads)


def _invariant_base(op, defs_in: dict[str, list[int]]) -> bool:
    return isinstance(op, Address) and not (isinstance(op.base, Reg) and op.base.name in defs_in)


def _invariant_load(sites: list[int], instrs, defs_in: dict[str, list[int]]) -> bool:
    """A register defined in the loop only by one unguarded load from a loop-invariant address
    (a value another thread may change: `wraparound.Drift` checks nothing does)."""
    if len(sites) != 1:
        return False
    ins = instrs[sites[0]]
    return (ins.opcode in ("ld", "ldu") and ins.guard is None and ins.space not in READ_ONLY_SPACES
            and len(ins.operands) == 2 and isinstance(ins.operands[0], Reg)
            and _invariant_base(ins.operands[1], defs_in))


def loop_facts(dk) -> LoopFacts:
    """The loops of decoded kernel `dk` with their control slices (module docstring)."""
    cached = getattr(dk, "_loop_facts", None)
    if cached is not None:
        return cached
    blocks = dk.blocks
    nb = len(blocks)
    succs = [tuple(s for s in b.succs if 0 <= s < nb) for b in blocks]
    loops_by_header = natural_loops(succs, dominators(succs, 0))
    instrs = dk.kernel.instructions
    name = dk.kernel.name
    facts: dict[int, _Instr] = {}
    loops: list[Loop] = []
    all_loads: set[int] = set()
    for h in sorted(loops_by_header):
        body = loops_by_header[h]
        idx = [i for b in sorted(body) for i in range(blocks[b].first, blocks[b].last)]
        for i in idx:
            if i not in facts:
                facts[i] = _facts(instrs[i], name)
        defs_in: dict[str, list[int]] = {}
        for i in idx:
            for r in facts[i].defs:
                defs_in.setdefault(r, []).append(i)
        work = [r for i in idx for r in facts[i].roots]
        branch_blocks = [b for b in sorted(body) if blocks[b].guard is not None]
        work += [instrs[blocks[b].last - 1].guard.reg.name for b in branch_blocks]
        seen: set[str] = set()
        in_slice: set[int] = set()
        while work:
            r = work.pop()
            if r in seen:
                continue
            seen.add(r)
            for i in defs_in.get(r, ()):
                if i not in in_slice:
                    in_slice.add(i)
                    work.extend(facts[i].uses)
        analysable = not any(facts[i].call for i in idx) and not any(facts[i].clock for i in in_slice)
        carried = _live_at_header(dk, h, body, facts)
        slots = tuple(sorted({dk.reg_slots[r] for r in seen & carried if r in defs_in and r in dk.reg_slots}))
        loads = frozenset(i for i in in_slice if facts[i].is_slice_load) | frozenset(
            i for i in idx if instrs[i].opcode in ("atom", "red"))
        counters = _counters(defs_in, instrs)
        tests = [_exit_test(dk, b, defs_in, counters) for b in branch_blocks]
        fixed = all(_invariant_base(next((op for op in instrs[i].operands if isinstance(op, Address)), None), defs_in)
                    for i in idx if instrs[i].opcode in ("st", "atom", "red"))
        loops.append(Loop(h, body, slots, loads, analysable, tuple(t for t in tests if t is not None),
                          all(t is not None for t in tests), fixed))
        all_loads |= loads
    in_loop = np.zeros((len(loops), nb + 1), bool)
    header_of = np.full(nb + 1, -1, np.int64)
    for k, lp in enumerate(loops):
        in_loop[k, sorted(lp.body)] = True
        header_of[lp.header] = k
    out = LoopFacts(loops, in_loop, header_of, frozenset(all_loads))
    dk._loop_facts = out
    return out
