"""Reads waiting in an L2 slice's queue (a unit of `l2.L2Cache`): a read that arrives while an
earlier read of the same line's sectors still waits at that slice shares that read's lookup and
data instead of taking the slice's bandwidth again.

What is measured (data/measurements/crossbar_probe_h100_run3.json, `python -m
validate.tensor_timing.crossbar_probe`): one block a SM pulls 64 KiB a round with cp.async.cg
from L2-resident data. When every SM reads a region of its own, 132 SMs take 2,151 cycles a round
(4.0 KB a cycle from the L2 in all) and Nsight counts one L2 lookup per sector read
(lts__t_sectors_op_read / requested = 1.01); when every SM reads the same region they take 766
(11.0 KB a cycle) and the L2 looks up 0.30 of the sectors requested, while the crossbar still
delivers every byte to every SM (l1tex__m_xbar2l1tex_read_bytes = requested). So the slices'
bandwidth limits lookups, not bytes delivered, and requests for a sector already on its way
through a slice are served by that lookup. The tensor GEMMs show the same: lookups below the
bytes delivered where blocks of a wave read the same tiles (TMA + wgmma 2048^3 on the H100: 0.53
lookups a sector delivered; Triton's cp.async matmul 0.75).

The model: a read (all its sectors of one line) that arrives at its near slice at t, when another
SM's read of the same line covering those sectors was booked there to start after t, takes that
read's ready time and books nothing (not counted as an L2 lookup: `gpusim__l2_queued_read_sectors.sum`
counts them). A read that starts at once (no queue) leaves nothing to join. An SM's own reads
never join each other: a cp.async that reads a sector twice (`copy_counts.copy_pieces`) is looked
up twice on the H100 (lts__t_sectors_op_read 1.42-1.55 times the sectors copied, the same run's
`pitch80` kernel). Writes and atomics never join. `l2.join_queued_reads = false` turns it off.

Not modelled: the queue's depth (any read still waiting can be joined), joining a read that
covers only some of the sectors (such a read is booked in full), joining at the far partition's
home slice (a far read joins at its near slice only).
"""
from __future__ import annotations

PRUNE_AT = 4096                         # entries a slice keeps before those that started are dropped


class QueuedReads:
    """`join(si, line, want, t, sm)`: the ready time of another SM's queued read of slice si
    covering sector mask `want` of `line`, or None; `queued(si, line, want, ts, t, ready, sm)`:
    note SM sm's read booked at t to start at ts (kept only if it waits, ts > t)."""

    def __init__(self, slices: int, enabled: bool):
        self.enabled = enabled
        self.waiting: list[dict] = [{} for _ in range(slices)]
        self.reset_counters()

    def join(self, si: int, line: int, want: int, t: float, sm: int) -> float | None:
        w = self.waiting[si].get(line)
        if w is None or w[0] <= t or w[1] & want != want or w[3] == sm:
            return None
        self.joined_sectors += bin(want).count("1")
        return w[2]

    def queued(self, si: int, line: int, want: int, ts: float, t: float, ready: float, sm: int) -> None:
        if ts <= t:
            return
        d = self.waiting[si]
        if len(d) >= PRUNE_AT:
            for k in [k for k, w in d.items() if w[0] <= t]:
                del d[k]
        d[line] = (ts, want, ready, sm)

    def flush(self) -> None:
        """Kernel boundary: nothing is waiting any more."""
        for d in self.waiting:
            d.clear()

    def reset_counters(self) -> None:
        self.joined_sectors = 0
