"""The 2-D 5-point stencil a lecturer writes first (docs/examples/stencil_2d.py), at the
size of its L2 check on a GPU (benchmarks/stencil_l2_probe.py): 256 x 512 float32."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "examples"))
import stencil_2d  # noqa: E402


def stencil_launch(h: int = 256, w: int = 512):
    c = stencil_2d.PROGRAM.case({"h": h, "w": w})
    return c.kernel, c.grid, c.block, c.args
