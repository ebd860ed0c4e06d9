"""Roofline: ceilings are the spec's numbers; the kernel's FLOPs are the work it does."""
import pytest

import gpusim
import programs
from gpusim import specs
from gpusim.specs.describe import derived
from gpusim.viz import roofline


def test_h100_ceilings_are_the_specs_pipes_banks_slices_and_hbm():
    s = specs.get("h100")
    hz = s.clocks.sm_clock_mhz * 1e6
    r = roofline.roofline(gpu="h100")
    assert r.ceiling("FP32") == pytest.approx(132 * 4 * (16 + 16) * 2 * hz)           # fmaheavy + fmalite
    assert r.ceiling("FP16") == pytest.approx(2 * r.ceiling("FP32"))                   # HFMA2 on the FMA pipes
    assert r.ceiling("FP64") == pytest.approx(132 * 4 * 16 * 2 * hz)
    assert r.ceiling("HBM") == s.hbm.bandwidth_GBps * 1e9 == 3352e9
    # the slices run at the L2's own clock (per L2 cycle), whatever the SMs' clock
    assert r.ceiling("L2") == pytest.approx(s.l2.slices * s.l2.bandwidth_bytes_per_cycle_per_slice * s.clocks.l2_clock_mhz * 1e6)
    assert r.ceiling("shared") == pytest.approx(132 * 32 * 4 * hz)


def test_fp32_and_fp64_ceilings_agree_with_gpusim_presets_show():
    shown = dict(derived(specs.get("h200")))
    r = roofline.roofline(gpu="h200")
    assert f"{r.ceiling('FP32') / 1e12:.1f} TFLOP/s" == shown["peak FP32 (FMA = 2 flops)"]
    assert f"{r.ceiling('FP64') / 1e12:.1f} TFLOP/s" == shown["peak FP64 (FMA = 2 flops)"]


def test_a100_fp16_ceiling_uses_its_fp16_pipe_78_tflops():
    assert roofline.roofline(gpu="a100-datasheet").ceiling("FP16") / 1e12 == pytest.approx(78.0, rel=0.01)


@pytest.fixture(scope="module")
def matmul():
    c = programs.get("matmul_tiled").case("default")
    return c, gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", timing=True)


def test_tiled_matmul_flops_are_2mnk_from_its_sass(matmul):
    c, res = matmul
    r = roofline.roofline(res)
    p = c.params
    assert r.flops_source == "sass"
    assert r.flops == {"fp32": 2 * p["m"] * p["n"] * p["k"], "fp16": 0, "fp64": 0}


def test_kernel_point_uses_the_timed_results_time_and_dram_bytes(matmul):
    _, res = matmul
    r = roofline.roofline(res)
    assert r.time_s == res.metrics["gpu__time_duration.sum"] * 1e-9
    assert r.intensity("hbm") == r.total_flops / (res.metrics["dram__bytes_read.sum"]
                                                  + res.metrics["dram__bytes_write.sum"])


def test_untimed_result_is_refused_with_a_hint():
    c = programs.get("vector_add").case("default")
    res = gpusim.launch(c.kernel, c.grid, c.block, c.args)
    with pytest.raises(ValueError, match="timing=True"):
        roofline.roofline(res)


def test_roofline_writes_a_png(matmul, tmp_path):
    out = tmp_path / "roofline.png"
    roofline.plot(roofline.roofline(matmul[1], measured_time_ns=1e4), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
