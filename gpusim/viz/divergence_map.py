"""Divergence map: for the warps of one thread block, every executed instruction as a
column of 32 lane cells, active or idle, the cells coloured by the branch path the warp
is on, with its reconvergence points marked.

Data: the active mask of every step of the captured block (`gpusim.viz.capture`), each
step one basic block executed by a warp, expanded to its PTX instructions. The sum of
the active lanes over a line's cells is that line's `gpusim__ptx_thread_inst_executed.sum`
for the block (the functional core's counts; ptxas may predicate a short branch, which
the SASS-level `smsp__thread_inst_executed.sum` then counts at full width).

Paths: a warp runs converged on path 0. When a step runs with fewer lanes than the
warp's current path (a divergent branch: the IPDOM stack of
`gpusim.functional.warps` ran one side first), a new path starts, named by the source
line of the basic block it starts at, so the two sides of an if/else get two colours and
every iteration of a data-dependent loop the same one. When lanes rejoin (a step's mask covers an
enclosing path's lanes again) that is a reconvergence point, drawn as a black bar.
Lanes that exited stay idle and do not count as divergence.

Predicated branches: where ptxas compiled a branch side without a jump (its PTX block is
home to no SASS block: `if_converted`), the warp does not diverge on the GPU; it issues the
side to every lane of the enclosing path with the others' guard predicate false. Those
lanes are drawn "predicated off" (pink), not idle (grey): issued, at the cost of a full
warp instruction, doing nothing (Nsight's `smsp__thread_inst_executed_pred_on`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim import api
from gpusim.viz import _mpl
from gpusim.viz.capture import Capture, capture, sample_blocks, subject_of

IDLE, PAD = -1, -2
PRED_OFF = "#f2b8b5"          # a lane issued an instruction with its guard predicate false


@dataclass(frozen=True)
class Path:
    id: int
    start_bb: int              # first basic block seen starting the path (-1: converged)
    line: int                  # source line of that block's first instruction
    text: str


@dataclass(frozen=True)
class DivergenceMap:
    kernel: str
    block: int                 # linear thread-block id
    warps: tuple[int, ...]     # warps within the block, one row each
    line: int | None           # only this source line's instructions (None: all)
    instr: np.ndarray          # (warps, slots) PTX instruction index, -1 past the warp's end
    src_line: np.ndarray       # (warps, slots) source line of the instruction
    mask: np.ndarray           # (warps, slots) active lanes, uint32
    path: np.ndarray           # (warps, slots) path id, PAD past the warp's end
    reconverge: np.ndarray     # (warps, slots) True where lanes rejoined at this instruction
    paths: tuple[Path, ...]
    why: str = ""              # how the block was chosen: 'chosen', 'the most divergent of 8 sampled blocks', ...
    issued: np.ndarray | None = None   # (warps, slots) lanes the SASS issues to: the enclosing path's where
    #                                    ptxas predicated the branch (`if_converted`), else `mask`

    @property
    def predicated_off(self) -> np.ndarray:
        """(warps, slots, 32) True where a lane is issued the instruction with its predicate off."""
        if self.issued is None:
            return np.zeros(self.mask.shape + (32,), bool)
        off = self.issued & ~self.mask
        return ((off[..., None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)

    @property
    def active(self) -> np.ndarray:
        """(warps, slots, 32) True where the lane executed the instruction."""
        return ((self.mask[..., None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)

    @property
    def active_lanes(self) -> np.ndarray:
        """(warps, slots) active lanes per executed instruction (0 past the end)."""
        return np.bitwise_count(self.mask).astype(np.int64)

    def lanes_on_path(self, path_id: int) -> set[int]:
        """The distinct active-lane counts of the cells on one path."""
        sel = self.path == path_id
        return set(self.active_lanes[sel].tolist())

    def path_at_line(self, line: int) -> set[int]:
        """Path ids of the cells of source line `line`."""
        return set(self.path[(self.src_line == line) & (self.path != PAD)].tolist())


def divergence_map(subject, line: int | None = None, *, block: int | None = None, warps=None,
                   gpu=None) -> DivergenceMap:
    """The divergence map of `warps` (default: all) of thread block `block`; `line` keeps
    only the instructions of that source line. `subject`: a Capture or anything
    `capture()` takes. `block=None`: the most divergent block (`Capture.block_efficiency`)
    of those captured, or, capturing here, of `sample_blocks` of the launch."""
    if isinstance(subject, Capture):
        cap = subject
    else:
        s = subject_of(subject, gpu)
        if block is None:
            n = api.prepare(s.kernel, s.grid, s.block, s.args, s.gpu, s.shared_bytes).geometry.nblocks
            cap = capture(s, sample_blocks(n))
        else:
            cap = capture(s, (block,))
    block, why = choose_block(cap, block)
    dk = cap.decoded
    wpc = cap.prepared.geometry.warps_per_block
    launched_last = cap.prepared.geometry.threads_per_block - 32 * (wpc - 1)
    warps = tuple(range(wpc)) if warps is None else tuple(int(w) for w in warps)
    converted = if_converted(cap)
    rows = {w: ([], [], [], [], []) for w in warps}         # instr, mask, path, reconverge, issued
    stacks = {w: [((1 << launched_last) - 1 if w == wpc - 1 and launched_last < 32 else 0xFFFFFFFF, 0)]
              for w in warps}
    path_ids: dict[int, int] = {}
    paths = [Path(0, -1, 0, "converged")]
    for st in cap.steps:
        if st.block != block or st.warp not in rows:
            continue
        stack = stacks[st.warp]
        popped = 0
        while len(stack) > 1 and (st.mask & ~stack[-1][0]) != 0:
            stack.pop()
            popped += 1
        if st.mask == stack[-1][0]:
            pid = stack[-1][1]
            rejoin = popped > 0
        else:                                               # fewer lanes than the enclosing path: a branch side
            ln = dk.infos[dk.blocks[st.bb].first].line
            key = ln or -1 - st.bb                          # one path per source line the side starts at
            pid = path_ids.get(key)
            if pid is None:
                pid = path_ids[key] = len(paths)
                paths.append(Path(pid, st.bb, ln, cap.source(ln)))
            stack.append((st.mask, pid))
            rejoin = False
        instr, mask, path, rec, issued = rows[st.warp]
        b = dk.blocks[st.bb]
        sent = stack[-2][0] if st.bb in converted and len(stack) > 1 else st.mask    # lanes the SASS issues to
        for k, i in enumerate(range(b.first, b.last)):
            if line is not None and dk.infos[i].line != line:
                continue
            instr.append(i)
            mask.append(st.mask)
            path.append(pid)
            rec.append(rejoin)
            issued.append(sent | st.mask)
            rejoin = False
        live = ~st.exited & 0xFFFFFFFF                      # exited lanes leave every path
        stacks[st.warp] = [(m & live, p) for m, p in stack]
    n = max((len(r[0]) for r in rows.values()), default=0)
    shape = (len(warps), n)
    out_instr = np.full(shape, -1, np.int64)
    out_mask = np.zeros(shape, np.uint32)
    out_path = np.full(shape, PAD, np.int64)
    out_rec = np.zeros(shape, bool)
    out_issued = np.zeros(shape, np.uint32)
    for r, w in enumerate(warps):
        instr, mask, path, rec, issued = rows[w]
        k = len(instr)
        out_instr[r, :k], out_mask[r, :k], out_path[r, :k], out_rec[r, :k] = instr, mask, path, rec
        out_issued[r, :k] = issued
    lines = np.array([dk.infos[i].line for i in range(len(dk.infos))] + [0], np.int64)
    return DivergenceMap(cap.kernel_name, block, warps, line, out_instr, lines[out_instr], out_mask, out_path,
                         out_rec, tuple(paths), why, out_issued)


def if_converted(cap: Capture) -> set[int]:
    """PTX blocks ptxas compiled without a branch of their own (`gpusim.frontend.sass`: home to
    no SASS block; their instructions sit predicated in a neighbour's SASS). Empty without
    the SASS tools."""
    try:
        smap = cap.prepared.sass
    except Exception:                                   # recursive kernels (UnsupportedKernel): PTX only
        return set()
    if smap is None:
        return set()
    dk = cap.decoded
    return {b.index for b in dk.blocks if b.last > b.first and b.index not in smap.regions
            and b.index not in smap.unrolled}


def choose_block(cap: Capture, block: int | None) -> tuple[int, str]:
    """(block, how it was chosen): `block` as asked, else the least efficient captured block."""
    if block is not None:
        return block, "chosen"
    eff = cap.block_efficiency()
    if len(cap.blocks) == 1 or not eff:
        return cap.blocks[0], f"block {cap.blocks[0]} of the capture"
    worst = min(eff, key=lambda b: (eff[b], b))
    return worst, f"the most divergent of {len(cap.blocks)} sampled blocks"


def plot(m: DivergenceMap, path=None, *, max_slots: int = 2000):
    """Rows: warps, each 32 lanes tall; columns: the warp's executed instructions in order
    (at most `max_slots`). Active lanes take their path's colour, idle lanes are grey,
    black bars mark reconvergence."""
    from matplotlib.colors import ListedColormap  # lazy: matplotlib, only when a figure is drawn
    from matplotlib.patches import Patch  # lazy: matplotlib, only when a figure is drawn
    nw, n = m.mask.shape
    n = min(n, max_slots)
    img = np.full((nw * 33, n), np.nan)
    palette = _palette(len(m.paths))
    act = m.active[:, :n, :]
    off = m.predicated_off[:, :n, :]
    for r in range(nw):
        block = np.where(act[r].T, m.path[r, :n][None, :].astype(float), -1.0)
        block = np.where(off[r].T, -2.0, block)
        block[:, m.path[r, :n] == PAD] = np.nan
        img[r * 33:r * 33 + 32] = block
    cmap = ListedColormap([PRED_OFF, "#d9d9d9"] + palette).with_extremes(bad="white")
    width = min(18.0, max(7.0, 3.0 + n / 40))
    height = 1.0 + 0.55 * nw + 0.25 * len(m.paths)
    fig, axes = _mpl.figure(1, 1, figsize=(width, height), dpi=120)
    legend_rows = -(-(len(m.paths) + 2) // 3)
    axes_height = height - 0.35 - (0.75 + 0.2 * legend_rows)           # inches
    fig.subplots_adjust(left=0.7 / width, right=1 - 0.2 / width, bottom=(0.75 + 0.2 * legend_rows) / height,
                        top=1 - 0.35 / height)     # fixed (legend below): no layout pass
    ax = axes[0, 0]
    ax.imshow(np.ma.masked_invalid(img), cmap=cmap, vmin=-2.5, vmax=len(m.paths) - 0.5, aspect="auto",
              interpolation="nearest")
    for r in range(nw):
        for s in np.flatnonzero(m.reconverge[r, :n]).tolist():
            ax.plot([s - 0.5, s - 0.5], [r * 33 - 0.5, r * 33 + 31.5], color="black", linewidth=1.2)
    _mpl.ticks(ax.yaxis, [r * 33 + 15.5 for r in range(nw)], [f"warp {w}" for w in m.warps])
    ax.set_xlabel("executed PTX instruction (per warp, in order)")
    scope = f"line {m.line}" if m.line is not None else "all lines"
    eff = m.active_lanes[m.path != PAD].mean() / 32 if (m.path != PAD).any() else 0.0
    chosen = f" ({m.why})" if m.why and m.why != "chosen" and not m.why.startswith("block ") else ""
    poff = m.predicated_off[:, :n, :].sum() / max(1, int(m.active_lanes[m.path != PAD].sum()))
    if poff:
        scope += f" ({poff:.0%} more lanes issued predicated off)"
    ax.set_title(f"{m.kernel}, block {m.block}{chosen}, {scope}: {100 * eff:.0f}% of lanes active over "
                 f"{int((m.path != PAD).sum())} warp instructions", fontsize=10.5)
    handles = [Patch(color="#d9d9d9", label="idle lane (masked off)")]
    if off.any():
        handles.append(Patch(color=PRED_OFF, label="predicated off: ptxas kept no branch, the lane issues and "
                                                   "does nothing"))
    handles += [
        Patch(color=palette[p.id], label="converged" if p.id == 0 else f"path from line {p.line}: "
              f"{_mpl.short(p.text, 40)}") for p in m.paths]
    handles.append(Patch(color="black", label="reconvergence"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.5 / axes_height), ncol=min(3, len(handles)),
              fontsize=8.5, frameon=False)
    _mpl.save(fig, path)
    return fig


def _palette(n: int) -> list:
    from matplotlib import colormaps  # lazy: matplotlib, only when a figure is drawn
    tab = colormaps["tab10"]
    base = ["#3b75af"] + [tab(k % 10) for k in (1, 2, 3, 4, 5, 6, 8, 9)]
    return [base[k % len(base)] for k in range(n)]
