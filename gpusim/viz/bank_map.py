"""Bank map: for one shared-memory access of one warp, a lanes x banks grid showing the
4-byte word each lane touches and the wavefront (replay) that serves it.

Data: the per-lane byte offsets the functional core computed for that instruction
(`gpusim.viz.capture`), taken relative to the block's shared memory. Word w lives in
bank w % 32; lanes reading the same word share it (a broadcast); the k-th distinct
word of a bank is served by wavefront k, so the warp needs as many wavefronts as the
busiest bank has distinct words. That count is exactly what the load/store unit adds
to `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum`
(`gpusim.functional.shared_banks.shared_wavefronts`), and wavefronts - 1 per request is
`l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum`. An 8- or 16-byte
access touches 2 or 4 consecutive words per lane, each drawn in its own bank column, and is
served in lane groups (16 lanes at 8 B, 8 at 16 B) one after another, a load's two neighbouring
groups in one wavefront where together they need one (a broadcast LDS.128: 2 wavefronts, no
conflict), as an H200 counts them (`validate/wide_shared_probe.py`); its conflicts are the
wavefronts beyond one a group served.
Which conflicting word goes in which replay is not documented by NVIDIA; the order here
(ascending word) is a choice, the number of wavefronts is not.

`ldmatrix`/`stmatrix` are served one 8 x 8 matrix at a time: each phase takes the 8 row
addresses (16 bytes each) of 8 lanes, so a conflict-free `.x4` takes 4 wavefronts and rows
of one matrix that share banks cost more within their phase (the maps number the wavefronts
phase after phase and draw the phase boundaries); the count equals
`sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum`'s share of the instruction.

`padding_comparison()` draws the classic pair: the column read of a 32x32 float tile
(stride 32 words: all lanes in one bank, 32 wavefronts) next to the same read of a
32x33 padded tile (1 wavefront), from `programs/transpose_shared.py` and
`transpose_padded.py`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.functional.shared_banks import BANKS, lane_group, shared_wavefronts
from gpusim.viz import _mpl
from gpusim.viz.capture import Capture, WarpAccess, capture, where_of, where_text


@dataclass(frozen=True)
class BankMap:
    kernel: str
    line: int                      # Python source line
    text: str                      # its source text
    instr: int                     # PTX instruction index
    mnemonic: str
    block: int                     # linear block id
    warp: int                      # warp within the block
    occurrence: int                # k-th execution of the instruction by this warp
    lane: np.ndarray               # per word touched: the lane (one entry per 4-byte word)
    word: np.ndarray               # 4-byte word index in the block's shared memory
    bank: np.ndarray               # word % 32
    wavefront: np.ndarray          # the wavefront serving that word (0-based)
    wavefronts: int                # wavefronts the warp's access takes (1 = conflict-free)
    grid_wavefront: np.ndarray     # (32 lanes, 32 banks): wavefront serving the lane in that bank, -1 = none
    grid_word: np.ndarray          # (32 lanes, 32 banks): word the lane touches there, -1 = none
    copy: int = 0                  # which of the line's shared PTX instructions (an unrolled loop: one per copy)
    copies: int = 1
    executions: int = 1            # how many times this warp executed the instruction
    lanes_per_phase: int = 32      # lanes served together (ldmatrix/stmatrix: 8 row addresses per phase)
    phase_wavefronts: tuple[int, ...] = ()   # wavefronts of each phase (ldmatrix: each 8 x 8 matrix)
    served: int = 1                # units served (a wide access's lane groups, a load's merged pair as one)

    @property
    def bank_conflicts(self) -> int:
        """Extra wavefronts over one per request (a wide access: one per lane group it is served
        in), Nsight's bank-conflict count."""
        return self.wavefronts - self.served

    @property
    def active_lanes(self) -> int:
        return int(len(np.unique(self.lane)))

    @property
    def ideal_wavefronts(self) -> int:
        """The fewest wavefronts these words could take (each phase's distinct words over the 32
        banks): 1 for a 4-byte access, 4 for 16 bytes per lane (an LDS.128, a cp.async, each
        phase of an ldmatrix.x4 one)."""
        phase = self.lane // self.lanes_per_phase
        return sum(-(-len(np.unique(self.word[phase == p])) // BANKS) for p in np.unique(phase).tolist())

    def conflict_text(self) -> str:
        """'conflict-free' or 'N-way conflict' against `ideal_wavefronts`."""
        ideal = max(self.ideal_wavefronts, 1)
        if self.wavefronts <= ideal:
            return "conflict-free"
        ways = self.wavefronts / ideal
        return f"{ways:.0f}-way conflict" if ways == int(ways) else f"{ways:.1f}-way conflict"


def from_access(a: WarpAccess, kernel: str = "", text: str = "", cap: Capture | None = None) -> BankMap:
    """The bank map of one captured shared-memory access (`cap`: the capture it is from, for
    which copy of the line and which execution it is)."""
    where = where_of(a, cap)
    if a.space != "shared":
        raise ValueError(f"bank map: instruction {a.instr} ({a.mnemonic}, line {a.line}) accesses {a.space} "
                         "memory, not shared")
    nwords = max(1, a.access_bytes // 4)
    word = (a.offsets >> np.uint64(2)).astype(np.int64)
    lane = a.lanes.astype(np.int64)
    if nwords > 1:
        word = (word[:, None] + np.arange(nwords)).ravel()
        lane = np.repeat(lane, nwords)
    bank = word & (BANKS - 1)
    wavefront = np.empty(len(word), np.int64)
    group, merge = _groups(a)
    phase = lane // group
    per_phase = []
    served = 0
    phases = np.unique(phase).tolist()
    for p in phases:                                    # phases are served one after another
        before = sum(per_phase)
        inp = phase == p
        if merge and p % 2 and p - 1 in phases and per_phase[-1] == 1 and _most_per_bank(word[inp | (phase == p - 1)]) <= 1:
            wavefront[inp] = before - 1                 # a load's pair of groups that together need one
            continue
        served += 1
        for b in np.unique(bank[inp]).tolist():
            sel = np.flatnonzero(inp & (bank == b))
            _, rank = np.unique(word[sel], return_inverse=True)
            wavefront[sel] = before + rank
        per_phase.append(int(wavefront[inp].max()) + 1 - before)
    grid_wf = np.full((32, BANKS), -1, np.int64)
    grid_word = np.full((32, BANKS), -1, np.int64)
    grid_wf[lane, bank] = wavefront
    grid_word[lane, bank] = word
    return BankMap(kernel, a.line, text, a.instr, a.mnemonic, a.block, a.warp, a.occurrence, lane, word, bank,
                   wavefront, sum(per_phase), grid_wf, grid_word, *where, group,
                   tuple(per_phase) if group < 32 else (), served if merge is not None else 1)


def _groups(a: WarpAccess) -> tuple[int, bool | None]:
    """(lanes served together, whether two neighbouring groups that together need one wavefront
    share it): an ldmatrix's phases; a wide plain access's lane groups, merged for a load
    (`gpusim.functional.shared_banks.shared_wavefronts`, as an H200 counts); merge None: one
    request (a 4-byte access, an ldmatrix)."""
    group = lane_group(a.access_bytes, BANKS)
    if a.phase_lanes < 32 or a.is_atomic or group >= 32:
        return a.phase_lanes, None
    return group, not a.is_store


def _most_per_bank(words: np.ndarray) -> int:
    distinct = np.unique(words)
    return int(np.bincount(distinct & (BANKS - 1)).max()) if len(distinct) else 0


def bank_maps(cap: Capture, line: int, instr: int | None = None) -> list[BankMap]:
    """Every captured execution of the shared accesses of `line` (all warps, all occurrences)."""
    return [from_access(a, cap.kernel_name, cap.source(a.line), cap) for a in cap.select(line, "shared", instr)]


def worst_access(cap: Capture) -> tuple[int, int]:
    """(source line, PTX instruction) of the shared access with the most wavefronts per
    request (loads before stores on a tie: the read of a tile is where padding matters)."""
    instrs = sorted({(a.line, a.instr) for a in cap.accesses if a.space == "shared" and a.line})
    if not instrs:
        raise ValueError(f"bank map: {cap.kernel_name} makes no shared-memory access in blocks {cap.blocks}")

    def key(li):
        runs = cap.select(li[0], "shared", li[1])
        return (sum(wavefronts(a) for a in runs) / len(runs), not cap.infos[li[1]].is_store)
    return max(instrs, key=key)


def wavefronts(a: WarpAccess) -> int:
    """`from_access(a).wavefronts` without the map: the most distinct words any bank holds
    (summed over the phases of an ldmatrix/stmatrix or the lane groups of a wide access)."""
    if a.phase_lanes >= 32 and not a.is_atomic and lane_group(a.access_bytes, BANKS) < 32:
        return int(shared_wavefronts(np.zeros(len(a.lanes), np.int64), a.offsets, a.access_bytes, 1,
                                     lanes=a.lanes.astype(np.int64), store=a.is_store)[0])
    word = (a.offsets >> np.uint64(2)).astype(np.int64)
    phase = a.lanes.astype(np.int64) // a.phase_lanes
    nwords = max(1, a.access_bytes // 4)
    if nwords > 1:
        word = (word[:, None] + np.arange(nwords)).ravel()
        phase = np.repeat(phase, nwords)
    return sum(_most_per_bank(word[phase == p]) for p in np.unique(phase).tolist())


def bank_map(subject, line: int | None = None, *, block: int = 0, warp: int | None = None,
             occurrence: int | None = None, instr: int | None = None, gpu=None) -> BankMap:
    """The bank map of `line`'s shared access by warp `warp` of block `block`: the
    `occurrence`-th shared access of that line the warp executes (a loop the compiler
    unrolled gives one PTX instruction per copy; `instr` picks one of them); `warp` or
    `occurrence` None: the execution with the most wavefronts (the representative one: a
    tree reduction's 16-way step, not its 2-way first). `subject`: a Capture, or anything
    `capture()` takes. `line=None`: the most conflicted shared access (`worst_access`)."""
    cap = subject if isinstance(subject, Capture) else capture(subject, (block,), gpu)
    hit = cap.pick("bank map", "shared", worst_access, line, block, warp, occurrence, instr, cost=wavefronts)
    return from_access(hit, cap.kernel_name, cap.source(hit.line), cap)


def padding_comparison(gpu="h100", path=None):
    """The column read of transpose_shared (32 wavefronts) beside transpose_padded's (1)."""
    maps = [bank_map(name, gpu=gpu) for name in ("transpose_shared", "transpose_padded")]
    return plot(maps, path)


def plot(maps, path=None, *, words: bool = True):
    """A Figure with one lanes x banks panel per map (a BankMap or a list of them, side by
    side): each cell coloured by the wavefront serving it, labelled with the word."""
    from matplotlib.colors import ListedColormap  # lazy: matplotlib, only when a figure is drawn
    maps = [maps] if isinstance(maps, BankMap) else list(maps)
    fig, axes = _mpl.figure(1, len(maps), figsize=(6.2 * len(maps), 6.4), dpi=130)
    top = 0.87 if any(m.phase_wavefronts for m in maps) else 0.9       # a fourth title line for ldmatrix phases
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.08, top=top, wspace=0.25)     # fixed: no layout pass
    for ax, m in zip(axes[0], maps):
        n = max(m.wavefronts, 1)
        colours = ListedColormap(_palette(n))
        img = np.ma.masked_less(m.grid_wavefront, 0)
        cmap = colours.with_extremes(bad="white")
        im = ax.imshow(img, cmap=cmap, vmin=-0.5, vmax=n - 0.5, aspect="equal", interpolation="nearest")
        if words:                                       # each lane's word: beside its cell where the next cells are free
            for lane, bank in zip(*np.nonzero(m.grid_word >= 0)):
                if bank + 3 < BANKS and (m.grid_word[lane, bank + 1:bank + 4] < 0).all():
                    ax.text(bank + 0.6, lane, f"word {m.grid_word[lane, bank]}", ha="left", va="center",
                            fontsize=6.5, color="0.15", zorder=3)
                elif bank >= 3 and (m.grid_word[lane, bank - 3:bank] < 0).all():
                    ax.text(bank - 0.6, lane, f"word {m.grid_word[lane, bank]}", ha="right", va="center",
                            fontsize=6.5, color="0.15", zorder=3)
                else:
                    ax.text(bank, lane, str(m.grid_word[lane, bank]), ha="center", va="center", fontsize=4.5,
                            color="white" if n > 1 and m.grid_wavefront[lane, bank] < n / 2 else "black")
        _mpl.ticks(ax.xaxis, range(0, BANKS, 4))
        _mpl.ticks(ax.yaxis, range(0, 32, 4))
        edges = np.arange(-0.5, 32)                     # the cell grid: two line collections, not 66 minor ticks
        ax.hlines(edges, -0.5, BANKS - 0.5, colors="0.85", linewidth=0.3, zorder=1.5)
        ax.vlines(np.arange(-0.5, BANKS), -0.5, 31.5, colors="0.85", linewidth=0.3, zorder=1.5)
        ax.set_xlabel("bank (word % 32)")
        ax.set_ylabel("lane")
        title = [f"{m.kernel}, line {m.line}: {m.wavefronts} wavefront{'s' * (m.wavefronts != 1)} "
                 f"({m.conflict_text()})", _mpl.short(m.text), where_text(m)]
        if m.phase_wavefronts:                          # ldmatrix/stmatrix: one 8-row matrix per phase
            what = ("row addresses (one 8 x 8 matrix)" if m.mnemonic.startswith(("ldmatrix", "stmatrix"))
                    else f"lanes of {128 // m.lanes_per_phase} B")       # a wide access's lane groups
            title.insert(1, f"{m.lanes_per_phase} {what} per phase, wavefronts: "
                            f"{' + '.join(map(str, m.phase_wavefronts))}")
            ax.hlines(np.arange(m.lanes_per_phase, 32, m.lanes_per_phase) - 0.5, -0.5, BANKS - 0.5, colors="0.25",
                      linewidth=1.2, zorder=2.5)
        longest = max(len(t) for t in title)
        ax.set_title("\n".join(title), fontsize=max(6.0, min(9.0, 9.0 * 84 / longest)))
        cb = fig.colorbar(im, ax=ax, shrink=0.7, ticks=_ticks(n))
        cb.set_label("wavefront (replay) serving the word, from 0")
    _mpl.save(fig, path)
    return fig


def _palette(n: int):
    from matplotlib import colormaps  # lazy: matplotlib, only when a figure is drawn
    if n == 1:
        return [colormaps["viridis"](0.55)]
    return [colormaps["viridis"](k / (n - 1)) for k in range(n)]


def _ticks(n: int) -> list[int]:
    return list(range(n)) if n <= 8 else list(range(0, n, max(1, n // 8)))
