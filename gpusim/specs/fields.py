"""How a spec field is declared and checked: its valid range beside its default
(`bounded(default, lo, hi)`, gem5's bounded Param), the checks a spec's `__post_init__` runs
(`check_ranges` and the positive / non-negative / power-of-two / integer rules), and the
one-line description written beside each field (`field_docs`).

The ranges are wide enough for any GPU one might imagine (ten to a hundred times today's),
narrow enough that the simulator's work stays bounded (`--set sm.count=1e6` would build a
million SM models). An invalid value is a `ConfigError` naming the field, the value and the
rule or range it breaks; `gpusim presets --show` prints each field's range (`range_of`).
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
from dataclasses import field, fields

from gpusim.errors import ConfigError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def bounded(default, lo, hi):
    """A spec field with default `default` and valid range lo..hi (inclusive)."""
    return field(default=default, metadata={"range": (lo, hi)})


def range_of(cls, name: str) -> tuple | None:
    """The (lo, hi) of field `name` of spec class `cls`, or None if it has none."""
    for f in fields(cls):
        if f.name == name:
            return f.metadata.get("range")
    return None


def format_range(lo, hi) -> str:
    """'1..1024', '0.001..1e+06'."""
    num = lambda x: str(x) if isinstance(x, int) else f"{x:g}"            # noqa: E731
    return f"{num(lo)}..{num(hi)}"


def _hint(obj, n: str) -> str:
    r = range_of(type(obj), n)
    return f" (valid range {format_range(*r)})" if r else ""


def check_ranges(obj) -> None:
    """ConfigError for the first field of `obj` outside its `bounded` range, or not an
    integer where the field is one (NaN and infinities are outside every range)."""
    for f in fields(obj):
        r = f.metadata.get("range")
        if r is None:
            continue
        v = getattr(obj, f.name)
        what = f"{type(obj).__name__}.{f.name}"
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise ConfigError(f"{what} must be a number in {format_range(*r)}, got {v!r}")
        if f.type in ("int", int) and not isinstance(v, numbers.Integral):
            raise ConfigError(f"{what} must be an integer in {format_range(*r)}, got {v!r}")
        if math.isnan(v) or not r[0] <= v <= r[1]:
            raise ConfigError(f"{what} = {v!r} is outside its valid range {format_range(*r)}")


def _positive(obj, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if not (isinstance(v, (int, float)) and v > 0):
            raise ConfigError(f"{type(obj).__name__}.{n} must be a positive number, got {v!r}{_hint(obj, n)}")


def _nonnegative(obj, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if not (isinstance(v, (int, float)) and v >= 0):
            raise ConfigError(f"{type(obj).__name__}.{n} must be >= 0, got {v!r}{_hint(obj, n)}")


def _power_of_two(obj, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if not (isinstance(v, int) and v > 0 and (v & (v - 1)) == 0):
            raise ConfigError(f"{type(obj).__name__}.{n} must be a power of two, got {v!r}{_hint(obj, n)}")


def _integer(obj, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"{type(obj).__name__}.{n} must be an integer, got {v!r}{_hint(obj, n)}")


@functools.lru_cache(maxsize=None)
def field_docs(cls) -> dict[str, str]:
    """Field name -> its one-line description (the comment beside it in the class body;
    for a field written over several lines, the first comment of its continuation)."""
    lines = inspect.getsource(cls).splitlines()
    out = {}
    for f in fields(cls):
        for i, line in enumerate(lines):
            if line.strip().startswith(f.name + ":"):
                for cont in lines[i:i + 4]:
                    if cont is not line and re.match(r"\s*\w+\s*:", cont):
                        break                    # the next field: no comment for this one
                    if "#" in cont:
                        out[f.name] = cont.split("#", 1)[1].strip()
                        break
                break
    return out
