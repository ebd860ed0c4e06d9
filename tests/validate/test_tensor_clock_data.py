"""The tensor clock of the Hopper presets (`ClockSpec.tensor_clock_mhz`, gpusim/timing/clock_domain.py)
against the clock measured on an H100 (data/measurements/tensor_clock_h100.json,
`python -m validate.tensor_clock_probe`): mma.sync loops run at it, FFMA loops at the boost
clock, and no power or thermal limit was active while they ran. No GPU needed."""
import json
import statistics

import pytest

from gpusim import specs
from validate.datadir import DATA_DIR

DATA = json.loads((DATA_DIR / "tensor_clock_h100.json").read_text())


def _median_mhz(kernels, length="long"):
    return statistics.median(r["mhz_median"] for r in DATA["runs"] if r["kernel"] in kernels and r["length"] == length)


@pytest.mark.parametrize("preset", ["h100-datasheet", "h200-datasheet"])
def test_mma_loops_run_at_the_presets_tensor_clock(preset):
    assert _median_mhz(("mma_f16", "mma_s8")) == pytest.approx(specs.get(preset).clocks.tensor_clock_mhz, rel=0.01)


def test_ffma_loops_run_at_the_boost_clock():
    assert _median_mhz(("ffma",)) == pytest.approx(specs.get("h100-datasheet").clocks.sm_clock_mhz, rel=0.02)


def test_the_tensor_clock_is_no_power_or_thermal_limit():
    reasons = {int(row.rsplit(",", 1)[1], 16) for row in DATA["sampler"]}
    assert reasons <= {0x0, 0x1}          # nvidia-smi's clocks_event_reasons: none, or GPU idle
