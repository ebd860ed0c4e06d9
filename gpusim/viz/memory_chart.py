"""Memory chart: a launch's traffic through the memory hierarchy, as Nsight Compute's
"Memory Workload Analysis" chart draws it: the kernel's requests into the L1/TEX cache
(and the shared-memory pipe), the sectors they become and how many hit there, the bytes
between L1 and L2, the L2's sectors and hit rate, and the bytes between L2 and DRAM.

Data: the Result's metrics, nothing launched again. Requests and sectors into the L1
are the functional core's exact counts (`l1tex__t_{requests,sectors}_pipe_lsu_mem_*`,
shared wavefronts and conflicts); L1 hits, L1 <-> L2 bytes, L2 sectors and hit rates and
DRAM bytes are the timing model's (`l1tex__t_sectors_..._lookup_hit`,
`l1tex__m_xbar2l1tex_read_bytes`, `lts__t_sectors_op_*`, `lts__t_sector_hit_rate.pct`,
`dram__bytes_{read,write}`), so a functional-only Result draws the first column alone.
An L1 load sector that joins a fill already in flight is a hit, as Nsight counts it (the
engine's `l1tex__..._lookup_hit`; equal to the H200's measured hit rates of the committed
data). The L2's own hit rate (`lts__t_sector_hit_rate.pct`) counts such a sector as a miss
and so reads far below Nsight's (vector_add 0.0% where the H200 measures 67%; DEVIATIONS.md):
the chart's L2 figure is instead the share of the L2's sector lookups that fetched nothing
from DRAM, 1 - DRAM read sectors / `lts__t_sectors.sum`, from counters the model gets
right (DRAM bytes within a few percent of Nsight's), with the model's hit rate beside it.
A sampled launch (`timing__mode` 'sampled') simulates some blocks and scales their
counts to the whole grid: traffic that blocks share (one block's halo is its
neighbour's interior, which an L2 catches) is then counted once per simulated block, an
overcount the chart states (`note`); `--mode full` simulates every block.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from gpusim.viz import _mpl

SECTOR = 32


@dataclass(frozen=True)
class Flow:
    what: str                  # 'global loads', 'global stores', 'global atomics', 'local loads', ...
    requests: int
    sectors: int
    hit_rate: float | None     # share of the sectors that hit in L1 (None: not timed, or stores)


@dataclass(frozen=True)
class MemoryChart:
    kernel: str
    gpu: str
    flows: tuple[Flow, ...]                  # kernel -> L1/TEX
    shared_requests: int
    shared_wavefronts: int
    timed: bool
    l1_read_bytes: float = 0.0               # L2 -> L1 (l1tex__m_xbar2l1tex_read_bytes)
    l1_write_bytes: float = 0.0              # L1 -> L2
    l2_sectors: dict | None = None           # op -> sectors (read, write, atom, red)
    l2_hit_rate: float | None = None         # all L2 lookups, %
    l2_read_hit_rate: float | None = None
    l2_no_fetch: float | None = None         # % of L2 sector lookups that fetched nothing from DRAM
    dram_read_bytes: float = 0.0
    dram_write_bytes: float = 0.0
    note: str = ""                           # sampled launches: what the counts are

    @property
    def l1_sectors(self) -> int:
        return sum(f.sectors for f in self.flows)

    @property
    def l1_hit_rate(self) -> float | None:
        """Sector hit rate over the loads (the rate Nsight shows on the L1 box)."""
        loads = [f for f in self.flows if f.hit_rate is not None and f.sectors]
        s = sum(f.sectors for f in loads)
        return sum(f.hit_rate * f.sectors for f in loads) / s if s else None


def memory_chart(result) -> MemoryChart:
    """The chart's data from a Result (see the module docstring)."""
    m = result.metrics

    def g(k):
        return float(m.get(k, 0.0) or 0.0)

    timed = "lts__t_sectors.sum" in m
    flows = []
    for space in ("global", "local"):
        for op, name in (("ld", "loads"), ("st", "stores"), ("atom", "atomics"), ("red", "reductions")):
            req = g(f"l1tex__t_requests_pipe_lsu_mem_{space}_op_{op}.sum")
            sec = g(f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_{op}.sum")
            if not req:
                continue
            hit = None
            if timed and op == "ld":
                h = g(f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_ld_lookup_hit.sum")
                x = g(f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_ld_lookup_miss.sum")
                hit = 100.0 * h / (h + x) if h + x else None
            flows.append(Flow(f"{space} {name}", int(req), int(sec), hit))
    wf = sum(g(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{o}.sum") for o in ("ld", "st"))
    conflicts = sum(g(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{o}.sum") for o in ("ld", "st"))
    note = ""
    if m.get("timing__mode") == "sampled":
        done, total = int(g("timing__blocks_simulated")), int(g("launch__grid_size"))
        note = (f"sampled: {done} of {total} blocks simulated and their L1/L2/DRAM counts scaled to the grid; "
                "data blocks share (a halo, a tile's neighbour) is counted once per simulated block "
                "(--mode full for every block)")
    if not timed:
        return MemoryChart(result.kernel, result.gpu, tuple(flows), int(wf - conflicts), int(wf), False, note=note)
    return MemoryChart(
        result.kernel, result.gpu, tuple(flows), int(wf - conflicts), int(wf), True,
        l1_read_bytes=g("l1tex__m_xbar2l1tex_read_bytes.sum"), l1_write_bytes=g("l1tex__m_l1tex2xbar_write_bytes.sum"),
        l2_sectors={op: g(f"lts__t_sectors_op_{op}.sum") for op in ("read", "write", "atom", "red")},
        l2_hit_rate=m.get("lts__t_sector_hit_rate.pct"), l2_read_hit_rate=m.get("lts__t_sector_op_read_hit_rate.pct"),
        l2_no_fetch=(100.0 * max(0.0, 1.0 - g("dram__bytes_read.sum") / SECTOR / g("lts__t_sectors.sum"))
                     if g("lts__t_sectors.sum") else None),
        dram_read_bytes=g("dram__bytes_read.sum"), dram_write_bytes=g("dram__bytes_write.sum"), note=note)


def nbytes(b: float) -> str:
    """Bytes in decimal units as Nsight prints them: 524.29 KB, 6.29 MB."""
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= k:
            return f"{b / k:.2f} {unit}"
    return f"{b:.0f} B"


def text_lines(c: MemoryChart) -> list[str]:
    """The chart as a few lines of text (the source view's header)."""
    parts = []
    for f in c.flows:
        hit = f" ({f.hit_rate:.1f}% hit)" if f.hit_rate is not None else ""
        parts.append(f"{f.what.replace('global ', '')} {f.requests:,} req / {f.sectors:,} sectors{hit}")
    if c.shared_wavefronts:
        parts.append(f"shared {c.shared_requests:,} req / {c.shared_wavefronts:,} wavefronts")
    out = ["memory: L1 " + ("; ".join(parts) if parts else "no global, local or shared accesses")]
    if c.timed:
        s = c.l2_sectors or {}
        l2 = " / ".join(f"{v:,.0f} {op}" for op, v in s.items() if v) or "0"
        out.append(f"        L2 {l2} sectors ({c.l2_no_fetch or 0:.1f}% need no DRAM fetch; lts hit rate "
                   f"{c.l2_hit_rate or 0:.1f}%); DRAM {nbytes(c.dram_read_bytes)} read, "
                   f"{nbytes(c.dram_write_bytes)} written")
    if c.note:
        out.append(f"        ({c.note.split(';')[0]}: reuse between blocks is missed, --mode full)")
    return out


def plot(c: MemoryChart, path=None):
    """Boxes for the kernel, L1/TEX (with shared memory below), L2 and DRAM, left to right;
    arrows carry requests and sectors (kernel -> L1), bytes read (towards the SMs) and
    written (away from them); the boxes their hit rates."""

    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # lazy: matplotlib, only when a figure is drawn
    fig, axes = _mpl.figure(1, 1, figsize=(10, 3.9), dpi=110)
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.86 if c.note else 0.92)
    ax = axes[0, 0]
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 36)
    ax.axis("off")
    boxes = {"kernel": (1, 11, "Kernel\n(warps)"), "l1": (31, 13, "L1/TEX"), "l2": (60, 15, "L2"),
             "dram": (89, 10, "DRAM")}
    sub = {"l1": f"{c.l1_hit_rate:.1f}% of load\nsectors hit" if c.l1_hit_rate is not None else "",
           "l2": (f"{c.l2_no_fetch:.1f}% of lookups\nneed no DRAM fetch\n(model hit rate {c.l2_hit_rate:.1f}%)"
                  if c.l2_no_fetch is not None else "")}
    for key, (x, w, label) in boxes.items():
        faded = key in ("l2", "dram") and not c.timed
        ax.add_patch(FancyBboxPatch((x, 11), w, 17, boxstyle="round,pad=0.4",
                                    facecolor="#f2f2f2" if faded else "#dbe8f6", edgecolor="#555"))
        ax.text(x + w / 2, 24.5, label, ha="center", va="center", fontsize=10, weight="bold")
        if sub.get(key):
            ax.text(x + w / 2, 16.5, sub[key], ha="center", va="center", fontsize=8)
    if c.shared_wavefronts:
        ax.add_patch(FancyBboxPatch((31, 1.5), 13, 6, boxstyle="round,pad=0.4", facecolor="#e8f3e0",
                                    edgecolor="#555"))
        ax.text(37.5, 4.5, f"shared memory\n{c.shared_wavefronts:,} wavefronts", ha="center", va="center",
                fontsize=8)
        ax.add_patch(FancyArrowPatch((12.5, 12), (31, 4.5), arrowstyle="-|>", mutation_scale=12, color="#4a7f3a"))
        ax.text(17, 5, f"{c.shared_requests:,} req", fontsize=8, color="#4a7f3a")

    def arrow(x0, x1, y, label, colour="#1f5fa8"):
        ax.add_patch(FancyArrowPatch((x0, y), (x1, y), arrowstyle="-|>", mutation_scale=12, color=colour))
        ax.text((x0 + x1) / 2, y + 0.8, label, ha="center", va="bottom", fontsize=8, color=colour)
    rows = list(c.flows)[:4]
    for k, f in enumerate(rows):
        y = 26 - k * (13 / max(len(rows), 1))
        arrow(12.5, 30.5, y, f"{f.what}: {f.requests:,} req\n{f.sectors:,} sectors ({nbytes(f.sectors * SECTOR)})")
    if c.timed:
        arrow(59.5, 44.5, 23, f"{nbytes(c.l1_read_bytes)} read")
        arrow(44.5, 59.5, 15, f"{nbytes(c.l1_write_bytes)} written", "#b5541c")
        arrow(88.5, 75.5, 23, f"{nbytes(c.dram_read_bytes)} read")
        arrow(75.5, 88.5, 15, f"{nbytes(c.dram_write_bytes)} written", "#b5541c")
        s = c.l2_sectors or {}
        ax.text(67.5, 30, ", ".join(f"{v:,.0f} {op}" for op, v in s.items() if v) + " sectors", ha="center",
                fontsize=8)
    else:
        ax.text(77, 20, "L2 and DRAM: run with timing", ha="center", fontsize=9, color="#777")
    title = f"{c.kernel} on {c.gpu}: memory chart (blue: towards the SMs, red: away from them)"
    if c.note:
        title += "\n" + "\n".join(textwrap.wrap(c.note, 150))
    ax.set_title(title, fontsize=8.5)
    _mpl.save(fig, path)
    return fig
