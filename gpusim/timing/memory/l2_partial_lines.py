"""The L2's limit on lines with partly written sectors (a unit of `l2.L2Cache`, called by the
slices, `l2_slices.py`, whose entries it reads and completes).

What is measured ([MEAS-PARTIAL], data/measurements/dram_write_h200_run4.json, `python -m
validate.dram_write_probe`, H200; docs/mechanisms_24.md section 49): 2^K threads, one 4-byte store
each into its own 128-B line of a region the L2 holds, read nothing from DRAM up to 2^15 lines; at
2^16 / 2^17 / 2^18 / 2^19 lines 2.9 / 52.9 / 199.9 / 457.3 K sectors are read and about as many
written during the launch. So the L2 keeps some 43-75 thousand lines with partly written sectors
(counted in lines: four partial sectors a line keep about as many as one) and completes every
further one by a read-modify-write at the DRAM.

The model: each home slice keeps an LRU of its lines with partly written sectors, at most
`l2.partial_lines_per_slice` (0: no limit, each completed when evicted, `l2_writeback.py`). A write
that leaves one more line partial beyond the limit completes the least recently written: each
burst holding a partial sector is read (its partial sectors) and its dirty sectors written
(`HBM.rmw_burst`), and the line stays, those sectors whole, valid when the read is back, and clean;
the write that caused it is done when the DRAM's write queue took the completion, as an allocation
waits for its victim's write-back. A line whose partial sectors its own later stores complete, or
a read fills, or that is evicted, leaves the LRU. The sectors a completion writes are no longer
the stand-ins' dirty sectors (`L2Slices.dirtied_sectors`: they are not written back again).
Counter: `gpusim__l2_completed_partial_bursts.sum`.

Not modelled: which lines the GPU completes first (the least recently written here), and any cost
of a completion at its slice.
"""
from __future__ import annotations

from collections import OrderedDict

FULL = 0xFFFFFFFF                        # every byte of a 32-B sector (l2_slices.FULL)


class PartialLines:
    """`note` a write's partial masks, `forget` a line that is whole again or evicted; the
    completions (`completed_bursts`) it makes. `slices`: the L2Slices whose dirty-sector counts
    a completion lowers."""

    def __init__(self, spec, slices, hbm):
        self.limit = spec.l2.partial_lines_per_slice
        self.lines = [OrderedDict() for _ in range(slices.slices)]   # per home slice: line -> entry, LRU first
        self.slices = slices
        self.hbm = hbm
        self.sectors_per_line = slices.sectors_per_line
        self.reset_counters()

    def reset_counters(self) -> None:
        self.completed_bursts = 0                # bursts of partial lines completed at the limit

    def note(self, ent: list, pm, line: int, si: int, ts: float) -> float:
        """A write at home slice `si` at ts left the line's entry with partial byte masks `pm`
        (None: none): the line becomes the slice's most recently written partial line, and
        where that exceeds the limit, the least recently written one is completed. Returns
        when the write is done: ts, or when the DRAM's write queue took the completion."""
        d = self.lines[si]
        if pm is not None:
            for e in pm.values():                       # any sector not wholly valid (a loop: hot path)
                if e[0] != FULL:
                    break
            else:
                pm = None
        if pm is None:
            if d:
                d.pop(line, None)
            return ts
        if line in d:
            d.move_to_end(line)
            return ts
        d[line] = ent
        if len(d) > self.limit:
            old, oent = d.popitem(last=False)
            return self._complete(old, oent, ts)
        return ts

    def forget(self, si: int, line: int, ent: list | None = None) -> None:
        """The line (its entry `ent`, where given: only that one) leaves slice si's partial lines."""
        d = self.lines[si]
        if ent is None or d.get(line) is ent:
            d.pop(line, None)

    def _complete(self, line: int, ent: list, ts: float) -> float:
        """Complete a line's partly written sectors by a read-modify-write at the DRAM at ts;
        when the DRAM's write queue took the last write."""
        spl = self.sectors_per_line
        pm = ent[spl + 1]
        hbm = self.hbm
        per = hbm.sectors_per_burst
        d = ent[spl]
        first = line * spl
        done = ts
        for base in range(0, spl, per):
            ks = [k for k in range(base, base + per) if k in pm and pm[k][0] != FULL]
            if not ks:
                continue
            written = [k for k in range(base, base + per) if d >> k & 1]
            a, back = hbm.rmw_burst(ts, (first + base) >> hbm.burst_shift, len(ks), len(written))
            if a > done:
                done = a
            for k in ks:
                del pm[k]
                ent[k] = back if ent[k] is None or ent[k] < back else ent[k]
            for k in written:
                pm.pop(k, None)
                d &= ~(1 << k)
            if written and not ent[spl + 2]:            # written back: no longer the stand-ins' dirty sectors
                self.slices.dirtied_sectors -= len(written)
                self.slices.dirtied_bursts -= 1
            self.completed_bursts += 1
        ent[spl] = d
        if not pm:
            ent[spl + 1] = None
        return done
