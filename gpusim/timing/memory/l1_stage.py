"""One SM's L1TEX tag and data stages: how long a request holds them.

What is modelled: a request of n sectors takes ceil(n * 32 / `l1.bandwidth_bytes_per_cycle`)
data wavefronts, and as many tag cycles as the most of its distinct lines that fall in one
tag bank (bank = line index mod `l1.tag_banks`; each bank looks up one line per cycle, so 4
banks resolve up to 4 lines x 4 sectors per cycle, as NVIDIA describes the Volta-and-later
tag stage); the request holds the stage for the larger of the two, one wavefront per cycle,
in request order per SM (hits and misses alike, charged at the lookup). The Hopper presets
have one bank (`tag_banks` 1): on H100/H200 a request's distinct lines take a cycle each,
consecutive or not (`stride_read/l1_s*`: 32 lines a request 32.7 SM cycles at 128, 256, 512
and 1024 B between lanes; 4 banks would give 8 cycles to the first two).

Not modelled: the tag stage and data stage as separate pipelines (one request holds both).

Sources: NVIDIA developer forums, G. Smith on L1TEX (the presets' [NV-FORUM]); Nsight
Compute's l1tex wavefront counters.
"""
from __future__ import annotations


class L1Stage:
    """`book(now, n, sectors)`: (start, cycles) of a request of n sectors; `free`: when the
    stage is next free (the L1 also books it directly on its hot paths)."""

    def __init__(self, spec):
        l1 = spec.l1
        self.sector_bytes = l1.sector_bytes
        self.line_shift = (l1.line_bytes // l1.sector_bytes).bit_length() - 1
        self.bytes_per_wavefront = l1.bandwidth_bytes_per_cycle
        self.tag_mask = l1.tag_banks - 1
        self.clear()

    def clear(self) -> None:
        """Kernel boundary: the stage is free (time may restart at 0)."""
        self.free = float("-inf")

    def book(self, now: float, n: int, lst=None) -> tuple[float, int]:
        """A request of n sectors (`lst`, if its tag cycles may exceed its wavefronts) arriving
        at `now`: when it starts on the stage and how many cycles it holds it."""
        wf = -(-n * self.sector_bytes // self.bytes_per_wavefront)
        if lst is not None and n > 1:
            sh = self.line_shift                # the tag cycles are at most the span of lines: skip when that fits
            if (max(lst) >> sh) - (min(lst) >> sh) >= wf:
                tag = self.tag_cycles(lst)
                if tag > wf:
                    wf = tag
        start = now if now >= self.free else self.free
        self.free = start + wf
        return start, wf

    def tag_cycles(self, lst) -> int:
        """Tag-stage cycles of a request: its distinct lines, one per tag bank per cycle."""
        sh = self.line_shift
        lines = {s >> sh for s in lst}
        if len(lines) <= 1:
            return 1
        mask = self.tag_mask
        if not mask:
            return len(lines)
        if len(lines) == 2:                     # the common case: one cycle each if they share a bank
            a, b = lines
            return 2 if (a ^ b) & mask == 0 else 1
        counts = [0] * (mask + 1)
        for line in lines:
            counts[line & mask] += 1
        return max(counts)
