"""The pictures of the README's "Teaching" section, drawn by `gpusim.viz` from simulated runs
(never by hand):

    python docs/make_teaching_pictures.py [OUT_DIR] [NAME ...]   # default: all, into docs/teaching (~3 min)

Each picture is one lesson, on the default preset (h100):
- divergence.png: docs/examples/mandelbrot.py at its default size, the most divergent of 8
  sampled blocks (block 0, the set's far corner, is converged);
- bank_conflicts.png: transpose_shared's 32-way conflicted tile read beside the padded tile's;
- coalescing.png: transpose_naive's strided store, one sector per lane;
- memory_chart.png: docs/examples/stencil_2d.py at 256 x 512 (its 524 KB input), every block
  simulated (`mode="full"`), so the L2 sees the rows neighbouring blocks share;
- warp_timeline.png: transpose_shared's warps on SM 0, issue and stall states over time;
- roofline.png: matmul_tiled at 512 x 512 x 512 (1,024 blocks: the default size's 24 blocks
  leave 108 of the 132 SMs idle, and its point far under every roof);
- occupancy.png: what limits matmul_tiled's blocks per SM, and its waves;
- reduction_ladder.png: the five reduction kernels side by side (time and counters);
- ldmatrix_banks.png: programs/cuda_kernels/mma_gemm.py's ldmatrix.x4 of the A tile (line 68),
  its rows 64 bytes apart unpadded (4-way conflicts in each 8-row phase, 16 wavefronts) beside
  the tile padded by 8 halves (4 wavefronts);
- cp_async_coalescing.png: the same program's cp.async of the A tile (line 45): each lane's 16
  bytes, 4 lanes per 64-byte tile row, every byte of the 16 sectors used.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs" / "examples"))

PICTURES = ("divergence", "bank_conflicts", "coalescing", "memory_chart", "warp_timeline", "roofline", "occupancy",
            "reduction_ladder", "ldmatrix_banks", "cp_async_coalescing")
MMA_GEMM = ROOT / "programs" / "cuda_kernels" / "mma_gemm.py"
MMA_GEMM_LINES = {"ldmatrix": 68, "cp_async": 45}         # LDMATRIX_X4(a[i], ...), CP_ASYNC16(&As[s][r][k], ...)
ROOFLINE_SIZE = {"m": 512, "n": 512, "k": 512}


def make(out: Path, names=PICTURES) -> list[Path]:
    import mandelbrot
    import stencil_2d

    import gpusim
    import programs
    from gpusim.cli.program_args import FAMILY_ORDER
    from gpusim.timing.engine import TimingOptions
    from gpusim.viz import (bank_map, coalescing_map, divergence_map, ladder, memory_chart, occupancy, roofline,
                            warp_timeline)

    def case(name, size="default"):
        return programs.get(name).case(size)

    def timed(c, **opts):
        return gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True, shared_bytes=c.shared_bytes,
                             timing_options=TimingOptions(**opts) if opts else None)

    def mma_gemm(**params):
        return programs.load_file(MMA_GEMM).case(params)

    out.mkdir(parents=True, exist_ok=True)
    figures = {
        "divergence": lambda: divergence_map.plot(divergence_map.divergence_map(mandelbrot.PROGRAM.case("default"))),
        "bank_conflicts": lambda: bank_map.plot([bank_map.bank_map(case("transpose_shared")),
                                                 bank_map.bank_map(case("transpose_padded"))]),
        "coalescing": lambda: coalescing_map.plot(coalescing_map.coalescing_map(case("transpose_naive"))),
        "memory_chart": lambda: memory_chart.plot(memory_chart.memory_chart(
            timed(stencil_2d.PROGRAM.case("default"), mode="full"))),
        "warp_timeline": lambda: warp_timeline.plot(warp_timeline.warp_timeline(
            warp_timeline.record(case("transpose_shared")))),
        "roofline": lambda: roofline.plot(roofline.roofline(timed(case("matmul_tiled", ROOFLINE_SIZE)))),
        "occupancy": lambda: occupancy.plot(occupancy.occupancy_view(case("matmul_tiled"))),
        "reduction_ladder": lambda: ladder.plot(ladder.ladder({n: timed(case(n)) for n in FAMILY_ORDER["reduce"]},
                                                              family="reduce", gpu="h100")),
        "ldmatrix_banks": lambda: bank_map.plot([bank_map.bank_map(mma_gemm(pad=p), MMA_GEMM_LINES["ldmatrix"])
                                                 for p in (0, 8)]),
        "cp_async_coalescing": lambda: coalescing_map.plot(coalescing_map.coalescing_map(
            mma_gemm(), MMA_GEMM_LINES["cp_async"])),
    }
    written = []
    for name in names:
        path = out / f"{name}.png"
        figures[name]().savefig(path, dpi=90)
        written.append(path)
    return written


if __name__ == "__main__":
    args = sys.argv[1:]
    out = Path(args[0]) if args and args[0] not in PICTURES else ROOT / "docs" / "teaching"
    names = [a for a in args if a in PICTURES] or PICTURES
    for p in make(out, names):
        print(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
