"""Hypothetical GPUs: a preset plus dotted-key overrides, from `--set` strings or a TOML file.

What it does: `apply(spec, {"l2.size_bytes": "64MiB"})` parses each value by the type of
the field its key names (int, float, bool, str, tuples; sizes with KiB/MiB/GiB suffixes for
`_bytes` fields), builds a new spec with `dataclasses.replace` (a preset is never
modified), names it after what changed (`h100+l2.size_bytes=64MiB`) and records the
overrides in `source`. `load_toml(path)` reads `base = "h100"`, an optional `name`, and
tables such as `[hbm]` or `[sm.pipes.fp64]`. `resolve(gpu, sets)` takes a preset name,
a .toml path or a spec, plus "key=value" strings.

Validation is the dataclasses' own (`__post_init__` in parts.py and gpu.py); this module
puts the key and the value in front of the rule a bad value breaks, and suggests close
keys (difflib) for unknown ones. It does not judge whether a combination could be built.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import tomllib
import typing
from pathlib import Path

from gpusim.errors import ConfigError
from gpusim.specs import presets
from gpusim.specs.describe import groups, schema, value_at
from gpusim.specs.gpu import GPUSpec
from gpusim.specs.fields import format_range, range_of

# Short names users type -> the dotted key they mean.
ALIASES: dict[str, str] = {
    "sm.count": "sm_count",
    "sms": "sm_count",
    "clock_mhz": "clocks.sm_clock_mhz",
    "sm.clock_mhz": "clocks.sm_clock_mhz",
    "l2.size": "l2.size_bytes",
    "hbm.bandwidth": "hbm.bandwidth_GBps",
    "sm.shared_per_sm": "sm.shared_memory_per_sm_bytes",
}

# Size suffixes for `_bytes` fields. KB/MB/GB are binary, as NVIDIA uses them (the "50 MB"
# L2 of an H100 is 52,428,800 bytes).
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
               "tib": 1 << 40}
_SIZE = re.compile(r"^([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)$")
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def canonical_key(key: str) -> str:
    """The dotted field key `key` names (aliases resolved); ConfigError with close matches if none."""
    k = str(key).strip()
    k = ALIASES.get(k, k)
    keys = schema()
    if k in keys:
        return k
    if k == "source":
        raise ConfigError("'source' cannot be set: it records where a spec's numbers come from")
    if k in groups():
        subs = [s for s in keys if s.startswith(k + ".")]
        raise ConfigError(f"{key!r} is a group of settings, not one value; set one of: {', '.join(subs)}")
    raise ConfigError(f"unknown GPU spec key {key!r}{_suggest(k)}; `gpusim presets --show h100` lists every key")


def _suggest(k: str) -> str:
    names = list(schema()) + list(ALIASES)
    leaf = lambda n: n.rsplit(".", 1)[-1]          # noqa: E731
    same_leaf = [n for n in names if leaf(n) == leaf(k)]
    close = difflib.get_close_matches(k, names, n=3, cutoff=0.6)
    near_leaves = difflib.get_close_matches(leaf(k), sorted({leaf(n) for n in names}), n=2, cutoff=0.8)
    close_leaf = [n for n in names if leaf(n) in near_leaves]
    hits = list(dict.fromkeys(same_leaf + close + close_leaf))[:3]
    return f"; did you mean {' or '.join(hits)}?" if hits else ""


def parse_value(key: str, raw):
    """`raw` (a string from --set, or a TOML/Python value) as the type of field `key`."""
    typ, owner, name = schema()[key]
    try:
        return _convert(key, typ, raw)
    except (ValueError, TypeError) as e:
        r = range_of(owner, name)
        hint = f" (valid range {format_range(*r)})" if r else ""
        raise ConfigError(f"bad value for {key}={_text(raw)}: {e}{hint}") from None


def _convert(key: str, typ, raw):
    origin = typing.get_origin(typ)
    if origin is tuple:
        args = typing.get_args(typ)
        items = _items(raw)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(key, args[0], x) for x in items)
        if key == "compute_capability" and isinstance(raw, str) and len(items) == 1 and "." in items[0]:
            items = items[0].split(".")
        if len(items) != len(args):
            raise ValueError(f"expected {len(args)} comma-separated values, got {len(items)}")
        return tuple(_convert(key, a, x) for a, x in zip(args, items))
    if typ is bool:
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in _TRUE or s in _FALSE:
            return s in _TRUE
        raise ValueError("expected true or false")
    if isinstance(raw, bool):
        raise TypeError(f"expected {'an integer' if typ is int else 'a number'}, not a boolean")
    if typ is int:
        return _int(key, raw)
    if typ is float:
        v = float(str(raw).strip().replace("_", "")) if isinstance(raw, str) else float(raw)
        if not math.isfinite(v):
            raise ValueError("expected a finite number")
        return v
    if typ is str:
        if not isinstance(raw, str):
            raise TypeError("expected a string")
        return raw.strip()
    raise TypeError(f"fields of type {typ} cannot be set")


def _int(key: str, raw) -> int:
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        if raw.is_integer():
            return int(raw)
        raise ValueError("expected an integer")
    s = str(raw).strip().replace("_", "").replace(",", "")
    if "_bytes" in key.rsplit(".", 1)[-1] and not s.lower().startswith("0x"):
        m = _SIZE.match(s.lower())
        if not m or m.group(2) not in _SIZE_UNITS:
            raise ValueError("expected a byte count such as 65536, 64KiB, 50MiB or 2GiB")
        v = float(m.group(1)) * _SIZE_UNITS[m.group(2)]
        if not v.is_integer():
            raise ValueError("expected a whole number of bytes")
        return int(v)
    try:
        return int(s, 0)
    except ValueError:
        try:
            v = float(s)
        except ValueError:
            raise ValueError("expected an integer") from None
        if not v.is_integer():
            raise ValueError("expected an integer") from None
        return int(v)


def _items(raw) -> list:
    if isinstance(raw, (list, tuple)):
        return list(raw)
    s = str(raw).strip().strip("()[]")
    return [x.strip() for x in s.split(",") if x.strip()] if s else []


def _text(raw) -> str:
    """How a value reads in a name or a message: as typed for strings, else as Python prints it."""
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, (list, tuple)):
        return ",".join(_text(x) for x in raw)
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    return str(raw)


def _rebuild(obj, tree: dict):
    """`obj` with the nested {field: value or subtree} changes, through dataclasses.replace."""
    changes = {f: _rebuild(getattr(obj, f), sub) if isinstance(sub, dict) else sub for f, sub in tree.items()}
    return dataclasses.replace(obj, **changes)


def _tree(values: dict[str, object]) -> dict:
    tree: dict = {}
    for key, v in values.items():
        node = tree
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = v
    return tree


def apply(spec: str | GPUSpec, overrides: dict[str, str | int | float], *, name: str | None = None,
          origin: str = "overrides") -> GPUSpec:
    """A new spec: `spec` (a preset name or a GPUSpec) with `overrides` (dotted key -> value)
    applied. The name becomes `<base>+key=value+...` unless `name` (or a `name` override) is
    given; `source` records the base's source and the overrides. Never modifies `spec`."""
    base = presets.get(spec)
    entries: dict[str, tuple[object, str]] = {}            # canonical key -> (value, text)
    for key, raw in overrides.items():
        canon = canonical_key(key)
        entries[canon] = (parse_value(canon, raw), _text(raw))
    if not entries and name is None:
        return base
    settings = [f"{k}={t}" for k, (_, t) in entries.items() if k != "name"]
    if "name" in entries:
        name = entries.pop("name")[0]
    values = {k: v for k, (v, _) in entries.items()}
    try:
        out = _rebuild(base, _tree(values))
    except ConfigError as combined:
        raise _blame(base, entries, combined) from None
    new_name = name or "+".join([base.name, *settings])
    listed = ", ".join(settings) if settings else "none"
    return dataclasses.replace(out, name=new_name, source=f"{base.source or base.name}; {origin}: {listed}")


def _blame(base: GPUSpec, entries: dict[str, tuple[object, str]], combined: ConfigError) -> ConfigError:
    """The error to report: the single setting that breaks a rule on its own, else the
    settings of the sub-spec whose rule the combination breaks."""
    for key, (value, text) in entries.items():
        try:
            _rebuild(base, _tree({key: value}))
        except ConfigError as e:
            return ConfigError(f"bad value for {key}={text}: {e}")
    together = ", ".join(f"{k}={t}" for k, (_, t) in entries.items())
    return ConfigError(f"these settings do not fit together ({together}): {combined}")


def parse_sets(sets) -> dict[str, str]:
    """["key=value", ...] (command-line `--set`s) -> {key: value}; the last of a repeated key wins."""
    out: dict[str, str] = {}
    for item in sets:
        key, eq, value = str(item).partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--set expects KEY=VALUE (e.g. --set l2.size_bytes=64MiB), got {item!r}")
        out[key.strip()] = value.strip()
    return out


def flatten(table: dict, prefix: str = "") -> dict[str, object]:
    """A TOML table's nested keys as dotted ones: {"hbm": {"t_faw_ns": 18}} -> {"hbm.t_faw_ns": 18}."""
    out: dict[str, object] = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def load_toml(path: str | os.PathLike, _depth: int = 0) -> GPUSpec:
    """A spec from a TOML file: `base = "h100"` (a preset, or another .toml file relative to
    this one), optional `name = "..."`, then keys or tables of overrides (`sm_count = 64`,
    `[hbm] bandwidth_GBps = 8000`, `[sm.pipes.fp64] issue_interval_cycles = 1`)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"GPU spec file {str(p)!r} not found") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not a UTF-8 text file (byte {e.start}: {e.object[e.start:e.start + 1]!r}); "
                          "TOML files are UTF-8") from None
    except OSError as e:
        raise ConfigError(f"cannot read GPU spec file {str(p)!r}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    data.pop("calibration", None)                # metadata of a calibrated preset (gpusim.specs.calibrated.info)
    base = data.pop("base", None)
    if not isinstance(base, str) or not base:
        raise ConfigError(f"{p}: needs a base, e.g. base = \"h100\" (presets: {', '.join(presets.names())})")
    name = data.pop("name", None)
    if name is not None and not (isinstance(name, str) and name.strip()):
        raise ConfigError(f"{p}: name must be a non-empty string, got {name!r}")
    try:
        if base.endswith(".toml"):
            if _depth >= 8:
                raise ConfigError("too many nested base files (a cycle?)")
            base_spec = load_toml(p.parent / base, _depth + 1)
        else:
            base_spec = presets.get(base)
        return apply(base_spec, flatten(data), name=name.strip() if name else None, origin=f"file {p}")
    except ConfigError as e:
        raise ConfigError(f"{p}: {e}") from None


def resolve(gpu: str | os.PathLike | GPUSpec, sets=()) -> GPUSpec:
    """The spec `gpu` names (a preset name, a path to a .toml file, or a GPUSpec), with the
    "key=value" strings `sets` applied."""
    if isinstance(gpu, GPUSpec):
        spec = gpu
    elif isinstance(gpu, os.PathLike) or str(gpu).endswith(".toml"):
        spec = load_toml(gpu)
    else:
        spec = presets.get(gpu)
    sets = list(sets)
    return apply(spec, parse_sets(sets), origin="--set") if sets else spec


__all__ = ["ALIASES", "apply", "canonical_key", "load_toml", "parse_sets", "parse_value", "resolve", "value_at"]
