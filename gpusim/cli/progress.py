"""The progress line of `gpusim run` on a terminal: blocks done, simulated time, and the
steps of a batch that keeps running (towards --max-steps where one is set).

Written to stderr, overwritten in place (`\\r`), only when stderr is a terminal (nothing
when piped or redirected), at most every `INTERVAL_S`, and only once a launch has run for
`DELAY_S` (short runs print nothing). `clear()` erases it before other output.
"""
from __future__ import annotations

import sys
import time

INTERVAL_S = 0.2             # at most five redraws a second
DELAY_S = 0.5                # launches shorter than this show no progress


class ProgressLine:
    """A `gpusim.launch(..., progress=...)` callback drawing one status line for `name`."""

    def __init__(self, name: str, stream=None):
        self.name = name
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    @staticmethod
    def wanted(stream=None) -> bool:
        stream = stream if stream is not None else sys.stderr
        try:
            return stream.isatty()
        except (AttributeError, ValueError):
            return False

    def text(self, p) -> str:
        pct = 100 * p.blocks_done // max(p.blocks_total, 1)
        parts = [f"{self.name}: {p.phase} {p.blocks_done:,}/{p.blocks_total:,} blocks ({pct}%)"]
        if p.simulated_ns is not None:
            parts.append(f"{p.simulated_ns / 1000:,.2f} us simulated")
        if p.steps:
            parts.append(f"batch at step {p.steps:,}" + (f" of {p.step_budget:,}" if p.step_budget else ""))
        elapsed = time.monotonic() - self.start
        left = f", about {elapsed * (p.blocks_total - p.blocks_done) / p.blocks_done:.0f} s left" \
            if 0 < p.blocks_done < p.blocks_total and not p.steps else ""
        parts.append(f"{elapsed:.0f} s{left}")
        return ", ".join(parts)

    def __call__(self, p) -> None:
        now = time.monotonic()
        if now - self.start < DELAY_S or now - self.last < INTERVAL_S:
            return
        self.last = now
        self.shown = True
        self.stream.write("\r\033[K" + self.text(p))
        self.stream.flush()

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False
