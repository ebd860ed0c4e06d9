"""figures_for: every applicable figure by name, written as PNGs; matplotlib stays lazy."""
import subprocess
import sys

import numpy as np
import programs
from gpusim.viz import FIGURES, capture, figures_for


def test_figures_for_transpose_shared_gives_every_kind_and_writes_pngs(tmp_path):
    figs = figures_for("transpose_shared", gpu="h200", out_dir=tmp_path)
    want = tuple(n for n in FIGURES if n != "roofline")       # a copy: no floating-point work, no roofline
    assert tuple(figs) == want
    for name in want:
        png = tmp_path / f"transpose_shared_{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "transpose_shared_roofline.png").exists()


def test_a_kernel_with_floating_point_work_gets_its_roofline():
    assert "roofline" in figures_for("matmul_tiled", names=("roofline",))


def test_a_kernel_without_shared_memory_gets_no_bank_map():
    figs = figures_for("vector_add", names=("bank_map", "coalescing_map"))
    assert set(figs) == {"coalescing_map"}


def test_timed_result_alone_gives_the_roofline_and_the_memory_chart():
    import gpusim
    c = programs.get("vector_add").case("default")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True)
    assert set(figures_for(r)) == {"memory_chart", "roofline"}


def test_capture_leaves_the_callers_arrays_alone():
    c = programs.get("vector_add").case("default")
    before = c.args[2].copy()
    capture(c)
    assert np.array_equal(c.args[2], before, equal_nan=True)


def test_importing_gpusim_and_gpusim_viz_does_not_import_matplotlib():
    code = "import sys, gpusim, gpusim.viz; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
