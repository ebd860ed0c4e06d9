"""The points of a sweep: programs (or the user's launches) x sizes x spec configurations.

- `parse_vary("hbm.bandwidth_GBps=2000:8000:4")` -> ('hbm.bandwidth_GBps', [2000, 4000, 6000, 8000]):
  a comma list (`66,132`), or `START:STOP:N` (N values evenly spaced, both ends included;
  integers where the field is an integer), or `START:STOP:xF` (START, START*F, ... up to STOP).
  Keys are the spec's dotted field names (`gpusim presets --show h100`) or their aliases
  (`sm.count`, and `shared.banks`/`shared.bank_width_bytes` for the sm.shared_* fields).
- `configs(base, vary, sets)` is the cartesian product of the varied fields (first key
  slowest), or, when `vary` is a list of {field: value} dicts, those points one by one
  (what-if scenarios: `[{}, {"hbm.bandwidth_GBps": 6704}, {"sm_count": 66}]`); each a GPUSpec
  built and validated before any work starts: an unknown field,
  a value out of range, or a field the model does not honour (`fields.REFUSED`) is a
  ConfigError naming it.
- `load_sweep_toml(path)` reads a sweep file:

      gpu = "h100"                       # base preset or .toml spec
      programs = ["transpose_shared", "matmul_tiled"]
      sizes = ["default"]                # names, or tables of parameters: [{rows = 1024, cols = 1024}]
      [set]                              # fixed overrides of every point
      "l2.size_bytes" = "64MiB"
      [vary]                             # lists, or "START:STOP:N" strings
      "hbm.bandwidth_GBps" = [2000, 4000, 8000]
      "sm.count" = "66:132:2"
"""
from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gpusim.errors import ConfigError
from gpusim.specs.describe import schema, value_at
from gpusim.specs.gpu import GPUSpec
from gpusim.specs.overrides import apply, canonical_key, flatten, parse_value, resolve
from gpusim.sweep.fields import check_varied

# the short names, unambiguous (one field each)
SWEEP_ALIASES = {"shared.banks": "sm.shared_banks", "shared.bank_width_bytes": "sm.shared_bank_width_bytes",
                 "shared.bank_width": "sm.shared_bank_width_bytes"}


def field_key(key: str) -> str:
    return canonical_key(SWEEP_ALIASES.get(key.strip(), key.strip()))


def _number(text: str) -> float:
    try:
        return float(text.replace("_", ""))
    except ValueError:
        raise ConfigError(f"expected a number, got {text!r}") from None


MAX_VALUES = 1_000_000          # values one field's range may give (more cannot be a sweep: MAX_POINTS)
MAX_POINTS = 1_000_000          # points of any sweep, --yes or not (a 1e6-row table of ~270 columns is ~2 GB)
ASK_POINTS = 10_000             # more points than this need sweep(..., max_points=None) / --yes


def range_count(key: str, raw: str) -> int:
    """How many values the range `raw` ('START:STOP:N' or 'START:STOP:xF') of field `key`
    gives before repeats are dropped, without building them; ConfigError for a bad range."""
    parts = raw.split(":")
    if len(parts) != 3:
        raise ConfigError(f"range for {key} must be START:STOP:N or START:STOP:xFACTOR, got {raw!r}")
    a, b = _number(parts[0]), _number(parts[1])
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ConfigError(f"range for {key}: START and STOP must be finite numbers, got {raw!r}")
    last = parts[2].strip()
    if last.lower().startswith("x"):
        f = _number(last[1:])
        if not (f > 1) or not math.isfinite(f) or a <= 0 or b < a:
            raise ConfigError(f"geometric range for {key} needs 0 < START <= STOP and a factor > 1, got {raw!r}")
        return int(math.floor(math.log(b * (1 + 1e-12) / a) / math.log(f))) + 1     # about: expand counts exactly
    n = _number(last)
    if not (n.is_integer() and n >= 1):
        raise ConfigError(f"range for {key}: N (the number of values) must be a positive integer, got {last!r}")
    return int(n)


def expand_values(key: str, raw) -> list:
    """The values `raw` (a list, a 'a,b,c' string or a 'START:STOP:N' range) gives field `key`,
    each parsed by the field's type. A range of more than MAX_VALUES values is refused
    before any is built."""
    typ = schema()[key][0]
    if isinstance(raw, (list, tuple)):
        items = list(raw)
    elif isinstance(raw, str) and ":" in raw and typ in (int, float):
        n = range_count(key, raw)
        if n > MAX_VALUES:
            raise ConfigError(f"range {raw!r} for {key} gives {n:,} values: a sweep holds at most "
                              f"{MAX_POINTS:,} points")
        parts = raw.split(":")
        a, b = _number(parts[0]), _number(parts[1])
        if parts[2].strip().lower().startswith("x"):
            f = _number(parts[2].strip()[1:])
            items, v = [], a
            while v <= b * (1 + 1e-12) and len(items) <= MAX_VALUES:
                items.append(v)
                v *= f
        else:
            items = [a] if n == 1 else [a + (b - a) * i / (n - 1) for i in range(n)]
        if typ is int:
            items = [round(v) for v in items]
        values = items if typ is int else [float(v) for v in items]       # already of the field's type
        return list(dict.fromkeys(values))
    elif isinstance(raw, str):
        items = [x.strip() for x in raw.split(",") if x.strip()]
    else:
        items = [raw]
    if not items:
        raise ConfigError(f"no values given for {key}")
    if len(items) > MAX_VALUES:
        raise ConfigError(f"{len(items):,} values for {key}: a sweep holds at most {MAX_POINTS:,} points")
    values = [parse_value(key, v) for v in items]
    return list(dict.fromkeys(values))                # repeated values once, order kept


def parse_vary(text: str) -> tuple[str, list]:
    key, eq, raw = str(text).partition("=")
    if not eq or not key.strip() or not raw.strip():
        raise ConfigError(f"--vary expects FIELD=VALUES (e.g. --vary hbm.bandwidth_GBps=2000:8000:4 or "
                          f"--vary sm.count=66,132), got {text!r}")
    k = field_key(key)
    return k, expand_values(k, raw.strip())


@dataclass(frozen=True)
class Config:
    """One point of the spec space: the varied fields' values and the spec they give."""
    index: int
    values: tuple                                   # ((dotted key, value), ...) of the varied fields
    spec: GPUSpec


def configs(base, vary: dict | None = None, sets: dict | None = None, *, max_points: int | None = None,
            launches: int = 1) -> list[Config]:
    """Every combination of `vary` ({field: values}) over `base` (a preset, .toml path or
    GPUSpec) with the fixed overrides `sets`; each spec validated now. `launches` (programs x
    sizes) times the configurations are the sweep's points: more than `max_points` (or than
    MAX_POINTS) is refused before any spec is built (`check_points`)."""
    spec0 = resolve(base) if not isinstance(base, GPUSpec) else base
    fixed = {field_key(k): v for k, v in (sets or {}).items()}
    if fixed:
        spec0 = apply(spec0, fixed, origin="sweep set")
    if isinstance(vary, (list, tuple)):
        check_points(len(vary) * launches, launches, max_points)
        return _scenarios(spec0, vary)
    axes = {}
    for k, vals in (vary or {}).items():
        key = field_key(k)
        if key in axes:
            raise ConfigError(f"{key} is varied twice")
        vals = expand_values(key, vals)
        check_varied(key, vals, spec0)
        axes[key] = vals
    check_points(math.prod(len(v) for v in axes.values()) * launches, launches, max_points,
                 {k: len(v) for k, v in axes.items()})
    for key in fixed:
        check_varied(key, [value_at(spec0, key)], spec0)
    out = []
    for i, combo in enumerate(itertools.product(*axes.values()) if axes else [()]):
        values = tuple(zip(axes, combo))
        try:
            spec = apply(spec0, dict(values), origin="sweep") if values else spec0
        except ConfigError as e:
            raise ConfigError(f"sweep point {', '.join(f'{k}={v}' for k, v in values)}: {e}") from None
        out.append(Config(i, values, spec))
    return out


class TooManyPoints(ConfigError):
    """A sweep of more points than asked for (or than any sweep may have)."""

    def __init__(self, message: str, points: int):
        super().__init__(message)
        self.points = points


def check_points(points: int, launches: int = 1, max_points: int | None = None, axes: dict | None = None) -> None:
    """TooManyPoints when `points` exceeds `max_points` (None: only MAX_POINTS applies)."""
    limit = MAX_POINTS if max_points is None else min(max_points, MAX_POINTS)
    if points <= limit:
        return
    parts = ([f"{launches:,} program-size pair{'s' if launches != 1 else ''}"] if launches != 1 else []) + \
        [f"{n:,} values of {k}" for k, n in (axes or {}).items()]
    what = f" ({' x '.join(parts)})" if parts else ""
    if points > MAX_POINTS:
        raise TooManyPoints(f"this sweep has {points:,} points{what}: a sweep holds at most {MAX_POINTS:,} (its "
                            "table alone would fill gigabytes); split it or use fewer values", points)
    raise TooManyPoints(f"this sweep has {points:,} points{what}, more than {limit:,}: pass --yes (gpusim sweep) or "
                        "max_points=None (gpusim.sweep) to run it anyway", points)


def _scenarios(spec0, points) -> list[Config]:
    """Configurations given one by one ([{field: value, ...}, ...]; {} is the base itself):
    every point names a value for every field any point varies (the base's where it sets none)."""
    parsed = []
    for p in points:
        if not isinstance(p, dict):
            raise ConfigError(f"a list of sweep points holds dicts of field: value, got {p!r}")
        parsed.append({field_key(k): v for k, v in p.items()})
    keys = list(dict.fromkeys(k for p in parsed for k in p))
    out = []
    for i, p in enumerate(parsed):
        for k, v in p.items():
            check_varied(k, [parse_value(k, v)], spec0)
        try:
            spec = apply(spec0, p, origin="sweep") if p else spec0
        except ConfigError as e:
            raise ConfigError(f"sweep point {i} ({', '.join(f'{k}={v}' for k, v in p.items())}): {e}") from None
        out.append(Config(i, tuple((k, value_at(spec, k)) for k in keys), spec))
    return out


def size_label(size) -> str:
    if isinstance(size, str):
        return size
    return ",".join(f"{k}={v}" for k, v in size.items())




def load_sweep_toml(path) -> dict:
    """A sweep file's settings as gpusim.sweep keyword arguments (see module docstring);
    ConfigError naming the file and the setting for anything else."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"sweep file {str(p)!r} not found") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not a UTF-8 text file (byte {e.start}: {e.object[e.start:e.start + 1]!r}); "
                          "TOML files are UTF-8") from None
    except OSError as e:
        raise ConfigError(f"cannot read sweep file {str(p)!r}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    known = {"gpu", "programs", "sizes", "set", "vary", "seed"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{p}: unknown setting(s) {', '.join(sorted(unknown))}; a sweep file has "
                          f"{', '.join(sorted(known))}")
    out = {}
    if "programs" in data:
        progs = data["programs"]
        progs = [progs] if isinstance(progs, str) else progs
        if not isinstance(progs, list) or not all(isinstance(x, str) and x.strip() for x in progs):
            raise ConfigError(f"{p}: programs is a list of program names, e.g. programs = [\"vector_add\"], "
                              f"got {data['programs']!r}")
        out["programs"] = progs
    if "sizes" in data:
        sizes = data["sizes"]
        sizes = [sizes] if isinstance(sizes, (str, dict)) else sizes
        if not isinstance(sizes, list) or not sizes or not all(isinstance(x, (str, dict)) for x in sizes):
            raise ConfigError(f"{p}: sizes is a list of size names or tables of parameters, e.g. "
                              f"sizes = [\"default\", {{n = 4096}}], got {data['sizes']!r}")
        out["sizes"] = sizes
    if "seed" in data:
        if isinstance(data["seed"], bool) or not isinstance(data["seed"], int) or data["seed"] < 0:
            raise ConfigError(f"{p}: seed is a whole number >= 0, got {data['seed']!r}")
        out["seed"] = data["seed"]
    if "gpu" in data:
        g = data["gpu"]
        if not isinstance(g, str) or not g.strip():
            raise ConfigError(f"{p}: gpu is a preset name or a .toml file, got {g!r}")
        out["gpu"] = str(p.parent / g) if g.endswith(".toml") else g
    for table, name in (("set", "sets"), ("vary", "vary")):
        if table in data:
            if not isinstance(data[table], dict):
                raise ConfigError(f"{p}: [{table}] is a table of spec fields, got {table} = {data[table]!r}")
            out[name] = flatten(data[table])
    return out


def n_points(n_programs: int, n_sizes: int, n_configs: int) -> int:
    return math.prod((n_programs, n_sizes, n_configs))
