"""The roofline's tensor ceilings come from GPUSpec.tensor; `gpusim presets --show` prints
them with their sources."""
import dataclasses

import pytest

from gpusim import specs
from gpusim.specs.describe import describe
from gpusim.viz.roofline import roofline


def test_h100_fp16_tensor_ceiling_is_sms_times_rate_times_tensor_clock():
    h100 = specs.get("h100-datasheet")
    r = roofline(gpu=h100)
    assert r.ceiling("FP16/BF16 tensor") == pytest.approx(132 * 4096 * h100.clocks.tensor_clock_mhz * 1e6)
    assert r.ceiling("FP16/BF16 tensor") == pytest.approx(989.4e12, rel=1e-4)     # the whitepaper's dense FP16
    assert r.ceiling("FP8 tensor") == pytest.approx(2 * r.ceiling("FP16/BF16 tensor"))
    assert r.ceiling("INT8 tensor") == pytest.approx(2 * r.ceiling("FP16/BF16 tensor"))


def test_a100_has_no_fp8_ceiling():
    names = [c.name for c in roofline(gpu="a100").compute]
    assert "INT8 tensor" in names and "FP8 tensor" not in names


def test_the_tensor_ceiling_follows_the_spec_field():
    h100 = specs.get("h100-datasheet")
    half = dataclasses.replace(h100, tensor=dataclasses.replace(h100.tensor, fp16_dense_flop_per_cycle_per_sm=2048.0))
    assert roofline(gpu=half).ceiling("FP16/BF16 tensor") == pytest.approx(
        roofline(gpu=h100).ceiling("FP16/BF16 tensor") / 2)


def test_presets_show_prints_tensor_peaks_and_their_sources():
    text = describe(specs.get("h100-datasheet"))
    assert "peak FP16/BF16 tensor (dense)" in text and "peak INT8 tensor (dense)" in text
    assert "[TC-WP]" in text and "989.4" in text
