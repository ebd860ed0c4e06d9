"""Small text helpers shared by the report renderers: number formats, column layout,
optional ANSI color, and the totals of a metrics dict as the views read them.

Plain text by default; color only when the caller asks (`want_color` decides for a
stream: a TTY, and `NO_COLOR` unset or empty, per https://no-color.org).
"""
from __future__ import annotations

import os

from gpusim.result import LineStats

RED, YELLOW, BOLD, DIM = "31", "33", "1", "2"

TIME_KEY = "gpu__time_duration.sum"          # Nsight: kernel duration, nanoseconds
CYCLE_KEYS = ("gpc__cycles_elapsed.max", "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg")


def want_color(stream) -> bool:
    """Color for `stream`: it is a terminal and the user did not set NO_COLOR."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color and text.strip() else text


def num(v) -> str:
    """An integer with thousands separators."""
    return f"{int(v):,}"


def pct(frac: float) -> str:
    return f"{100.0 * frac:.1f}"


def ratio(v: float) -> str:
    return f"{v:.2f}"


def duration(ns: float) -> str:
    """A duration given in nanoseconds, in the unit that reads best."""
    ns = float(ns)
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"


def totals(metrics: dict) -> LineStats:
    """The kernel-wide metrics read through LineStats' derived properties
    (SIMT efficiency, shared wavefronts, bank conflicts, sectors per request)."""
    return LineStats(0, "", metrics, ())


def local_traffic(metrics: dict) -> tuple[int, int]:
    """(requests, sectors) to local memory (spills, indexed local arrays)."""
    req = sum(int(metrics.get(f"l1tex__t_requests_pipe_lsu_mem_local_op_{o}.sum", 0)) for o in ("ld", "st"))
    sec = sum(int(metrics.get(f"l1tex__t_sectors_pipe_lsu_mem_local_op_{o}.sum", 0)) for o in ("ld", "st"))
    return req, sec


def table(headers: list[str], rows: list[list[str]], align: str) -> list[str]:
    """Rows of cells as aligned text lines; `align` has one 'l' or 'r' per column.

    Cells may carry ANSI color: widths are measured on the visible text, so a
    colored table lines up like a plain one.
    """
    widths = [max(visible_len(c) for c in col) for col in zip(headers, *rows)]
    out = []
    for cells in [headers, *rows]:
        parts = []
        for c, w, a in zip(cells, widths, align):
            pad = " " * (w - visible_len(c))
            parts.append(c + pad if a == "l" else pad + c)
        out.append("  ".join(parts).rstrip())
    return out


def visible_len(s: str) -> int:
    n, i = 0, 0
    while i < len(s):
        if s[i] == "\x1b":
            i = s.index("m", i) + 1
            continue
        n += 1
        i += 1
    return n
