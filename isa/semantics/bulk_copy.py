"""Bulk asynchronous copies (the Tensor Memory Accelerator, TMA): `cp.async.bulk` and
`cp.async.bulk.tensor`, with their completion mechanisms.

What it models (the meaning; `gpusim.functional.bulk_ops` carries it out):
- `cp.async.bulk.shared::{cluster,cta}.global.mbarrier::complete_tx::bytes{.multicast::cluster}
  {.L2::cache_hint} [dst], [src], size, [mbar]{, ctaMask}{, policy}`: size bytes (a multiple of
  16, addresses 16-byte aligned) from global to shared memory; the mbarrier at `mbar` (in the
  CTA that receives the bytes) gets a `complete_tx` of size bytes (`isa.semantics.async_copy`).
  With `.multicast::cluster` the bytes and the complete_tx go to the same offsets in every CTA
  of the cluster whose rank is set in the 16-bit ctaMask.
- `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size,
  [mbar]`: from the executing CTA's shared memory to a CTA of its cluster (`mapa` addresses).
- `cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint} [dst], [src], size{, policy}`:
  shared to global, completed by the bulk-group mechanism: `cp.async.bulk.commit_group` closes
  the thread's group, `cp.async.bulk.wait_group{.read} N` waits until at most N groups are
  pending.
- `cp.async.bulk.tensor.{1..5}d.shared::{cluster,cta}.global{.tile}.mbarrier::complete_tx::bytes
  {.multicast::cluster}{.L2::cache_hint} [dst], [tensorMap, {c0, ...}], [mbar]{, ctaMask}
  {, policy}`: the box of the tensor map (`isa.semantics.tensor_map`) at signed coordinates
  c0.. into shared memory at dst (128-byte aligned), swizzled as the map says, out-of-bounds
  elements filled; complete_tx of the box's bytes.
- `cp.async.bulk.tensor.{1..5}d.global.shared::cta{.tile}.bulk_group{.L2::cache_hint}
  [tensorMap, {c0, ...}], [src]{, policy}`: the box from shared memory back to the tensor; its
  out-of-bounds elements are not written.
- `cp.async.bulk.prefetch{.tensor.Nd}.L2.global...`: an L2 prefetch, no architectural effect.
The tensor map operand is a generic address of a `.param` (a `__grid_constant__` parameter),
`.const` or `.global` map, 64-byte aligned. The cache-policy operand and L2 hints change no
value.

Not modelled (refused by name and line): `cp.reduce.async.bulk*`, im2col and gather4 load modes,
`.cta_group`, the `.cp_mask` byte mask (sm_100), `tensormap.replace` / `prefetch.tensormap`.

Sources: PTX ISA 9.0, 9.7.9.25.4 "cp.async.bulk", 9.7.9.25.5 "cp.async.bulk.tensor",
9.7.9.25.6-7 "cp.async.bulk.commit_group / wait_group", 5.5 "Tensors".
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.errors import UnsupportedInstruction
from isa.opcodes import Bound
from isa.program import Address, Instruction, TensorRef

HINTS = ("L2::cache_hint", "tile")
COMPLETE_TX = "mbarrier::complete_tx::bytes"
MULTICAST = "multicast::cluster"


@dataclass(frozen=True)
class BulkForm:
    kind: str                # 'g2s' (global -> shared), 's2s' (shared -> cluster shared), 's2g', 'prefetch',
    #                          'commit', 'wait'
    rank: int = 0            # tensor copies: 1..5; 0 for plain bulk copies
    multicast: bool = False
    hint: bool = False       # a trailing cache-policy operand
    n: int = 0               # wait_group: groups that may stay pending
    read: bool = False       # wait_group.read: only the source reads must be done


def _refuse(instr: Instruction, why: str):
    raise UnsupportedInstruction(instr.mnemonic, ptx_line=instr.ptx_line, reason=why)


def is_bulk(instr: Instruction) -> bool:
    return instr.opcode == "cp" and instr.suffixes[:2] == ("async", "bulk")


def bulk_form(instr: Instruction) -> BulkForm:
    """The form of a `cp.async.bulk...` instruction, or UnsupportedInstruction."""
    s = list(instr.suffixes[2:])
    ops = instr.operands
    if s == ["commit_group"]:
        return BulkForm("commit")
    if s in (["wait_group"], ["wait_group", "read"]):
        n = ops[0] if ops else None
        if n is None or not hasattr(n, "value") or not isinstance(n.value, int) or n.value < 0:
            _refuse(instr, "wait_group needs a constant group count")
        return BulkForm("wait", n=int(n.value), read=len(s) == 2)
    hint = "L2::cache_hint" in s
    rank = 0
    if s[:1] == ["prefetch"]:
        return BulkForm("prefetch")
    if s[:1] == ["tensor"]:
        if len(s) < 2 or s[1] not in ("1d", "2d", "3d", "4d", "5d"):
            _refuse(instr, "expected cp.async.bulk.tensor.{1..5}d")
        rank = int(s[1][0])
        s = s[2:]
        for mode in ("im2col", "im2col::w", "im2col::w::128", "tile::gather4", "tile::scatter4", "im2col_no_offs"):
            if mode in s:
                _refuse(instr, f"the .{mode} load mode is not implemented (only .tile)")
        if s[:1] == ["prefetch"]:
            return BulkForm("prefetch", rank)
    for bad in ("cta_group::1", "cta_group::2", "cp_mask"):
        if bad in s:
            _refuse(instr, f".{bad} (sm_100) is not implemented")
    multicast = MULTICAST in s
    core = [x for x in s if x not in HINTS and x != MULTICAST]
    if core in (["shared::cluster", "global", COMPLETE_TX], ["shared::cta", "global", COMPLETE_TX]):
        kind = "g2s"
    elif core == ["shared::cluster", "shared::cta", COMPLETE_TX] and not rank:
        kind = "s2s"
    elif core == ["global", "shared::cta", "bulk_group"]:
        kind = "s2g"
    else:
        _refuse(instr, "expected a global <-> shared bulk copy with mbarrier::complete_tx::bytes (to shared) or "
                       "bulk_group (to global)")
    if multicast and kind != "g2s":
        _refuse(instr, ".multicast::cluster is for copies from global memory")
    f = BulkForm(kind, rank, multicast, hint)
    _check_operands(instr, f)
    return f


def _check_operands(instr: Instruction, f: BulkForm) -> None:
    ops = list(instr.operands)
    extra = int(f.multicast) + int(f.hint)
    if f.rank:
        want = (Address, TensorRef, Address) if f.kind == "g2s" else (TensorRef, Address)
        if len(ops) != len(want) + extra or not all(isinstance(o, t) for o, t in zip(ops, want)):
            _refuse(instr, "expected [dst], [tensorMap, {coords}], [mbar]" if f.kind == "g2s" else
                    "expected [tensorMap, {coords}], [src]")
        ref = ops[1] if f.kind == "g2s" else ops[0]
        if len(ref.coords) != f.rank:
            _refuse(instr, f"a .{f.rank}d copy takes {f.rank} coordinates, not {len(ref.coords)}")
        return
    n_addr = 3 if f.kind in ("g2s", "s2s") else 2
    if len(ops) != n_addr + 1 + extra or not all(isinstance(o, Address) for o in ops[:2]) or \
            (n_addr == 3 and not isinstance(ops[3], Address)):
        _refuse(instr, "expected [dst], [src], size, [mbar]" if n_addr == 3 else "expected [dst], [src], size")


def bind(instr: Instruction) -> Bound:
    f = bulk_form(instr)
    if f.kind in ("commit", "wait"):
        return Bound((), ("u32",) * (f.kind == "wait"), None, "sync")
    return Bound((), (), None, "ldst")
