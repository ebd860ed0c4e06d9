"""Calibrated presets: TOML files written by `python -m validate calibrate`, one per
measured GPU (`h200.toml`, `h100.toml`) and one per transfer (`h100-from-h200.toml`: the
H200's fitted numbers on the H100 datasheet). Each names its cited base preset
(`h200-datasheet`) and only the numbers the calibration fitted, with the fit's residuals
in comments and a `[calibration]` table saying against which data, when and how; the
base preset is never edited. `gpusim.specs.get("h200")` loads `h200.toml`.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
import tomllib
import dataclasses

HERE = Path(__file__).resolve().parent
_LOADED: dict[str, tuple[tuple[int, int], object]] = {}   # name -> (file's (mtime_ns, size), spec)
_LOCK = threading.Lock()
_PATHS: dict[str, str] = {}                               # name -> its file's path (pathlib's join costs a stat's time)


def available() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.toml"))


def path(name: str) -> Path | None:
    p = HERE / f"{name}.toml"
    return p if p.exists() else None


def info(name: str) -> dict:
    """The `[calibration]` table of a calibrated preset (data file, GPU, date, command)."""
    p = path(name)
    return dict(tomllib.loads(p.read_text()).get("calibration", {})) if p else {}


def load(name: str):
    """The calibrated spec `name`, parsed once per version of its file (a launch resolves its
    preset up to three times; parsing and validating the TOML took about 3 ms each), or None
    where there is no such file (found by one stat: every launch asks)."""
    from gpusim.specs.overrides import load_toml  # a cycle: overrides reaches the presets, which load these
    where = _PATHS.get(name)
    if where is None:
        where = _PATHS[name] = str(HERE / f"{name}.toml")
    try:
        st = os.stat(where)
    except FileNotFoundError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _LOADED.get(name)                     # (a dict read is atomic: the lock guards the writes)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    p = Path(where)
    spec = load_toml(p)
    src = spec.source.replace(str(HERE), "gpusim/specs/calibrated")   # checkout-independent
    spec = dataclasses.replace(spec, source=src)
    with _LOCK:
        _LOADED[name] = (stamp, spec)
    return spec
