"""The tensor clock of the Hopper presets (`ClockSpec.tensor_clock_mhz`, gpusim/timing/clock_domain.py)
against the clock measured on an H100 and an H200 (data/measurements/tensor_clock_{h100,h200}.json,
`python -m validate.tensor_clock_probe`): mma.sync loops run at it, FFMA loops at the boost
clock, and no power or thermal limit was active while they ran. No GPU needed."""
import json
import statistics

import pytest

from gpusim import specs
from validate.datadir import DATA_DIR

GPUS = ("h100", "h200")


def _data(gpu):
    return json.loads((DATA_DIR / f"tensor_clock_{gpu}.json").read_text())


def _median_mhz(gpu, kernels, length="long"):
    return statistics.median(r["mhz_median"] for r in _data(gpu)["runs"] if r["kernel"] in kernels and r["length"] == length)


@pytest.mark.parametrize("gpu", GPUS)
def test_mma_loops_run_at_the_presets_tensor_clock(gpu):
    assert _median_mhz(gpu, ("mma_f16", "mma_s8")) == pytest.approx(specs.get(f"{gpu}-datasheet").clocks.tensor_clock_mhz, rel=0.01)


@pytest.mark.parametrize("gpu", GPUS)
def test_ffma_loops_run_at_the_boost_clock(gpu):
    assert _median_mhz(gpu, ("ffma",)) == pytest.approx(specs.get(f"{gpu}-datasheet").clocks.sm_clock_mhz, rel=0.02)


def test_the_h200_runs_its_tensor_loops_slower_than_the_h100():
    assert _median_mhz("h200", ("mma_f16",)) < _median_mhz("h100", ("mma_f16",)) - 15


@pytest.mark.parametrize("gpu", GPUS)
def test_the_tensor_clock_is_no_power_or_thermal_limit(gpu):
    reasons = {int(row.rsplit(",", 1)[1], 16) for row in _data(gpu)["sampler"]}
    assert reasons <= {0x0, 0x1}          # nvidia-smi's clocks_event_reasons: none, or GPU idle
