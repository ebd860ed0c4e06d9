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


def expand_values(key: str, raw) -> list:
    """The values `raw` (a list, a 'a,b,c' string or a 'START:STOP:N' range) gives field `key`,
    each parsed by the field's type."""
    if isinstance(raw, (list, tuple)):
        items = list(raw)
    elif isinstance(raw, str) and ":" in raw and schema()[key][0] in (int, float):
        parts = raw.split(":")
        if len(parts) != 3:
            raise ConfigError(f"range for {key} must be START:STOP:N or START:STOP:xFACTOR, got {raw!r}")
        a, b = _number(parts[0]), _number(parts[1])
        if parts[2].strip().lower().startswith("x"):
            f = _number(parts[2].strip()[1:])
            if f <= 1 or a <= 0 or b < a:
                raise ConfigError(f"geometric range for {key} needs 0 < START <= STOP and a factor > 1, got {raw!r}")
            items, v = [], a
            while v <= b * (1 + 1e-12):
                items.append(v)
                v *= f
        else:
            n = _number(parts[2])
            if not (n.is_integer() and n >= 1):
                raise ConfigError(f"range for {key}: N (the number of values) must be a positive integer, "
                                  f"got {parts[2]!r}")
            n = int(n)
            items = [a] if n == 1 else [a + (b - a) * i / (n - 1) for i in range(n)]
        if schema()[key][0] is int:
            items = [round(v) for v in items]
        items = [int(v) if isinstance(v, float) and v.is_integer() and schema()[key][0] is int else v
                 for v in items]
    elif isinstance(raw, str):
        items = [x.strip() for x in raw.split(",") if x.strip()]
    else:
        items = [raw]
    if not items:
        raise ConfigError(f"no values given for {key}")
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


def configs(base, vary: dict | None = None, sets: dict | None = None) -> list[Config]:
    """Every combination of `vary` ({field: values}) over `base` (a preset, .toml path or
    GPUSpec) with the fixed overrides `sets`; each spec validated now."""
    spec0 = resolve(base) if not isinstance(base, GPUSpec) else base
    fixed = {field_key(k): v for k, v in (sets or {}).items()}
    if fixed:
        spec0 = apply(spec0, fixed, origin="sweep set")
    if isinstance(vary, (list, tuple)):
        return _scenarios(spec0, vary)
    axes = {}
    for k, vals in (vary or {}).items():
        key = field_key(k)
        if key in axes:
            raise ConfigError(f"{key} is varied twice")
        vals = expand_values(key, vals)
        check_varied(key, vals, spec0)
        axes[key] = vals
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


def parse_size(text: str):
    """'default' -> 'default'; 'rows=1024,cols=1024' -> {'rows': 1024, 'cols': 1024}."""
    if "=" not in text:
        return text.strip()
    from gpusim.cli import parse_value as value
    out = {}
    for item in text.split(","):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise ConfigError(f"--size expects a name or KEY=VALUE,KEY=VALUE, got {text!r}")
        out[k.strip()] = value(v)
    return out


def load_sweep_toml(path) -> dict:
    """A sweep file's settings as gpusim.sweep keyword arguments (see module docstring)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"sweep file {str(p)!r} not found") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    known = {"gpu", "programs", "sizes", "set", "vary", "seed"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{p}: unknown setting(s) {', '.join(sorted(unknown))}; a sweep file has "
                          f"{', '.join(sorted(known))}")
    out = {k: data[k] for k in ("programs", "sizes", "seed") if k in data}
    if "gpu" in data:
        g = data["gpu"]
        out["gpu"] = str(p.parent / g) if isinstance(g, str) and g.endswith(".toml") else g
    if "set" in data:
        out["sets"] = flatten(data["set"])
    if "vary" in data:
        out["vary"] = flatten(data["vary"])
    if isinstance(out.get("programs"), str):
        out["programs"] = [out["programs"]]
    return out


def n_points(n_programs: int, n_sizes: int, n_configs: int) -> int:
    return math.prod((n_programs, n_sizes, n_configs))
