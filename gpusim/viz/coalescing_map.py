"""Coalescing map: for one global-memory access of one warp, which 32-byte sectors and
128-byte cache lines its lanes touch.

Data: the per-lane addresses the functional core computed for that instruction
(`gpusim.viz.capture`). The warp's access is one request; the sectors are the distinct
32-byte segments holding the lanes' addresses, exactly what the load/store unit adds to
`l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st,atom,red}.sum` (one request per warp
instruction to `..._t_requests_...`). 32 consecutive float32 are 4 sectors of one line;
a column walk of a row-major matrix is 32 sectors in 32 lines. `efficiency` is the bytes
the lanes asked for over the bytes of the sectors moved.

The picture puts only the touched lines side by side (128 bytes each, sector boundaries
drawn), so a strided access stays readable: one row per lane, a mark at the bytes it
accesses, the sectors touched shaded.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.viz import _mpl
from gpusim.viz.capture import Capture, WarpAccess, capture, where_of, where_text

SECTOR_BYTES = 32
LINE_BYTES = 128


@dataclass(frozen=True)
class CoalescingMap:
    kernel: str
    line: int                      # Python source line
    text: str
    instr: int                     # PTX instruction index
    mnemonic: str
    block: int
    warp: int
    occurrence: int
    lane: np.ndarray               # active lanes
    address: np.ndarray            # each lane's byte address (uint64)
    access_bytes: int              # bytes per lane
    sector: np.ndarray             # each lane's sector: index into `sectors`
    cache_line: np.ndarray         # each lane's line: index into `lines`
    sectors: np.ndarray            # distinct sector base addresses touched, ascending
    lines: np.ndarray              # distinct 128-byte line base addresses touched, ascending
    requests: int = 1              # the warp instruction is one request
    copy: int = 0                  # which of the line's global PTX instructions (an unrolled loop: one per copy)
    copies: int = 1
    executions: int = 1            # how many times this warp executed the instruction

    @property
    def n_sectors(self) -> int:
        return len(self.sectors)

    @property
    def n_lines(self) -> int:
        return len(self.lines)

    @property
    def efficiency(self) -> float:
        """Distinct bytes requested / bytes in the sectors moved (1.0: every byte used)."""
        span = (self.address[:, None] + np.arange(self.access_bytes, dtype=np.uint64)).ravel()
        return len(np.unique(span)) / (SECTOR_BYTES * self.n_sectors) if self.n_sectors else 0.0


def from_access(a: WarpAccess, kernel: str = "", text: str = "", cap: Capture | None = None) -> CoalescingMap:
    """The coalescing map of one captured global access (`cap`: its capture, for which copy
    of the line and which execution it is)."""
    if a.space != "global":
        raise ValueError(f"coalescing map: instruction {a.instr} ({a.mnemonic}, line {a.line}) accesses {a.space} "
                         "memory, not global")
    addr = a.offsets.astype(np.uint64)
    sec = addr // np.uint64(SECTOR_BYTES) * np.uint64(SECTOR_BYTES)
    lin = addr // np.uint64(LINE_BYTES) * np.uint64(LINE_BYTES)
    sectors, sector_of = np.unique(sec, return_inverse=True)
    lines, line_of = np.unique(lin, return_inverse=True)
    return CoalescingMap(kernel, a.line, text, a.instr, a.mnemonic, a.block, a.warp, a.occurrence,
                         a.lanes.astype(np.int64), addr, a.access_bytes, sector_of, line_of, sectors, lines, 1,
                         *where_of(a, cap))


def coalescing_maps(cap: Capture, line: int, instr: int | None = None) -> list[CoalescingMap]:
    """Every captured execution of the global accesses of `line` (all warps, all occurrences)."""
    return [from_access(a, cap.kernel_name, cap.source(a.line), cap) for a in cap.select(line, "global", instr)]


def worst_access(cap: Capture) -> tuple[int, int]:
    """(source line, PTX instruction) of the global access touching the most sectors per
    request (a line such as `b[x, y] = a[y, x]` has a coalesced load and a strided store)."""
    instrs = sorted({(a.line, a.instr) for a in cap.accesses if a.space == "global" and a.line})
    if not instrs:
        raise ValueError(f"coalescing map: {cap.kernel_name} makes no global-memory access in blocks {cap.blocks}")

    def key(li):
        maps = coalescing_maps(cap, *li)
        return sum(m.n_sectors for m in maps) / len(maps)
    return max(instrs, key=key)


def sectors(a: WarpAccess) -> int:
    """The distinct 32-byte sectors an access touches (`from_access(a).n_sectors` without the map)."""
    return len(np.unique(a.offsets.astype(np.uint64) // np.uint64(SECTOR_BYTES)))


def coalescing_map(subject, line: int | None = None, *, block: int = 0, warp: int | None = None,
                   occurrence: int | None = None, instr: int | None = None, gpu=None) -> CoalescingMap:
    """The coalescing map of `line`'s global access by warp `warp` of block `block` (the
    `occurrence`-th such access the warp executes; `instr` picks one PTX instruction where
    the line has several, e.g. a load and a store). `subject`: a Capture, or anything
    `capture()` takes. `line=None`: the access with the most sectors per request."""
    cap = subject if isinstance(subject, Capture) else capture(subject, (block,), gpu)
    hit = cap.pick("coalescing map", "global", worst_access, line, block, warp, occurrence, instr, cost=sectors)
    return from_access(hit, cap.kernel_name, cap.source(hit.line), cap)


def plot(maps, path=None):
    """A Figure with one panel per map (a CoalescingMap or a list, side by side)."""
    maps = [maps] if isinstance(maps, CoalescingMap) else list(maps)
    width = max(6.0, min(16.0, 2.2 + 1.1 * max(m.n_lines for m in maps)))
    height = 5.2 * len(maps)
    fig, axes = _mpl.figure(len(maps), 1, figsize=(width, height), dpi=120)
    fig.subplots_adjust(left=0.9 / width, right=1 - 0.3 / width, bottom=1.45 / height, top=1 - 0.75 / height,
                        hspace=0.6)      # fixed: no layout pass
    for ax, m in zip(axes[:, 0], maps):
        nl = m.n_lines
        x0 = m.cache_line * LINE_BYTES + (m.address - m.lines[m.cache_line]).astype(np.int64)
        li = np.searchsorted(m.lines, m.sectors, "right") - 1
        touched = set((li * 4 + ((m.sectors - m.lines[li]) // np.uint64(SECTOR_BYTES)).astype(np.int64)).tolist())
        ax.broken_barh([(k * SECTOR_BYTES, SECTOR_BYTES) for k in sorted(touched)], (-0.5, 32),     # moved sectors
                       facecolors="#f4c06a", edgecolor="none", zorder=0)
        edges = np.arange(0, nl * LINE_BYTES + 1, SECTOR_BYTES)
        line_edge = edges % LINE_BYTES == 0
        ax.vlines(edges[~line_edge], -0.5, 31.5, colors="0.7", linewidth=0.5, zorder=1)
        ax.vlines(edges[line_edge], -0.5, 31.5, colors="0.2", linewidth=1.4, zorder=1)
        w = max(m.access_bytes, nl * LINE_BYTES / 160)        # a 4-byte mark stays visible among 32 lines
        ax.barh(m.lane, np.full(len(m.lane), w), left=x0 + (m.access_bytes - w) / 2, height=0.7, color="#1f5fa8",
                zorder=2)
        ax.set_xlim(0, nl * LINE_BYTES)
        ax.set_ylim(31.5, -0.5)
        _mpl.ticks(ax.yaxis, range(0, 32, 4))
        ax.set_ylabel("lane")
        every = max(1, -(-nl // 16))                          # at most 16 labels, ~8 pt each
        shown = range(0, nl, every)
        ticks = [k * LINE_BYTES + LINE_BYTES / 2 for k in shown]
        base = int(m.lines[0])
        _mpl.ticks(ax.xaxis, ticks, [f"+{int(m.lines[k]) - base:,} B" if k else f"{base:#x}" for k in shown],
                   rotation=90 if len(ticks) > 6 else 0, fontsize=8)
        ax.set_xlabel("128-byte lines touched (only those; their offsets from the first; shaded: 32-byte sectors moved)")
        ax.set_title(f"{m.kernel}, line {m.line}: {m.n_sectors} sector{'s' * (m.n_sectors != 1)}, {nl} line"
                     f"{'s' * (nl != 1)}, {m.requests} request; {100 * m.efficiency:.0f}% of the bytes moved are "
                     f"used\n{_mpl.short(m.text)}\n{where_text(m)}", fontsize=9)
    _mpl.save(fig, path)
    return fig
