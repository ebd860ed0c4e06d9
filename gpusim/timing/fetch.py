"""An SM's front end: the instruction cache and the constant cache, both read-only.

What is modelled:
- Instruction fetch: each SM caches lines of `sm.instruction_cache_line_bytes` of the
  kernel's SASS. A warp about to issue an instruction whose line is absent waits for
  it (Nsight's `no_instructions` stall). Fetches form one stream per SM: the first
  line arrives after the fill latency, each next one `line / sm.instruction_fetch_bytes_
  per_cycle` cycles after the one before, and using a line keeps the next
  `sm.instruction_prefetch_lines` requested (sequential prefetch), so cold straight-line
  code runs at the fetch rate: measured on H200, 2048 FADDs (256 lines) take 4494 cycles
  cold and 2307 warm, i.e. one 128-B line per 16.5 cycles after about an L2 latency
  (data/measurements/specs_ubench/ubench_frontend_h200.txt).
- Constant cache: operands `c[bank][offset]` (kernel parameters in bank 0, `__constant__`
  data in bank 3) are read through a per-SM cache of `sm.constant_cache_line_bytes`
  lines; a warp whose instruction needs an absent line waits for the fill (Nsight's
  `imc_miss` stall). Indexed constant loads (`LDC` with a register index) use the same
  lines, found from the lanes' addresses.
- Both start empty at every launch (the driver invalidates them). An instruction-cache fill
  takes the L2 hit latency (`l2.hit_latency_cycles`): the code is read by every SM, so it
  is in the L2 when the SMs ask. Constant lines are measured (validate/constant_cache_probe.py,
  data/measurements/constant_cache_h200.json and _h100.json, one warp's dependent reads of
  parameters or `__constant__` data in K distinct 64-B lines, timed by its own clock under
  Nsight's cache flushes): bank 0 (parameters and launch constants) is not served from the
  L2: its first missing line arrives `sm.parameter_fill_cycles` after the request (H200 96),
  every later one `sm.parameter_next_fill_cycles` after (24: 16 lines 458 cycles cold, two
  lines 1 KiB apart 108, as two neighbours), as if the rest of the launch's parameter block
  followed the first line; other banks' lines miss one by one, `sm.constant_fill_cycles`
  each (about 200 under Nsight's flushes; 73 when the GPC's copy is warm). 0 in a field:
  the L2 hit latency, every line alike (all presets for now: with the measured figures the
  sampled launches moved by up to +-50% through their start, docs/mechanisms_24.md section
  41). Fills do not book L2 bandwidth.
What is not: capacity (kernels fit: Hopper's L1 instruction cache is 128 KB per SM
and a kernel's code a few KB), the per-SMSP L0 instruction caches, fetch bandwidth,
and branch-target prefetching (a taken branch to an absent line misses).

Sources: Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
Microbenchmarking" (2018), sections 3.2-3.3 (L0/L1 instruction caches, 128-B lines;
constant cache hierarchy); Nsight Compute Kernel Profiling Guide, warp stall reasons
`no_instructions` and `imc_miss`.

The caches' state is an array per cache (its scalars, then one ready time per line) that
the compiled issue loop reads and updates; `issue_loop.cache_ready` is the fill and
prefetch arithmetic, compiled with the loop (numba's cache sees one file).
"""
from __future__ import annotations

import re

import numpy as np

from gpusim.timing import issue_loop as L
from gpusim.timing.static import BANK0_LINE_LIMIT

_CONST_OPERAND = re.compile(r"c\[(0x[0-9a-fA-F]+)\]\[(0x[0-9a-fA-F]+)\]")


def constant_operands(operands: str) -> tuple[tuple[int, int], ...]:
    """(bank, byte offset) of each immediate constant operand `c[0xB][0xOFF]`."""
    return tuple((int(b, 16), int(o, 16)) for b, o in _CONST_OPERAND.findall(operands))


class ReadOnlyCache:
    """Lines present in one SM (their ready times: when the data arrived or will arrive),
    filled one after another by a fetch stream: the first `fill_cycles` after its request,
    the next ones `cycles_per_line` apart; using a line requests the `prefetch` lines after
    it. `lines`: the line numbers used (0 .. lines - 1) or, for sparse ones, `slots`: line ->
    its slot in the array (lines not in it get the next slots as they come; no prefetch).
    The first `parameter_lines` slots are bank 0's (the constant cache's): the first of them to
    miss arrives `parameter_fill_cycles` after its request, every later one `parameter_next_cycles`."""

    __slots__ = ("a", "line_shift", "slots")

    def __init__(self, line_bytes: int, fill_cycles: float, cycles_per_line: float = 0.0, prefetch_lines: int = 0,
                 lines: int = 0, slots: dict | None = None, parameter_lines: int = 0,
                 parameter_fill_cycles: float = 0.0, parameter_next_cycles: float = 0.0):
        self.line_shift = line_bytes.bit_length() - 1
        self.slots = None if slots is None else dict(slots)
        if self.slots is not None and prefetch_lines:
            raise ValueError("a cache of sparse lines does not prefetch")
        n = (len(self.slots) if self.slots is not None else lines) + prefetch_lines + 1
        self.a = a = np.full(L.C_LINES + n, np.nan)
        a[L.C_FREE] = -np.inf                    # when the stream delivered its latest line
        a[L.C_FILL], a[L.C_CPL], a[L.C_PREF] = fill_cycles, cycles_per_line, prefetch_lines
        a[L.C_FRONT] = -1                        # highest line requested
        a[L.C_MISS] = 0
        a[L.C_PLINES], a[L.C_PFILL], a[L.C_PNEXT], a[L.C_PSEEN] = (parameter_lines, parameter_fill_cycles,
                                                                   parameter_next_cycles, 0)

    @property
    def misses(self) -> int:
        return int(self.a[L.C_MISS])

    def ready(self, t: float, line: int) -> float:
        """When line `line` (byte offset >> line_shift) is present; requests it if absent and
        keeps the prefetch ahead of it. May replace `a` by a larger array."""
        if self.slots is not None:
            slot = self.slots.get(line)
            if slot is None:
                slot = self.slots[line] = len(self.slots)
        else:
            slot = line
        need = L.C_LINES + slot + int(self.a[L.C_PREF]) + 1
        if need > len(self.a):
            self.a = np.concatenate([self.a, np.full(max(need - len(self.a), len(self.a)), np.nan)])
        return L.cache_ready(self.a, float(t), slot)


class FrontEnd:
    """The instruction and constant caches of one SM, for a kernel's `static.IssueTable`."""

    __slots__ = ("icache", "ccache")

    def __init__(self, spec, table):
        sm = spec.sm
        fill = spec.l2.hit_latency_cycles
        self.icache = ReadOnlyCache(sm.instruction_cache_line_bytes, fill,
                                    sm.instruction_cache_line_bytes / sm.instruction_fetch_bytes_per_cycle,
                                    sm.instruction_prefetch_lines, lines=table.ilines)
        first = sm.parameter_fill_cycles or fill
        bank0 = sum(1 for c in table.const_slots if c < BANK0_LINE_LIMIT) if (
            sm.parameter_fill_cycles or sm.parameter_next_fill_cycles) else 0   # 0: every line as other banks'
        self.ccache = ReadOnlyCache(sm.constant_cache_line_bytes, sm.constant_fill_cycles or fill,
                                    slots=table.const_slots, parameter_lines=bank0, parameter_fill_cycles=first,
                                    parameter_next_cycles=sm.parameter_next_fill_cycles or first)
