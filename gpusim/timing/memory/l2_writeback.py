"""The L2's dirty data: byte masks of partly written sectors, ECC-granule costs of partial
writes, and the write-back of an evicted dirty line (a mixin of `l2.L2Cache`; its entries
are `l2.LRUSet` lists: sector valid-from times, dirty sector bits, partial byte masks).

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
  ECC granule (`l2.ecc_granule_bytes`, the L2 data word) costs its slice a second sector of
  bandwidth (read, merge, write back), counted in `gpusim__l2_partial_write_sectors.sum`.
- Dirty accounting for the stand-ins (`l2_standins.py`): the sectors and DRAM bursts of home
  lines that went from clean to dirty (warm lines, which the whole L2 holds, are not counted).
"""
from __future__ import annotations

from gpusim.timing.memory.l2_partitions import FULL


class WriteBack:
    """Mixin of `L2Cache`: dirty state and write-back (see the module docstring)."""

    def dirty_bytes(self) -> int:
        """Bytes the L2 holds dirty now (what a kernel leaves behind)."""
        spl = self.sectors_per_line
        n = 0
        for sets in self._sets:
            for od in sets:
                for ent in od.values():
                    d = ent[spl]
                    if d:
                        pm = ent[spl + 1]
                        for k in range(spl):
                            if d >> k & 1:
                                n += bin(pm[k][1]).count("1") if pm and k in pm else 32
        return n

    def _partial_cost(self, masks: list, i: int, j: int) -> int:
        """Extra slice bytes for the sectors of masks[i:j] that cover part of an ECC granule."""
        whole = self._whole
        extra = 0
        for idx in range(i, j):
            m = masks[idx]
            w = whole.get(m)
            if w is None:
                w = whole[m] = _covers_whole_granules(m, self._granule)
            if not w:
                extra += self.sector_bytes
                self.partial_write_sectors += 1
        return extra

    def _dirty(self, ent, k: int) -> None:
        spl = self.sectors_per_line
        d = ent[spl]
        if not d >> k & 1:
            if not ent[spl + 2]:
                self._dirtied_sectors += 1
                bsh = self.hbm.burst_shift
                base = (k >> bsh) << bsh
                if not (d >> base) & ((1 << (1 << bsh)) - 1):
                    self._dirtied_bursts += 1
            ent[spl] = d | 1 << k

    def _unfetched(self, ent: list, k: int) -> bool:
        """Whether sector k of a line holds bytes that were never fetched (written in part)."""
        pm = ent[self.sectors_per_line + 1]
        return ent[k] is None or bool(pm and k in pm and pm[k][0] != FULL)

    def _write_back(self, t: float, line: int, ent: list) -> float:
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
                    partial += self._unfetched(ent, kk)
            if partial:                                 # the dirty sectors with bytes never fetched
                self.rmw_bursts += 1
                a = hbm.rmw_burst(t, burst, partial, written)
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
