"""Reads merged within a GPC (a unit of `l2.L2Cache`): a read of sectors that another SM of the same
GPC asked the L2 for a moment earlier is served by that read's lookup, not looked up again.

What is measured (data/measurements/request_merge_h100.json, `python -m validate.request_merge_probe`,
H100, 2026-11-27; docs/mechanisms_24.md section 37): one block an SM reads 256 KiB, each sector once,
with `ld.global.v4` or `cp.async.cg`, after a launch before read the regions into the L2. When SMs
share a region and read it in step, the L2 looks up (`lts__t_sectors_srcunit_tex_op_read`) a fraction
of the sectors the L1s receive (`l1tex__m_xbar2l1tex_read_bytes`), and the reads take less time
(cp.async: 8,649 cycles each SM on its own region, 6,630 the two SMs of a TPC on one):

| SMs on one region, in step | lookups a sector received |
| --- | --- |
| one (each its own) | 1.000 |
| the two of a TPC | 0.500 |
| one SM of each of two TPCs of one GPC | 0.500 |
| the four of two TPCs of one GPC | 0.250 |
| every SM of a GPC (8-18), or every SM of the GPU | 0.26-0.32 |
| two in different GPCs | 0.97-1.00 |
| two TPCs in different GPCs (four SMs) | 0.485: each TPC's pair merges, the TPCs do not |

and with each round of the second SM of a TPC paced 0 / 250 / 500 / 1,000 / 2,000-8,000 ns after the
first's (a round a microsecond, so the lag holds): 0.50 / 0.62 / 0.89 / 1.00 / 1.00. So reads merge
among the SMs of one GPC and never across GPCs; one lookup serves about four reads; a read merges
when it comes within about 500 cycles of its partner's (at 1.98 GHz: 77% of the reads 495 cycles late,
22% 990 cycles late, none 1,980 cycles late).

The model: the SMs are grouped into `noc.gpcs` GPCs of consecutive ids (the GPUs' block dispatcher
deals consecutive blocks to the SMs of one GPC, data/measurements/smsp_placement_h100.json, and
gpusim's SM i takes block i of a wave). A read of a line's sectors reaching the L2 at t, where every
one of them was read by another SM of its GPC that reached the L2 at t0 >= t -
`noc.gpc_merge_window_cycles` and was looked up, and that lookup has served fewer than
`noc.gpc_merge_requests` reads, takes max(that read's ready time, t) as its ready time and books
nothing at the L2 (no slice, fabric or DRAM time; not counted as a lookup:
`gpusim__gpc_merged_read_sectors.sum` counts them); the crossbar still carries its bytes (booked
before the L2). Any other read is looked up, and its sectors become the GPC's latest read of them.
Writes and atomics never merge, nor do they invalidate (within the window a write would not yet be
visible to the reader on the GPU either: not modelled). The window is a step at 750 cycles, between
the paced lags of 495 (77% merged) and 990 cycles (22%). With it the probe's cases in step come out
within 0.035 of the GPU's shares and the paced ones at 0.53 / 0.58 / 1.00 / 1.00 for 0 / 250 / 500 /
1,000 ns (`python -m validate.request_merge_probe --predict
h100:noc.gpc_merge_window_cycles=750,l2.join_queued_reads=false ...`,
benchmarks/results/request_merge_check_h100.json). The Hopper presets leave it off (window 0; section 37
of docs/mechanisms_24.md: on, the L2-bound GEMMs came out 6-17% slow).

Only the first wave's blocks merge (`first_wave_blocks`, the GPU's SMs times the blocks an SM
holds; the engine tells the unit each access's block). The dispatcher deals the first wave to the GPCs
in runs of consecutive blocks, so neighbouring blocks, which read the same tiles, run side by side in a
GPC; after it, a block takes the slot that frees first. On the GPUs that scatters neighbours over the
GPCs in the L2-bound GEMMs (the L2 looks up 0.92-0.93 of the sectors received by the `mma.sync`, TMA
and Triton GEMMs at 8192^3, 12-18 waves, against 0.50-0.88 at 2048^3, about one wave:
data/measurements/h100_tensor.json); gpusim's SMs free their slots in lockstep and would keep
neighbours together wave after wave. (The wmma GEMM, latency-bound, keeps merging on the GPU: 0.60 at
8192^3; its later waves are not merged here.)

An SM's own reads never merge with each other: a bypassing copy that reads a sector twice in one
LDGSTS is looked up twice on the H100 (docs/mechanisms_24.md section 26), and a coherent load read
again goes to the L2 (tests/timing/test_coherent_loads.py); the GPUs do serve some of an SM's own
`cp.async.cg` re-reads without the L2 thousands of cycles later (section 27's share probe, 29-41%),
which is not modelled.

Not modelled: a late SM catching up on the GPU. Started 1,000-8,000 cycles behind its partner and not
paced, the second SM of a TPC merges 99 / 90 / 69 / 29% of its reads on the H100 (each merged read
comes back sooner, so it closes the gap); gpusim's merged reads are no faster than hits at an idle
slice, the gap stays, and none merge. Also not modelled: what the merging structure is; a read
covering some of the merged sectors (looked up in full); the GPUs' GPC sizes (8-18 SMs: consecutive
equal shares here).
"""
from __future__ import annotations

PRUNE_AT = 1 << 14                      # lines a GPC keeps before those past the window are dropped


class GpcMerge:
    """`join(sm, line, sectors, t)`: the ready time of its GPC's recent read of every one of
    `sectors` (sector indices within `line`), or None; `note(sm, line, sectors, t, ready)`: SM sm's
    read of them reached the L2 at t and was looked up, its data ready at `ready`."""

    def __init__(self, spec, sectors_per_line: int):
        noc = spec.noc
        self.window = float(noc.gpc_merge_window_cycles)
        self.enabled = self.window > 0
        self.requests = noc.gpc_merge_requests
        self.gpcs = min(noc.gpcs, spec.sm_count)         # a GPU of fewer SMs than GPCs: one SM a GPC
        self.sm_count = spec.sm_count
        self.sectors_per_line = sectors_per_line
        self.recent: list[dict] = [{} for _ in range(self.gpcs)]
        self.prune_at = [PRUNE_AT] * self.gpcs
        self.first_wave_blocks: int | None = None     # set by the engine: blocks past it never merge
        self.block = 0                                # the block of the access being routed (set by its SM)
        self.reset_counters()

    def gpc_of(self, sm: int) -> int:
        """The GPC of SM `sm` (consecutive ids, `gpcs` near-equal groups of the GPU's SMs)."""
        return min(sm, self.sm_count - 1) * self.gpcs // self.sm_count

    def dealt_by_gpc(self) -> bool:
        """Whether the block of the access being routed is one the dispatcher dealt to a GPC with its
        neighbours (the first wave's; every block where no engine said otherwise)."""
        return self.first_wave_blocks is None or self.block < self.first_wave_blocks

    def join(self, sm: int, line: int, sectors, t: float) -> float | None:
        if not self.dealt_by_gpc():
            return None
        ent = self.recent[self.gpc_of(sm)].get(line)
        if ent is None:
            return None
        ready = t
        for k in sectors:
            e = ent[k]
            if e is None or e[0] + self.window < t or e[2] >= self.requests or e[3] == sm:
                return None
            if e[1] > ready:
                ready = e[1]
        for k in sectors:
            ent[k][2] += 1
        self.merged_sectors += len(sectors)
        return ready

    def note(self, sm: int, line: int, sectors, t: float, ready: float) -> None:
        if not self.dealt_by_gpc():
            return
        g = self.gpc_of(sm)
        table = self.recent[g]
        ent = table.get(line)
        if ent is None:
            if len(table) >= self.prune_at[g]:
                self._prune(table, t)
                self.prune_at[g] = max(PRUNE_AT, 2 * len(table))
            ent = table[line] = [None] * self.sectors_per_line
        for k in sectors:
            ent[k] = [t, ready, 1, sm]

    def _prune(self, table: dict, t: float) -> None:
        """Drop the lines none of whose sectors can be merged at `t` or later."""
        old = t - self.window
        for line in [ln for ln, ent in table.items() if all(e is None or e[0] < old for e in ent)]:
            del table[line]

    def flush(self) -> None:
        """Kernel boundary: nothing is in flight or recent any more."""
        for table in self.recent:
            table.clear()
        self.prune_at = [PRUNE_AT] * self.gpcs

    def reset_counters(self) -> None:
        self.merged_sectors = 0
