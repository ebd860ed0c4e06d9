"""The tensor pipe and the asynchronous copies, as the issue loop sees them: for one SASS
instruction, how long it keeps its pipe of a sub-partition busy (its issue interval) and
when its result is ready (its latency), from the GPU's `TensorSpec` (`specs/tensor.py`).

- Warp-level MMA (`HMMA`, `IMMA`, `DMMA`, `BMMA`; `mma.sync`): the shape in the opcode
  (`HMMA.16816.F32.BF16`: m16 n8 k16) gives 2*m*n*k operations for the warp, which the
  sub-partition's tensor core performs at `rate / sub_partitions` per cycle: that is the
  interval. Latency: `mma_latency_cycles` is that of HMMA m16n8k16 FP16; another shape or
  type takes its own interval longer or shorter (latency = mma_latency - interval(m16n8k16
  FP16) + its interval, at least its interval).
- Warpgroup MMA (`HGMMA`, `IGMMA`, `QGMMA`, `BGMMA`; `wgmma.mma_async`, sm_90): the four
  warps of a warpgroup each issue it on their sub-partition and each does a quarter of
  the 2*m*n*k operations; the operands read from shared memory (B always; A when the
  instruction names a descriptor, `gdesc`, instead of registers) are a quarter per warp
  too, through the sub-partition's share of `shared_operand_bytes_per_cycle_per_sm`. The
  interval is the longer of the two; the latency is `wgmma_latency_cycles` for 64x128x16
  FP16, scaled by the interval as above (against the reference shape's arithmetic alone, so
  operands that arrive slower than the arithmetic delay the result by as much). wgmma is
  asynchronous: chained ones on one accumulator issue an interval apart, and the latency is
  when the warp's group completes (`async_groups.py`); each also holds the SM's shared-memory
  path for its operand bytes at `shared_operand_bytes_per_cycle_per_sm` (`shared_operand_cycles`),
  so ldmatrix, LDS/STS and other warpgroups' operands compete with it.
- `LDSM`/`STSM` (`ldmatrix`/`stmatrix`): 128 bytes per 8x8 b16 matrix (.x1, .x2, .x4 in
  the opcode: `LDSM.16.M88.4`) on the LSU, spaced by their bytes through the SM's whole
  operand bandwidth (at least the LSU's own interval): the sub-partitions' LDSMs meet on the
  SM's one shared-memory data path (their wavefronts, `issue_loop.shared_access`), not each
  in a quarter of it. Measured (data/measurements/sass_stalls_h100, cuda_mma_double/n1024 and
  cuda_mma_single/n512 on the H100): no mio_throttle (0.1% and 0% of the stall samples)
  where a quarter share per sub-partition throttled 12-16%; the LDSMs' wait shows as the
  consuming HMMA's short_scoreboard (23% and 13%).
- TMA requests (`UTMALDG`, `UTMASTG`, `UTMAPF`, `UBLKCP`...): the LSU's own issue; the SM's one
  TMA unit takes one every `tma_request_interval_cycles` (`tma.py`).

The type of an instruction is read from its modifiers: TF32, E4M3/E5M2 (FP8), S8/U8 and
S4/U4 (integer; INT4 counts twice the INT8 rate, as A100's), F64 (DMMA); everything else
of HMMA/HGMMA is FP16/BF16. A type whose rate is 0 on the spec is refused (ConfigError).

Does not model: register-bank and operand-collector conflicts of mma.sync, sparse (2:4)
instructions, the B operand shared by a warpgroup's four warps (each warp's quarter of the
bytes is charged), Volta's HMMA.884 steps (each step is timed as a whole m8n8k4).

Sources: see `specs/tensor.py` and the presets' [TC-WP], [TC-LAT]; PTX ISA "Warp Level
Matrix Multiply-Accumulate Instructions" and "Asynchronous Warpgroup Level Matrix
Multiply-Accumulate" (shapes, operand placement); CUDA Binary Utilities (SASS opcode names).
"""
from __future__ import annotations

import re

from gpusim.errors import ConfigError

WARP_MMA = frozenset(("HMMA", "IMMA", "DMMA", "BMMA"))
GROUP_MMA = frozenset(("HGMMA", "IGMMA", "QGMMA", "BGMMA"))
MATRIX_MOVES = frozenset(("LDSM", "STSM"))
TMA = frozenset(("UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UTMACCTL", "UBLKCP", "UBLKRED", "UBLKPF"))
TIMED = WARP_MMA | GROUP_MMA | MATRIX_MOVES | TMA
REFERENCE_MMA = ("HMMA", 16, 8, 16, "fp16")          # the shape mma_latency_cycles is given for
REFERENCE_GMMA = ("HGMMA", 64, 128, 16, "fp16")      # the shape wgmma_latency_cycles is given for
_ELEMENT_BYTES = {"fp16": 2, "tf32": 4, "fp8": 1, "int8": 1, "int4": 0.5, "fp64": 8, "b1": 0.125}
_GMMA_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")


def operand_type(base: str, mods: list[str]) -> str:
    """'fp16', 'tf32', 'fp8', 'int8', 'int4', 'fp64' or 'b1' of a tensor instruction."""
    m = set(mods)
    if base == "DMMA":
        return "fp64"
    if base in ("BMMA", "BGMMA"):
        return "b1"
    if m & {"S4", "U4"}:
        return "int4"
    if base in ("IMMA", "IGMMA") or m & {"S8", "U8"}:
        return "int8"
    if base == "QGMMA" or m & {"E4M3", "E5M2"}:
        return "fp8"
    if "TF32" in m:
        return "tf32"
    return "fp16"


def mma_shape(base: str, mods: list[str]) -> tuple[int, int, int]:
    """(m, n, k) from the opcode's shape modifier: '16816' (m16n8k16), '884', '64x128x16'."""
    for mod in mods:
        g = _GMMA_SHAPE.match(mod)
        if g:
            return int(g.group(1)), int(g.group(2)), int(g.group(3))
        if mod.isdigit() and len(mod) >= 3:
            m, rest = (16, mod[2:]) if mod.startswith("16") else (8, mod[1:])
            if rest.startswith("8") and len(rest) > 1:
                return m, 8, int(rest[1:])
    if base in GROUP_MMA:
        return 64, 128, 16
    return 16, 8, 16                                    # no shape printed: as the commonest


def _rate(tensor, kind: str, opcode: str) -> float:
    if kind == "int4":
        r = 2.0 * tensor.rate("int8")
    elif kind == "b1":
        r = 8.0 * tensor.rate("int8")                   # estimate: not measured; binary MMA is rare
    else:
        r = tensor.rate(kind)
    if r <= 0:
        raise ConfigError(f"SASS {opcode} is a {kind} tensor instruction, but the GPU spec has no {kind} tensor "
                          f"throughput (tensor.{kind}_*_per_cycle_per_sm is 0)")
    return r


def _interval(tensor, nsp: int, base: str, mods: list[str], operands: str, opcode: str) -> float:
    kind = operand_type(base, mods)
    m, n, k = mma_shape(base, mods)
    per_sp = _rate(tensor, kind, opcode) / nsp
    if base in WARP_MMA:
        return 2.0 * m * n * k / (per_sp * _warp_share(tensor, base))
    ops = 2.0 * m * n * k / 4                           # one warp of the warpgroup's four
    esize = _ELEMENT_BYTES[kind]
    a_shared = _a_from_shared(operands)
    shared_bytes = (n * k + (m * k if a_shared else 0)) * esize / 4
    return max(ops / per_sp, shared_bytes / (tensor.shared_operand_bytes_per_cycle_per_sm / nsp))


def shared_operand_cycles(instr, tensor) -> float:
    """Cycles one warp's share of a wgmma's shared-memory operands (a quarter of B, and of A
    when it comes through a descriptor) holds the SM's shared-memory path, at
    `shared_operand_bytes_per_cycle_per_sm`; 0 for other instructions."""
    parts = instr.opcode.split(".")
    base, mods = parts[0], parts[1:]
    if base not in GROUP_MMA:
        return 0.0
    m, n, k = mma_shape(base, mods)
    esize = _ELEMENT_BYTES[operand_type(base, mods)]
    shared_bytes = (n * k + (m * k if _a_from_shared(instr.operands) else 0)) * esize / 4
    return shared_bytes / tensor.shared_operand_bytes_per_cycle_per_sm


def _warp_share(tensor, base: str) -> float:
    """The share of the dense rate a warp-level HMMA/IMMA reaches (`warp_mma_rate_fraction`;
    measured 0.66 on the H100, where only wgmma reaches the whole rate); DMMA is FP64's only
    tensor instruction and keeps its own rate."""
    return 1.0 if base == "DMMA" else tensor.warp_mma_rate_fraction


def _a_from_shared(operands: str) -> bool:
    """Whether a wgmma's A comes from shared memory: its second operand is a descriptor."""
    parts = [p.strip() for p in operands.split(",")]
    return len(parts) > 1 and parts[1].startswith("gdesc")


def timing(instr, tensor, nsp: int, lsu_interval: float) -> tuple[float, float | None] | None:
    """(issue interval in cycles, latency in cycles or None for the pipe's / memory's) of SASS
    `instr` on a GPU with `tensor` (a TensorSpec) and `nsp` sub-partitions, or None when it
    is not a tensor or async-copy instruction."""
    parts = instr.opcode.split(".")
    base, mods = parts[0], parts[1:]
    if base not in TIMED:
        return None
    if base in MATRIX_MOVES:
        count = next((int(x) for x in mods if x in ("1", "2", "4")), 1)
        return max(lsu_interval, 128.0 * count / tensor.shared_operand_bytes_per_cycle_per_sm), None
    if base in TMA:
        return None                                    # the LSU's issue; the SM's TMA unit spaces requests (tma.py)
    interval = _interval(tensor, nsp, base, mods, instr.operands, instr.opcode)
    if base in WARP_MMA:
        ref_base, rm, rn, rk, rkind = REFERENCE_MMA
        ref = 2.0 * rm * rn * rk / (tensor.rate(rkind) / nsp * _warp_share(tensor, ref_base))
        latency = tensor.mma_latency_cycles
    else:
        ref = 2.0 * 64 * 128 * 16 / 4 / (tensor.rate("fp16") / nsp)     # REFERENCE_GMMA's arithmetic alone
        latency = tensor.wgmma_latency_cycles
    return interval, max(interval, latency - ref + interval)
