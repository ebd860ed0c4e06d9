"""One SM's L1TEX tag and data stages: how long a request holds them.

What is modelled: a request of distinct sectors holds the stage for the larger of
- its tag cycles: its distinct 128-B lines, `l1.tag_lines_per_cycle` of them looked up a cycle,
  whichever lines they are (NVIDIA: "the GV100+ L1TEX tag stage can resolve 4 sets x 4 sectors
  per cycle"); and
- its data wavefronts: a wavefront moves `l1.bandwidth_bytes_per_cycle` (128 B), one sector
  of each bank group, a group being the sectors that share 4-B banks (sector index mod
  bandwidth / sector bytes: the 4 sectors of a line are the 32 banks); so a request takes as
  many wavefronts as it has sectors in its busiest group. For lanes that touch their sectors
  at the same offsets (every stride, coalesced or not) that is exactly the most distinct words
  in one bank (Nsight's data wavefronts, below); scattered words whose sectors share a group
  but not their offsets are charged as if they were in one bank.
One wavefront or tag cycle per SM cycle, in request order per SM (hits and misses alike,
charged at the lookup).

Measured on H200 (validate/l1_gather_probe.py, data/measurements/l1_gather_h200.json, the
presets' [MEAS-L1GATHER]), cycles a request a SM, 32 warps loading L1-resident words: 32 lines
all in one bank (lanes 128 or 256 B apart) 32.0; 32 lines in 32 banks (132, 260, 2,052 B)
8.0-8.6; 8 lines of 4 sectors in one bank group each (32 B apart) 8.0; 2 / 4 / 8 / 16 lines of
whole bank groups 1.9 / 1.9 / 2.6 / 4.6. Nsight splits it: `l1tex__data_pipe_lsu_wavefronts`
a request is the most distinct words in one bank (31.5, 1.0, 7.9, 1.0; 2.97 for the random
words), and `l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld` about lines / 4 + 0.5 (8.4 for
32 lines, 4.6 for 16), more for random lines (9.2 for 27, 10.1 for 30: the tag banks' hash
leaves some busier); the request takes the larger. The earlier reading of the stride kernels
(one line a cycle) had every lane's word in one bank, where both rules agree.

Not modelled: the tag and data stages as separate pipelines (one request holds both), the
0.5 cycle a request above lines / 4 and the tag banks' imbalance for random lines, and the
banks of a request's words themselves: the payload carries its sectors, not its words, so the
busiest bank group stands for the busiest bank (exact when lanes touch their sectors at the
same offsets; for scattered words an upper bound: the random words above 13 / 15 cycles here).

Sources: NVIDIA developer forums, G. Smith on L1TEX (the presets' [NV-FORUM]); Nsight
Compute's l1tex wavefront counters; the probe above.
"""
from __future__ import annotations


class L1Stage:
    """`book(now, n, sectors)`: (start, cycles) of a request of n sectors; `free`: when the
    stage is next free (the L1 also books it directly on its hot paths, with `cycles`)."""

    def __init__(self, spec):
        l1 = spec.l1
        self.line_shift = (l1.line_bytes // l1.sector_bytes).bit_length() - 1
        self.groups = l1.bandwidth_bytes_per_cycle // l1.sector_bytes     # bank groups: sectors a wavefront carries
        self.tag_lines = l1.tag_lines_per_cycle
        self.clear()

    def clear(self) -> None:
        """Kernel boundary: the stage is free (time may restart at 0)."""
        self.free = float("-inf")

    def book(self, now: float, n: int, lst=None) -> tuple[float, int]:
        """A request of n sectors (`lst`: them, distinct, for the tag and bank-group rule; None:
        n sectors of consecutive addresses) arriving at `now`: when it starts on the stage and
        how many cycles it holds it."""
        wf = self.cycles(n, lst)
        start = now if now >= self.free else self.free
        self.free = start + wf
        return start, wf

    def cycles(self, n: int, lst=None) -> int:
        """Cycles a request of n distinct sectors `lst` holds the stage."""
        g = self.groups
        wf = -(-n // g)
        if lst is None or n <= 1:
            return wf if wf > 0 else 1
        lo, hi = min(lst), max(lst)
        sh = self.line_shift
        if hi - lo + 1 == n:                    # consecutive sectors: every group even, lines consecutive
            tag = -(-((hi >> sh) - (lo >> sh) + 1) // self.tag_lines)
            return tag if tag > wf else wf
        counts = [0] * g
        for s in lst:
            counts[s % g] += 1
        data = max(counts)
        tag = -(-len({s >> sh for s in lst}) // self.tag_lines)
        return tag if tag > data else data
