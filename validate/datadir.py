"""Where the measurements live: `DATA_DIR`, the one place that knows the path.

The committed measurements (Nsight Compute counters and durations of H100/H200 runs, the
semantics, tensor and TMA probes' npz files, SASS and CUDA text, run logs) sit in
`data/measurements/` at the top of the repository, outside the importable packages: they are
data the model is checked against, not code. `GPUSIM_DATA_DIR=/my/folder` points `validate`
at another folder instead (its default `--data`/`--out` files and `ncu_replay.json`).

Until issue 27 the folder was `validate/data/`; committed results made then name that path in
their provenance, which stays as it was. A user who gives an old `validate/data/x.json` path
that no longer exists gets a one-line usage error naming the new one (`measurement_file`).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("GPUSIM_DATA_DIR") or ROOT / "data" / "measurements")
OLD_DIR = "validate/data"


def moved_from_old_dir(path: Path) -> Path | None:
    """Where an old `validate/data/...` path's file is now (None for any other path)."""
    text = Path(path).as_posix()
    head, sep, rest = text.partition(OLD_DIR + "/")
    if not sep or (head and not head.endswith("/")) or Path(path).exists():
        return None
    return DATA_DIR / rest


def measurement_file(text: str) -> Path:
    """argparse `type=` for a measurement file argument: the path, or a usage error for an old
    `validate/data/` path saying where the data went."""
    path = Path(text)
    new = moved_from_old_dir(path)
    if new is not None:
        shown = new.relative_to(ROOT) if new.is_relative_to(ROOT) else new
        raise argparse.ArgumentTypeError(f"{text}: the measurements moved from {OLD_DIR}/ to "
                                         f"{shown.parent}/ (validate/datadir.py): give {shown}")
    return path
