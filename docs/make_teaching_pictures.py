"""The pictures of the README's "Teaching" section, drawn by `gpusim.viz` from simulated runs
of `programs/` (never by hand):

    python docs/make_teaching_pictures.py [OUT_DIR]        # default: docs/teaching

Each picture is one lesson, at the program's default size on the default preset (h100):
- divergence.png: the lane-parity branch and data-dependent loop of divergence_demo;
- bank_conflicts.png: transpose_shared's 32-way conflicted tile read beside the padded tile's;
- coalescing.png: transpose_naive's strided store, one sector per lane;
- warp_timeline.png: transpose_shared's warps on SM 0, issue and stall states over time;
- roofline.png: matmul_tiled against the H100's compute and bandwidth ceilings;
- occupancy.png: what limits matmul_tiled's blocks per SM, and its waves;
- reduction_ladder.png: the five reduction kernels side by side (time and counters).
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PICTURES = ("divergence", "bank_conflicts", "coalescing", "warp_timeline", "roofline", "occupancy",
            "reduction_ladder")


def make(out: Path) -> list[Path]:
    import gpusim
    import programs
    from gpusim.cli import FAMILY_ORDER
    from gpusim.viz import bank_map, coalescing_map, divergence_map, ladder, occupancy, roofline, warp_timeline

    def case(name):
        return programs.get(name).case("default")

    def timed(name):
        c = case(name)
        return gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True, shared_bytes=c.shared_bytes)

    out.mkdir(parents=True, exist_ok=True)
    figures = {
        "divergence": lambda: divergence_map.plot(divergence_map.divergence_map(case("divergence_demo"), warps=range(4))),
        "bank_conflicts": lambda: bank_map.plot([bank_map.bank_map(case("transpose_shared")),
                                                 bank_map.bank_map(case("transpose_padded"))]),
        "coalescing": lambda: coalescing_map.plot(coalescing_map.coalescing_map(case("transpose_naive"))),
        "warp_timeline": lambda: warp_timeline.plot(warp_timeline.warp_timeline(
            warp_timeline.record(case("transpose_shared")))),
        "roofline": lambda: roofline.plot(roofline.roofline(timed("matmul_tiled"))),
        "occupancy": lambda: occupancy.plot(occupancy.occupancy_view(case("matmul_tiled"))),
        "reduction_ladder": lambda: ladder.plot(ladder.ladder({n: timed(n) for n in FAMILY_ORDER["reduce"]},
                                                              family="reduce", gpu="h100")),
    }
    written = []
    for name in PICTURES:
        path = out / f"{name}.png"
        figures[name]().savefig(path, dpi=90)
        written.append(path)
    return written


if __name__ == "__main__":
    for p in make(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "teaching"):
        print(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
