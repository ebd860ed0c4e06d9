"""Asynchronous copies and their completion: `cp.async` with commit/wait groups, `mbarrier`,
and the warp-level helpers Hopper code emits around them (`elect.sync`, `setmaxnreg`).

What it models (the meaning; `gpusim.functional.async_ops` carries it out):
- `cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size}` (cp-size 4, 8, 16;
  `.cg` only 16; an optional `.L2::64B/128B/256B` prefetch hint and `.L2::cache_hint` are hints):
  each thread copies cp-size bytes, the bytes past src-size being zero. The copy is performed
  when the thread's `cp.async.wait_group N` (all but the N most recent committed groups) or
  `cp.async.wait_all` completes it: the source is read at issue, the destination written at the
  wait. A read of the destination between the two sees the old bytes (the hardware may show
  either: a data race, which the racecheck sanitizer reports, `gpusim/sanitizer/racecheck.py`);
- `cp.async.bulk*` (TMA): `isa.semantics.bulk_copy`;
- `mbarrier.init / arrive[.expect_tx] / expect_tx / complete_tx / test_wait[.parity] /
  try_wait[.parity] / inval .shared{::cta,::cluster}.b64`: a phase counter in 8 bytes of shared
  memory (gpusim's encoding: bits 0-20 pending arrivals, 21-41 expected arrivals, 42-62 the
  transaction count as a signed 21-bit number (PTX: -(2^20 - 1) .. 2^20 - 1), 63 the phase
  parity). A phase completes when its pending arrivals reach 0 and its transaction count is 0,
  whichever comes last: an arrival, or a `complete_tx` (the bytes of an asynchronous copy
  landing, `mbarrier::complete_tx::bytes`). Then the parity flips, the pending count is
  re-armed with the expected count and the transaction count is 0. `try_wait.parity P` is true
  once the phase of parity P has completed (current parity != P); the state token `arrive`
  returns is the parity before the arrival. `.shared::cluster` addresses may name another CTA's
  barrier of the cluster (remote arrive, `mapa`); remote arrivals return no state (`_`);
- `elect.sync d|p, membermask`: the lowest active lane in membermask is elected;
- `setmaxnreg.{inc,dec}.sync.aligned.u32 N`: N in 24..256, a multiple of 8; no functional effect.

Not modelled (refused by name and line): `cp.async.mbarrier.arrive`, `cp.reduce.async.bulk`,
`mbarrier.pending_count`, `mbarrier.try_wait` with a suspend-time hint operand.

Sources: PTX ISA 9.0, 9.7.9.25 "Data Movement: cp.async" (and its commit_group, wait_group),
9.7.13.15 "mbarrier" (9.7.13.15.2 phase completion, tx-count range), 9.7.13.x "elect.sync",
9.7.19.x "setmaxnreg".
"""
from __future__ import annotations

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound, OpSpec
from isa.program import Address, Imm, Instruction
from isa.semantics import bulk_copy

HINTS = ("L2::64B", "L2::128B", "L2::256B", "L2::cache_hint")
MBAR_OPS = ("init", "arrive", "expect_tx", "complete_tx", "test_wait", "try_wait", "inval")
COUNT_MASK = (1 << 21) - 1


def _refuse(instr: Instruction, why: str):
    raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, reason=why)


def cp_async_form(instr: Instruction) -> tuple[str, int]:
    """('copy', cp-size) | ('commit', 0) | ('wait_group', N) | ('wait_all', 0)."""
    s = instr.suffixes
    if not s or s[0] != "async":
        _refuse(instr, "only cp.async is implemented")
    rest = [x for x in s[1:] if x not in HINTS]
    if rest in (["commit_group"], ["wait_all"]):
        return ("commit" if rest[0] == "commit_group" else "wait_all"), 0
    if rest == ["wait_group"]:
        n = instr.operands[0] if instr.operands else None
        if not isinstance(n, Imm) or int(n.value) < 0:
            _refuse(instr, "wait_group needs a constant group count")
        return "wait_group", int(n.value)
    if rest and rest[0] == "mbarrier":
        _refuse(instr, "cp.async.mbarrier.arrive is not implemented")
    if len(rest) != 3 or rest[0] not in ("ca", "cg") or rest[1] not in ("shared", "shared::cta") or rest[2] != "global":
        _refuse(instr, "expected cp.async.{ca,cg}.shared.global")
    if "L2::cache_hint" in s:
        _refuse(instr, "the cache-policy operand is not implemented")
    size = instr.operands[2] if len(instr.operands) > 2 else None
    if not isinstance(size, Imm) or int(size.value) not in (4, 8, 16) or (rest[0] == "cg" and int(size.value) != 16):
        _refuse(instr, "cp-size must be 4, 8 or 16 (.cg: 16)")
    return "copy", int(size.value)


def _bind_cp(instr: Instruction) -> Bound:
    if bulk_copy.is_bulk(instr):
        return bulk_copy.bind(instr)
    kind, _ = cp_async_form(instr)
    if kind != "copy":
        return Bound((), (), None, "sync")
    extra = ("u32",) if len(instr.operands) > 3 else ()
    return Bound((), ("u64", "u64", "u32") + extra, None, "ldst")


def mbarrier_form(instr: Instruction) -> tuple[str, bool]:
    """(operation, parity) of an mbarrier instruction."""
    s = [x for x in instr.suffixes if x not in ("release", "acquire", "relaxed", "cta", "cluster", "b64")]
    s = [x for x in s if x not in ("shared", "shared::cta", "shared::cluster")]
    if not s or s[0] not in MBAR_OPS:
        _refuse(instr, "this mbarrier operation is not implemented")
    op, rest = s[0], s[1:]
    if op == "arrive" and rest == ["expect_tx"]:
        return "arrive_expect_tx", False
    if op == "try_wait" and len([o for o in instr.operands if not isinstance(o, Address)]) > 2:
        _refuse(instr, "try_wait with a suspend-time hint is not implemented")
    parity = rest == ["parity"] and op in ("test_wait", "try_wait")
    if rest and not parity:
        _refuse(instr, "this mbarrier variant is not implemented")
    if "b64" not in instr.suffixes:
        _refuse(instr, "mbarrier objects are .b64")
    return op, parity


def _signed21(v: int) -> int:
    v &= COUNT_MASK
    return v - (1 << 21) if v >> 20 else v


def mbarrier_update(word: int, what: str, args: list[int]) -> tuple[int, int]:
    """(new 64-bit state, result) of mbarrier operation `what` on state `word` (module docstring):
    the result is the state token of an arrive, the completion bit of a wait, 0 otherwise."""
    pend, exp = word & COUNT_MASK, (word >> 21) & COUNT_MASK
    tx, ph = _signed21(word >> 42), word >> 63
    if what in ("test_wait", "try_wait"):
        return word, int(ph != args[0])
    if what == "init":
        pend, exp, tx, ph = args[0], args[0], 0, 0
    elif what == "inval":
        pend = exp = tx = ph = 0
    token = 0
    if what in ("arrive", "arrive_expect_tx", "expect_tx", "complete_tx"):
        token = ph << 63
        if what in ("expect_tx", "arrive_expect_tx"):
            tx += args[0]
        elif what == "complete_tx":
            tx -= args[0]
        if what == "arrive":
            pend -= args[0] if args else 1
        elif what == "arrive_expect_tx":
            pend -= 1
        if pend <= 0 and tx == 0:
            ph ^= 1
            pend = exp
    new = (pend & COUNT_MASK) | (exp << 21) | ((tx & COUNT_MASK) << 42) | (ph << 63)
    return new, token


def _bind_mbarrier(instr: Instruction) -> Bound:
    mbarrier_form(instr)
    return Bound((), (), None, "sync")


def _bind_elect(instr: Instruction) -> Bound:
    if instr.suffixes != ("sync",):
        _refuse(instr, "expected elect.sync")
    return Bound(("u32", "pred"), ("u32",), None, "misc")


def _bind_setmaxnreg(instr: Instruction) -> Bound:
    s = instr.suffixes
    n = instr.operands[0] if instr.operands else None
    if len(s) != 4 or s[0] not in ("inc", "dec") or s[1:] != ("sync", "aligned", "u32"):
        _refuse(instr, "expected setmaxnreg.{inc,dec}.sync.aligned.u32")
    if not isinstance(n, Imm) or not (24 <= int(n.value) <= 256) or int(n.value) % 8:
        _refuse(instr, "the register count must be a constant in 24..256, a multiple of 8")
    return Bound((), (), None, "misc")


ENTRIES = [
    OpSpec("cp", "async", _bind_cp, "cp.async copy global -> shared with commit/wait groups; bulk copies (TMA)"),
    OpSpec("mbarrier", "async", _bind_mbarrier, "phase barrier object in shared memory"),
    OpSpec("elect", "async", _bind_elect, "elect one leader lane of a warp"),
    OpSpec("setmaxnreg", "async", _bind_setmaxnreg, "warpgroup register reallocation hint (no functional effect)"),
]
