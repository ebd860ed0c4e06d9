"""The L2's write path to DRAM: the ECC-granule cost of partial writes and the write-back
of an evicted dirty line (a unit of `l2.L2Cache`, called by the slices, `l2_slices.py`,
whose entries it reads: sector valid-from times, dirty sector bits, partial byte masks).

What is modelled:
- Write-back: evicting a home line writes its dirty 32-B sectors, burst by burst
  (`dram__bytes_write`: 32 B per dirty sector, as the H200 measures for random 4-byte
  stores, `random_access/write`); a dirty sector with bytes never fetched (a partial
  write) is read first (`dram__bytes_read`, 32 B), merged and written. The
  allocation that evicted it proceeds when the DRAM's write queue took the bursts
  (hbm.py), so a saturated DRAM holds stores back.
  Nothing is written back at kernel end (`flush`): on hardware the L2 keeps dirty lines,
  so `dram__bytes_write.sum` is below the bytes stored.
- Partial writes: a store's 32-bit byte mask per sector; a sector mask that covers part of an
  ECC granule (`l2.ecc_granule_bytes`, the L2 data word) of a sector its home does not hold
  whole costs its slice a second sector of bandwidth (read, merge, write back; transpose_naive's
  4-B stores into lines that left the L2), counted in `gpusim__l2_partial_write_sectors.sum`;
  into a sector held whole it merges in one slot (digit_histogram_local's local stores, H200).
"""
from __future__ import annotations

from gpusim.timing.memory.l2_slices import FULL


def unfetched(ent: list, k: int, spl: int) -> bool:
    """Whether sector k of a line (of `spl` sectors) holds bytes that were never fetched
    (written in part)."""
    pm = ent[spl + 1]
    return ent[k] is None or bool(pm and k in pm and pm[k][0] != FULL)


class WriteBack:
    """`partial_cost` of a write's byte masks; `write_back` of an evicted dirty line."""

    def __init__(self, spec, hbm):
        l2 = spec.l2
        self.hbm = hbm
        self.sector_bytes = l2.sector_bytes
        self.sectors_per_line = l2.line_bytes // l2.sector_bytes
        self.line_shift = self.sectors_per_line.bit_length() - 1
        self.granule_bytes = l2.ecc_granule_bytes
        self._whole: dict[int, bool] = {0: True, FULL: True}     # byte mask -> covers whole ECC granules
        self.reset_counters()

    def reset_counters(self) -> None:
        self.dirty_evictions = 0         # bursts written back
        self.rmw_bursts = 0              # ... of them read first
        self.partial_write_sectors = 0   # written sectors that cover part of an ECC granule

    def partial_cost(self, masks: list, i: int, j: int, lst: list, ent) -> int:
        """Extra slice bytes for the sectors lst[i:j] (byte masks masks[i:j]) that cover part
        of an ECC granule and are not wholly valid at their home (`ent`, the home line's
        entry, None where absent): a partial write to a sector the slice holds merges there
        in one slot (digit_histogram_local, H200: 133 M lts write sectors of 4-B local stores
        into L2-resident lines at 0.98 a slice cycle, the write rate of whole sectors)."""
        whole = self._whole
        extra = 0
        mask = self.sectors_per_line - 1
        for idx in range(i, j):
            m = masks[idx]
            w = whole.get(m)
            if w is None:
                w = whole[m] = _covers_whole_granules(m, self.granule_bytes)
            if not w and (ent is None or unfetched(ent, lst[idx] & mask, self.sectors_per_line)):
                extra += self.sector_bytes
                self.partial_write_sectors += 1
        return extra

    def write_back(self, t: float, line: int, ent: list) -> float:
        """Evicting a dirty home line: each burst with dirty bytes is written; a burst with
        invalid bytes is read first (read-modify-write at the DRAM's granularity). Returns
        when DRAM took the last burst (the way is free then)."""
        hbm = self.hbm
        spl = self.sectors_per_line
        bsh = hbm.burst_shift
        per = 1 << bsh
        dirty = ent[spl]
        first = line << self.line_shift
        done = t
        for base in range(0, spl, per):
            if not (dirty >> base) & ((1 << per) - 1):
                continue
            self.dirty_evictions += 1
            burst = (first + base) >> bsh
            written = partial = 0
            for kk in range(base, base + per):
                if dirty >> kk & 1:
                    written += 1
                    partial += unfetched(ent, kk, spl)
            if partial:                                 # the dirty sectors with bytes never fetched
                self.rmw_bursts += 1
                a = hbm.rmw_burst(t, burst, partial, written)[0]
            else:
                a = hbm.write_burst(t, burst, written)
            if a > done:
                done = a
        return done


def _covers_whole_granules(m: int, granule: int) -> bool:
    """Whether byte mask m (32 bits) covers each `granule`-byte group wholly or not at all."""
    g = (1 << granule) - 1
    for b in range(0, 32, granule):
        x = (m >> b) & g
        if x and x != g:
            return False
    return True
