"""The progress line of `gpusim run` on a terminal: blocks done, simulated time, and the
steps of a batch that keeps running (towards --max-steps where one is set).

Written to stderr, overwritten in place (`\\r`), only when stderr is a terminal (nothing
when piped or redirected), at most every `INTERVAL_S`, and only once a launch has run for
`DELAY_S` (short runs print nothing). `clear()` erases it before other output.
"""
from __future__ import annotations

import sys
import threading
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


class Ticker:
    """A line on stderr saying what a long command is doing and for how long: nothing for
    the first `DELAY_S` (short runs print nothing), then every `every_s` (in place on a
    terminal, else a line each time), from a thread, so that one long step (a collective
    over hundreds of GPUs) still shows it is alive. A context manager; `now(text)` sets
    what is being done."""

    DELAY_S = 2.0

    def __init__(self, label: str, stream=None, every_s: float | None = None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = ProgressLine.wanted(self.stream)
        self.every = every_s if every_s is not None else (INTERVAL_S * 5 if self.tty else 10.0)
        self.text = ""
        self.start = time.monotonic()
        self.shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self, text: str) -> None:
        self.text = text

    def line(self) -> str:
        s = int(time.monotonic() - self.start)
        return f"{self.label}: {self.text}, {s // 60}:{s % 60:02d} elapsed"

    def _run(self) -> None:
        if self._stop.wait(self.DELAY_S):
            return
        while True:
            self.shown = True
            self.stream.write(("\r\033[K" if self.tty else "") + self.line() + ("" if self.tty else "\n"))
            self.stream.flush()
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> "Ticker":
        self.start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self.shown and self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()
