"""Occupancy and waves: what limits the blocks one SM holds for a launch, and how the
grid's blocks fall into waves over the GPU's SMs (wave quantization: the last, partial
wave leaves SMs idle).

Data: `gpusim.timing.occupancy.occupancy` (the CUDA occupancy calculator's rules, checked
against `cuda_occupancy.h`) on the kernel's resources as the timing model sees them
(`gpusim.timing.resources.kernel_resources`: registers per thread from `ptxas -v`, shared
bytes per block static + dynamic, threads per block). The blocks each limit allows are
drawn side by side, the binding one highlighted; the sweeps show the warps per SM the
same kernel would get at other register counts and shared sizes, as Nsight Compute's
occupancy graphs do, from the same calculator at every register count and on each side of
every shared allocation unit, so each cliff is drawn where the model puts it (33, 41, 49,
65, 81, 129 registers for 256-thread blocks on an H100; tests/viz/test_viz_occupancy.py).

Waves: a wave is `blocks_per_sm x sm_count` blocks; a grid of N blocks takes
ceil(N / wave) waves, the last one `tail_blocks` strong. This is the idealised count
(every SM starts its blocks together); the timing model's block scheduler refills SMs as
blocks finish, so waves of unequal blocks blur in its timeline.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim import api
from gpusim.timing.occupancy import LIMIT_ORDER, Occupancy, occupancy
from gpusim.timing.resources import kernel_resources
from gpusim.viz import _mpl
from gpusim.viz.capture import subject_of


@dataclass(frozen=True)
class OccupancyView:
    kernel: str
    gpu: str
    threads_per_block: int
    registers_per_thread: int
    registers_source: str             # 'ptxas' or 'ptx-estimate'
    shared_bytes_per_block: int       # static + dynamic, as requested
    occupancy: Occupancy              # blocks per SM, limiter, each limit's block count
    grid_blocks: int
    sm_count: int
    register_sweep: np.ndarray        # registers per thread tried
    register_sweep_warps: np.ndarray  # warps per SM at each
    shared_sweep: np.ndarray          # shared bytes per block tried
    shared_sweep_warps: np.ndarray

    @property
    def limits(self) -> dict[str, int | None]:
        """Blocks per SM each resource allows (None: the kernel does not use it)."""
        o = self.occupancy
        return {"warps": o.blocks_limit_warps, "blocks": o.blocks_limit_blocks,
                "registers": o.blocks_limit_registers, "shared": o.blocks_limit_shared}

    @property
    def blocks_per_wave(self) -> int:
        return self.occupancy.blocks_per_sm * self.sm_count

    @property
    def full_waves(self) -> int:
        return self.grid_blocks // self.blocks_per_wave if self.blocks_per_wave else 0

    @property
    def tail_blocks(self) -> int:
        """Blocks in the last, partial wave (0: the grid fills its waves exactly)."""
        return self.grid_blocks % self.blocks_per_wave if self.blocks_per_wave else self.grid_blocks

    @property
    def waves(self) -> int:
        return self.full_waves + (self.tail_blocks > 0)

    @property
    def wave_efficiency(self) -> float:
        """Blocks / block slots of all the waves: 1.0 when the last wave is full."""
        return self.grid_blocks / (self.waves * self.blocks_per_wave) if self.waves else 0.0


def from_numbers(spec, threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int,
                 grid_blocks: int, kernel: str = "", registers_source: str = "given") -> OccupancyView:
    """The view for explicit resources on a GPUSpec."""
    occ = occupancy(spec, threads_per_block, registers_per_thread, shared_bytes_per_block)
    regs = np.arange(0, spec.sm.max_registers_per_thread + 1)          # every count: the cliffs fall at 8k + 1
    reg_w = np.array([occupancy(spec, threads_per_block, int(r), shared_bytes_per_block).warps_per_sm for r in regs])
    top = max(spec.limits.max_shared_bytes_per_block_optin, shared_bytes_per_block)
    unit = spec.sm.shared_allocation_unit_bytes                          # constant on (k * unit, (k + 1) * unit]
    sh = np.unique(np.r_[0, np.arange(1, top + 1, unit), shared_bytes_per_block])
    sh_w = np.array([occupancy(spec, threads_per_block, registers_per_thread, int(s)).warps_per_sm for s in sh])
    return OccupancyView(kernel, spec.name, threads_per_block, registers_per_thread, registers_source,
                         shared_bytes_per_block, occ, grid_blocks, spec.sm_count, regs, reg_w, sh, sh_w)


def occupancy_view(subject, gpu=None, *, prepared=None) -> OccupancyView:
    """The view of a launch (anything `gpusim.viz.capture` takes); compiles, runs nothing.
    `prepared`: the launch already prepared (`gpusim.prepare`, e.g. a Capture's), reused."""
    p = prepared
    if p is None:
        s = subject_of(subject, gpu)
        p = api.prepare(s.kernel, s.grid, s.block, s.args, s.gpu, s.shared_bytes)
    res = kernel_resources(p.plan)
    return from_numbers(p.spec, res.threads_per_block, res.registers_per_thread, res.shared_bytes_per_block,
                        p.geometry.nblocks, p.name, res.registers_source)


def plot(v: OccupancyView, path=None):
    """Four panels: blocks per SM by limit; the waves; warps per SM against registers per
    thread and against shared memory per block (the launch's own values marked)."""
    fig, axes = _mpl.figure(2, 2, figsize=(11, 7.5), dpi=110)
    fig.subplots_adjust(left=0.07, right=0.97, bottom=0.08, top=0.92, wspace=0.22, hspace=0.3)   # fixed: no layout pass
    o = v.occupancy
    ax = axes[0, 0]
    names = list(LIMIT_ORDER)
    vals = [v.limits[n] for n in names]
    shown = [x if x is not None else 0 for x in vals]
    colours = ["#d62728" if n in o.limiters else "#7f9fbf" for n in names]
    bars = ax.bar(names, shown, color=colours)
    for b, x in zip(bars, vals):
        ax.text(b.get_x() + b.get_width() / 2, b.get_height(), "unused" if x is None else str(x),
                ha="center", va="bottom", fontsize=8)
    ax.axhline(o.blocks_per_sm, color="black", linewidth=0.8, linestyle="--")
    ax.set_ylabel("blocks per SM allowed")
    ax.set_title(f"{v.kernel} on {v.gpu}: {o.blocks_per_sm} blocks/SM, {o.warps_per_sm}/{o.max_warps_per_sm} warps "
                 f"({o.occupancy_pct:.0f}%), limited by {' and '.join(o.limiters)}\n{v.threads_per_block} threads, "
                 f"{v.registers_per_thread} regs/thread ({v.registers_source}), {v.shared_bytes_per_block} B shared",
                 fontsize=8)

    ax = axes[0, 1]
    per = v.blocks_per_wave
    rows = [(f"wave {w + 1}", per) for w in range(v.full_waves)] if v.full_waves <= 8 else \
        [(f"waves 1-{v.full_waves}", per)]
    if v.tail_blocks:
        rows.append((f"wave {v.waves} (tail)", v.tail_blocks))
    for k, (label, n) in enumerate(rows):
        ax.barh(k, n, color="#2ca02c" if n == per else "#ff7f0e")
        ax.barh(k, per - n, left=n, color="0.88")
        ax.text(per * 1.01, k, f"{n}/{per}", va="center", fontsize=7)
    _mpl.ticks(ax.yaxis, range(len(rows)), [r[0] for r in rows], fontsize=7)
    ax.set_xlim(0, per * 1.15 if per else 1)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"block slots in a wave ({o.blocks_per_sm} blocks/SM x {v.sm_count} SMs)")
    ax.set_title(f"{v.grid_blocks} blocks = {v.full_waves} full wave{'s' * (v.full_waves != 1)} + "
                 f"{v.tail_blocks} in the tail; {100 * v.wave_efficiency:.0f}% of the slots used", fontsize=8)

    ax = axes[1, 0]
    ax.step(v.register_sweep, v.register_sweep_warps, where="post", color="#1f5fa8")
    ax.plot([v.registers_per_thread], [o.warps_per_sm], "o", color="#d62728")
    ax.set_xlabel("registers per thread")
    ax.set_ylabel("warps per SM")
    ax.set_ylim(0, o.max_warps_per_sm * 1.05)
    ax.grid(True, alpha=0.3)

    ax = axes[1, 1]
    ax.step(v.shared_sweep / 1024, v.shared_sweep_warps, where="post", color="#9467bd")
    ax.plot([v.shared_bytes_per_block / 1024], [o.warps_per_sm], "o", color="#d62728")
    ax.set_xlabel("shared memory per block (KiB)")
    ax.set_ylabel("warps per SM")
    ax.set_ylim(0, o.max_warps_per_sm * 1.05)
    ax.grid(True, alpha=0.3)
    _mpl.save(fig, path)
    return fig
