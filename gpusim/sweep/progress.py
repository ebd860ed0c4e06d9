"""A progress bar with an ETA for sweeps, written to a stream (stderr by default).

On a terminal the bar redraws in place; elsewhere (a log, CI) it writes a line at most
every `every_s` seconds and at the end. The ETA is the mean wall time per finished point
times the points left (points finish unevenly: a recorded point costs more than a replay).
"""
from __future__ import annotations

import sys
import time


def _clock(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    def __init__(self, total: int, label: str = "sweep", stream=None, width: int = 28, every_s: float = 5.0):
        self.total, self.label, self.width, self.every = total, label, width, every_s
        self.stream = stream if stream is not None else sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.done = 0
        self.t0 = time.monotonic()
        self._last = -1e9

    def line(self) -> str:
        el = time.monotonic() - self.t0
        frac = self.done / self.total if self.total else 1.0
        fill = int(round(frac * self.width))
        eta = el / self.done * (self.total - self.done) if self.done else float("nan")
        eta_s = _clock(eta) if self.done else "?"
        return (f"{self.label} {self.done}/{self.total} [{'#' * fill}{'.' * (self.width - fill)}] "
                f"{100 * frac:3.0f}% elapsed {_clock(el)} ETA {eta_s}")

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + self.line())
            if self.done >= self.total:
                self.stream.write("\n")
            self.stream.flush()
        elif now - self._last >= self.every or self.done >= self.total:
            self._last = now
            self.stream.write(self.line() + "\n")
            self.stream.flush()
