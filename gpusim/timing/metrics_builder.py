"""The metrics builder: a finished launch's units, read into the metrics under Nsight Compute's names.

After the block scheduler has run every timed block, the units hold what happened: each SM its
issue counts, warp and active cycles, shared-memory wavefronts, forced mbarrier completions and
its L1's counters; the memory system its L2, crossbar, HBM and NVLink counters; the block times
and the stall cycles per SASS instruction (`engine.TimingStats`); the issue streams what loop
sampling kept and left out. `MetricsBuilder.build` turns them into one dict:
- counts scaled from the simulated blocks to the whole launch (`scale`), and instruction-issue
  counts also by what loop sampling left out (`inst_scale`); the L2's write-backs of dirty lines
  the left-out iterations would have evicted (`_count_skipped_writebacks`), the dirty residue a
  previous kernel left (`TimingOptions.l2_dirty_bytes_at_launch`), writes from outside the kernel
  (`_count_background_writes`);
- the L1 lookups and hit rates, a sector joining an in-flight miss counted as a hit, as Nsight
  counts it (`_l1_counters`);
- the time (`sm__cycles_elapsed.max`, `gpu__time_duration.sum`), from the extrapolation unit
  (`sampling/extrapolation.py`), which also gives the sampling error estimates and note;
- the warp-stall breakdown (`smsp__pcsamp_warps_issue_stalled_*`), in total and per PTX
  instruction (`per_instruction_stalls`, the source view's table);
- occupancy (`launch__*`, `sm__maximum_warps_per_active_cycle_pct`), the `timing__*` facts of
  the sample, and the bound (`timing__bound`, `timing__utilization`: `_bound`), the busiest of
  issue, shared-memory banks, L2, HBM and NVLink bandwidth if at least 60% used, else 'latency'.

A unit the engine (`engine.TimingEngine`) builds with each launch plan and owns, like
`Extrapolation`: it is given the units it reads (the simulated SMs, the block times and stalls,
the memory system, the issue streams, the extrapolation), the sample's shape (`SampleShape`) and
the kernel's static facts (issue program, resources, unknown SASS, background write rates), and
reads them only in `build`, once the run is over. It simulates nothing and changes no unit.

Names follow Nsight Compute (`smsp__inst_executed.sum`, `l1tex__t_sector_hit_rate.pct`); what
gpusim adds that Nsight does not measure is `timing__*` (the model's own facts) or `gpusim__*`
(counts of what the model estimated).
"""
from __future__ import annotations

import numpy as np

from gpusim.timing import async_groups
from gpusim.timing.memory.l1 import L1Cache
from gpusim.timing.sm import STALL_REASONS

STALL_METRIC = "smsp__pcsamp_warps_issue_stalled_{}"
BOUND_UTILIZATION = 0.6                # the busiest unit sets `timing__bound` from this share of its peak; else latency


class MetricsBuilder:
    """The finished units' state as Nsight-named metrics (module docstring)."""

    def __init__(self, spec, shape, stats, sms, memory, issue, extrapolation, program, n_ptx: int, resources,
                 unknown_sass, background_dram_write_bytes_per_s: float, background_l2_write_sectors_per_s: float):
        self.spec = spec
        self.shape = shape                    # sampling.extrapolation.SampleShape: mode, blocks and SMs simulated
        self.stats = stats                    # engine.TimingStats: block times, stall cycles per SASS instruction
        self.sms = sms                        # the simulated SMs (the engine's list: recording may swap some in)
        self.memory = memory                  # memory.MemorySystem: its counters, L2 write-backs, NVLink port
        self.issue = issue                    # issue_stream.IssueStreams: what loop sampling kept and left out
        self.extrapolation = extrapolation    # sampling.extrapolation.Extrapolation: cycles, error estimates, note
        self.program = program                # static.IssueProgram: SASS -> PTX owner, the SASS table
        self.n_ptx = n_ptx                    # PTX instructions of the kernel (per-instruction stall rows)
        self.resources = resources            # resources.KernelResources: registers, occupancy
        self.unknown_sass = unknown_sass      # SASS instructions timed as generic (TimingOptions.unknown_sass)
        self.background_dram_write_bytes_per_s = background_dram_write_bytes_per_s
        self.background_l2_write_sectors_per_s = background_l2_write_sectors_per_s

    def build(self, fallback: str = "") -> tuple[dict, dict]:
        """The launch's metrics, and the stall cycles per PTX instruction by reason. `fallback`:
        why an 'auto' sample was simulated in full or with more SMs instead ('' if it was not)."""
        spec = self.spec
        shape = self.shape
        extra = self.extrapolation
        cycles = extra.cycles()
        # counts scale from the simulated blocks to the whole launch
        scale = shape.nblocks / max(shape.blocks_simulated, 1)
        kept, skipped = self.issue.kept, self.issue.skipped
        inst_scale = scale * (kept[0] + skipped[0]) / kept[0] if kept[0] else scale   # loop sampling left out
        mem = self.memory.counters()
        m = {k: v * scale * self.issue.traffic_scale(k) for k, v in mem.items() if not k.endswith(".pct")}
        self._count_skipped_writebacks(m, scale)
        residue = self.memory.l2.residue_written_bytes()    # whole-GPU bytes already (TimingOptions)
        if residue:
            m["dram__bytes_write.sum"] = m.get("dram__bytes_write.sum", 0.0) + residue
            m["dram__sectors_write.sum"] = m.get("dram__sectors_write.sum", 0.0) + residue / spec.l2.sector_bytes
        m.update({k: v for k, v in mem.items() if k.endswith(".pct")})
        m.update(self._l1_counters(scale))
        m["sm__cycles_elapsed.max"] = cycles
        m["gpu__time_duration.sum"] = cycles * spec.cycle_ns + spec.launch.kernel_fixed_ns
        m["sm__cycles_elapsed.avg.per_second"] = spec.clocks.sm_clock_mhz * 1e6    # the clock it ran at (clock_domain.py)
        self._count_background_writes(m, m["gpu__time_duration.sum"] * 1e-9)
        warp_cycles = sum(sm.warp_cycles for sm in self.sms)
        active = sum(sm.active_cycles for sm in self.sms)
        m["sm__warps_active.avg.pct_of_peak_sustained_active"] = \
            100.0 * warp_cycles / active / spec.sm.max_warps_per_sm if active else 0.0
        stalls = {r: self.stats.stall[i].tolist() for i, r in enumerate(STALL_REASONS)
                  if r != "gmma" or self._has_wgmma()}          # Nsight's gmma: kernels that issue wgmma
        for r, arr in stalls.items():
            m[STALL_METRIC.format(r)] = sum(arr) * inst_scale
        issued = sum(sm.issued for sm in self.sms)
        m["timing__mode"] = shape.mode
        m["timing__sms_simulated"] = shape.sms_simulated
        m["timing__blocks_simulated"] = shape.blocks_simulated
        m["launch__occupancy_limit_blocks"] = shape.blocks_per_sm
        m["launch__registers_per_thread"] = self.resources.registers_per_thread
        m["sm__maximum_warps_per_active_cycle_pct"] = self.resources.occupancy.occupancy_pct
        m["timing__bound"], m["timing__utilization"] = self._bound(cycles, issued)
        owner = self.program.owner
        per_instruction = {r: np.bincount(owner, weights=np.array(a) * inst_scale, minlength=self.n_ptx)
                           for r, a in stalls.items()}
        m["gpusim__sass_unplaced_accesses.sum"] = self.issue.dropped * scale
        forced = sum(sm.mbarriers.forced for sm in self.sms)
        if forced:                               # mbarrier phases the model had to complete (mbarrier.py)
            m["gpusim__mbarrier_forced_completions.sum"] = forced * scale
        if self.unknown_sass:                    # warp instructions timed as generic (unknown_sass='warn')
            m["gpusim__sass_estimated_inst.sum"] = float(sum(stalls["selected"][i] for i in self.unknown_sass)) * inst_scale
        m["timing__loop_sampled_fraction"] = kept[0] / (kept[0] + skipped[0]) if kept[0] + skipped[0] else 1.0
        m["timing__sampling_error_pct"], m["timing__sampling_dram_error_pct"] = extra.errors(cycles, m)
        m["timing__sampling_unsettled_pct"] = extra.unsettled_pct(cycles)
        note = extra.reuse_note(dram_bytes=m.get("dram__bytes_read.sum", 0.0) + m.get("dram__bytes_write.sum", 0.0),
                                time_ns=m["gpu__time_duration.sum"])
        note = note and note + "; the error estimates cover either way (mode='full' simulates every block)"
        m["timing__sampling_note"] = "; ".join(x for x in (fallback, note) if x)
        return m, per_instruction

    def _has_wgmma(self) -> bool:
        """Whether the kernel's SASS has a warpgroup MMA (its waits are the `gmma` stall reason)."""
        return any(x.group_join == async_groups.WGMMA for x in self.program.table.flat)

    def _l1_counters(self, scale: float) -> dict:
        """The simulated SMs' L1 lookups and L1 <-> L2 bytes, scaled to the launch like the
        memory system's, with the hit rates of the sums (the requests and sectors themselves
        are the functional core's exact counts, already in the metrics). A load sector whose
        fill is already on its way (it joins the in-flight miss) counts as a lookup hit, as
        Nsight counts it (the tag is there): on the committed H200 data this gives
        matmul_naive 87.5%, stencil_1d 21.4%, softmax_rows 72.0% global load hits, equal to
        the measured ones (as misses: 25.0%, 3.8%, 62.9%)."""
        l1 = L1Cache.sum_counters([sm.l1.counters() for sm in self.sms])
        for space in ("global", "local"):
            joined = l1.get(f"gpusim__l1_mshr_merged_sectors_pipe_lsu_mem_{space}_op_ld.sum", 0.0)
            l1[f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_ld_lookup_hit.sum"] += joined
            l1[f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_ld_lookup_miss.sum"] -= joined
        out = {k: v * scale * self.issue.traffic_scale(k) for k, v in l1.items()
               if k.endswith(("_lookup_hit.sum", "_lookup_miss.sum")) or k.startswith("l1tex__m_")}
        hit = sum(v for k, v in out.items() if k.endswith("_lookup_hit.sum"))
        miss = sum(v for k, v in out.items() if k.endswith("_lookup_miss.sum"))
        out["l1tex__t_sector_hit_rate.pct"] = 100.0 * hit / (hit + miss) if hit + miss else 0.0
        h = out.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum", 0.0)
        x = out.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum", 0.0)
        out["l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct"] = 100.0 * h / (h + x) if h + x else 0.0
        return out

    def _count_skipped_writebacks(self, m: dict, scale: float) -> None:
        """Loop sampling: the dirty lines the left-out iterations' loads and stores would have
        evicted are written back (sampling/standins.py), in the counters only."""
        kept = self.issue.kept_kinds[0] + self.issue.kept_kinds[1]
        left_out = self.issue.skipped_kinds[0] + self.issue.skipped_kinds[1]
        if not kept or not left_out:
            return
        written, partial = self.memory.l2.skipped_traffic_writebacks((kept + left_out) / kept)
        if not written:
            return
        sb = self.spec.l2.sector_bytes
        for side, n in (("write", written * self.issue.traffic_scale("dram__bytes_write.sum")),
                        ("read", partial * self.issue.traffic_scale("dram__bytes_read.sum"))):
            m[f"dram__sectors_{side}.sum"] = max(0.0, m.get(f"dram__sectors_{side}.sum", 0.0) + n * scale)
            m[f"dram__bytes_{side}.sum"] = max(0.0, m.get(f"dram__bytes_{side}.sum", 0.0) + n * scale * sb)

    def _count_background_writes(self, m: dict, seconds: float) -> None:
        """Writes from outside the kernel while it runs (`TimingOptions.background_*`), counted."""
        dram = self.background_dram_write_bytes_per_s * seconds
        if dram:
            m["dram__bytes_write.sum"] = m.get("dram__bytes_write.sum", 0.0) + dram
            m["dram__sectors_write.sum"] = m.get("dram__sectors_write.sum", 0.0) + dram / self.spec.l2.sector_bytes
        l2 = self.background_l2_write_sectors_per_s * seconds
        if l2:
            for k in ("lts__t_sectors_op_write.sum", "lts__t_sectors.sum"):
                m[k] = m.get(k, 0.0) + l2

    def _bound(self, cycles: float, issued: int) -> tuple[str, dict]:
        """What bounds the kernel: the utilisation of issue, shared-memory banks, L2, HBM and
        NVLink over the simulated SMs' time, and the busiest unit if at least
        `BOUND_UTILIZATION` of its peak, else 'latency'."""
        spec = self.spec
        if cycles <= 0:
            return "latency", {}
        sms_simulated = self.shape.sms_simulated
        frac = sms_simulated / spec.sm_count
        sim_cycles = max(self.stats.block_end.values()) if self.stats.block_end else cycles
        mem = self.memory.counters()
        util = {
            "compute": issued / (sim_cycles * sms_simulated * spec.sm.sub_partitions),
            "shared_memory": sum(sm.shared_wavefronts for sm in self.sms) / (sim_cycles * sms_simulated),
            # the bytes booked at the simulated slices (a far read's home lookup takes the fabric's)
            "l2_bandwidth": self.memory.l2.busy_cycles / (sim_cycles * self.memory.l2.slices.slices),
            "hbm_bandwidth": (mem.get("dram__bytes_read.sum", 0.0) + mem.get("dram__bytes_write.sum", 0.0)) /
            (sim_cycles * spec.hbm_bytes_per_cycle * frac),
        }
        port = self.memory.peer
        if port is not None:                   # peer access: the busier direction of the NVLink port(s)
            util["nvlink_bandwidth"] = max(mem.get("nvltx__bytes.sum", 0.0), mem.get("nvlrx__bytes.sum", 0.0)) / \
                (sim_cycles * port.bytes_per_cycle * port.ports)
        util = {k: round(min(v, 1.0), 4) for k, v in util.items()}
        top = max(util, key=util.get)
        return (top if util[top] >= BOUND_UTILIZATION else "latency"), util
