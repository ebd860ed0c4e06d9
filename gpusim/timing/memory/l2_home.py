"""The L2's lookup of a line's sectors at its home slice (a mixin of `l2.L2Cache`; its
entries are `l2.LRUSet` lists: sector valid-from times, dirty sector bits, partial byte
masks, warm, last use).

What is modelled (the rules are the cache's, see `l2.py`): a write makes its bytes valid
and dirty (a partial write to an absent sector allocates it without a fill, with only the
written bytes valid); a read of a sector not wholly valid fetches its DRAM burst, which
fills every sector of the burst not wholly valid (merged under the dirty bytes); a read
of a sector whose fill is on its way waits for it; atomics read, then each sector's passes
take their turns at the atomic unit of its line's granule (`l2_atomics.py`). Hits and misses are counted per source (an SM's L1, or the fabric) and
operation, an atomic sector once per pass (its further passes find it).
"""
from __future__ import annotations

from gpusim.timing.memory.l2_partitions import FULL, READ, WRITE



class HomeSlice:
    """Mixin of `L2Cache`: `_home` (see the module docstring)."""

    def _home(self, ent, ts, lst, i, j, op, ops, masks, src) -> float:
        """Sectors lst[i:j] of one line at its home slice, looked up at ts; their ready time."""
        spl = self.sectors_per_line
        mask = spl - 1
        hits = misses = 0
        pm = ent[spl + 1]
        if op == WRITE:                                 # a write is ready at ts
            d, warm = ent[spl], ent[spl + 2]
            bsh = self.hbm.burst_shift
            burst_bits = (1 << (1 << bsh)) - 1
            dirtied = bursts = 0
            for idx in range(i, j):
                k = lst[idx] & mask
                m = masks[idx] if masks is not None else FULL
                if ent[k] is None:
                    misses += 1
                    ent[k] = ts
                    if m != FULL:
                        if pm is None:
                            pm = ent[spl + 1] = {}
                        pm[k] = [m, m]
                else:
                    hits += 1
                    if pm and k in pm:
                        e = pm[k]
                        e[0] |= m
                        e[1] |= m
                        if e[0] == FULL and e[1] == FULL:
                            del pm[k]
                    elif m != FULL and not (d >> k & 1):    # valid, clean: now partly dirty
                        if pm is None:
                            pm = ent[spl + 1] = {}
                        pm[k] = [FULL, m]
                if not d >> k & 1:                      # self._dirty(ent, k), inlined (hot path)
                    if not warm:
                        dirtied += 1
                        if not (d >> ((k >> bsh) << bsh)) & burst_bits:
                            bursts += 1
                    d |= 1 << k
            ent[spl] = d
            if dirtied:
                self._dirtied_sectors += dirtied
                self._dirtied_bursts += bursts
            if pm is not None and not pm:
                ent[spl + 1] = None
            self._hits[src][WRITE] += hits
            self._misses[src][WRITE] += misses
            return ts
        hbm = self.hbm
        bsh, bmask = hbm.burst_shift, hbm.sectors_per_burst - 1
        fp = self.footprint
        latest = ts
        for idx in range(i, j):
            s = lst[idx]
            k = s & mask
            r = ent[k]
            valid = r is not None and (pm is None or k not in pm or pm[k][0] == FULL)
            if not valid:
                misses += 1
                r = hbm.read_burst(ts, s >> bsh)
                if fp is not None:                  # what the sampled share fetched (warming.reuse_uncertainty)
                    fp.count_dram(s // spl)
                base = (k >> bsh) << bsh            # fill every sector of the burst not wholly valid
                for kk in range(base, base + bmask + 1):
                    if ent[kk] is None:
                        ent[kk] = r
                    elif pm and kk in pm:
                        e = pm[kk]
                        if e[0] != FULL:
                            ent[kk] = r
                            e[0] = FULL
                            if e[1] == FULL or e[1] == 0:
                                del pm[kk]
            elif r > ts:
                misses += 1                         # fill in flight: wait for it, no new fetch
            else:
                hits += 1
                r = ts
            if op != READ:                          # the sector's passes at the line's atomic unit
                p = ops[idx] if ops is not None else 1
                hits += p - 1                       # each further pass is a lookup that finds it
                r = self.atomics.rmw(r, s >> self.line_shift, s, p, self._float, self._sm) + self.atomic_latency_cycles
                self._dirty(ent, k)
            if r > latest:
                latest = r
        if pm is not None and not pm:
            ent[spl + 1] = None
        self._hits[src][op] += hits
        self._misses[src][op] += misses
        return latest
