"""Calibrated presets: TOML files written by `python -m validate calibrate`, one per
measured GPU (e.g. `h200-calibrated.toml`). Each names its cited base preset and only
the numbers the calibration fitted, with the fit's residuals in comments; the base
preset is never edited. `gpusim.specs.get("h200-calibrated")` loads one by name.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def available() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.toml"))


def path(name: str) -> Path | None:
    p = HERE / f"{name}.toml"
    return p if p.exists() else None


def load(name: str):
    import dataclasses

    from gpusim.specs.overrides import load_toml
    spec = load_toml(path(name))
    src = spec.source.replace(str(HERE), "gpusim/specs/calibrated")   # checkout-independent
    return dataclasses.replace(spec, source=src)
