"""The constant cache's misses as measured on the H100/H200 (validate/constant_cache_probe.py,
gpusim/timing/fetch.py): one warp's dependent reads of parameters (bank 0) or `__constant__` data
(bank 3) in K distinct 64-B lines, the probe's own kernels timed by gpusim with the measured
figures in the SM's fields (the presets leave them at 0, the L2 hit latency for every line, for
now: docs/mechanisms_24.md section 41). One property each."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import gpusim
from gpusim.specs import presets
from validate.constant_cache_probe import MEASURED_FILLS as MEASURED, _args, source
from validate.datadir import DATA_DIR

pytestmark = pytest.mark.slow


def _measured_spec(name: str = "h100", **fields):
    base = presets.get(name)
    return dataclasses.replace(base, sm=dataclasses.replace(base.sm, **{**MEASURED, **fields}))


def _cycles(name: str, spec=None) -> float:
    spec = _measured_spec() if spec is None else spec
    out = np.zeros(4 * 1024, np.uint64)
    r = gpusim.launch(gpusim.CudaSource(source(), name), 1, 32, _args(out), gpu=spec, timing=True, outputs=False)
    return r.metrics["sm__cycles_elapsed.max"]


def _measured_chain(name: str, gpu: str) -> float:
    """The probe's cold chain cycles (median of the launches under Nsight) minus its warm ones."""
    doc = json.loads((DATA_DIR / f"constant_cache_{gpu}.json").read_text())
    row = next(r for r in doc["kernels"] if r["kernel"] == name and r["blocks"] == 1 and r["threads"] == 32)
    runs = row["clocks_under_ncu"]
    return float(np.median([x["cold_median"] - x["warm_median"] for x in runs]))


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_sixteen_parameter_lines_cost_what_the_gpu_measured(gpu):
    """16 parameter lines read one after another: on both GPUs 394 cycles beyond the chain's warm time
    (458 - 64); gpusim, where an earlier parameter line already missed, 16 later misses."""
    model = _cycles("p_lines16", _measured_spec(gpu)) - _cycles("p_lines0", _measured_spec(gpu))
    warm = 16 * 4                                    # the chain's 16 dependent IMADs, lines present
    assert _measured_chain("p_lines16", gpu) == pytest.approx(394, abs=8)
    assert model - warm == pytest.approx(_measured_chain("p_lines16", gpu), rel=0.15)


def test_parameter_lines_far_apart_cost_as_neighbours():
    """Two parameter lines 1 KiB apart cost the GPU what two neighbouring lines cost (108 cycles cold):
    bank 0 is not filled in 256-B or larger pieces, and gpusim charges them alike."""
    assert _measured_chain("p_apart", "h100") == _measured_chain("p_lines2", "h100")
    assert _cycles("p_apart") == _cycles("p_lines2")


def test_constant_bank_lines_miss_one_by_one():
    """`__constant__` lines 64 B apart (bank 3): each a fill of its own, about 200 cycles under Nsight's
    flushes on both GPUs (16 lines 3,205-3,306 cycles), where parameter lines follow 24 apart."""
    for gpu in ("h100", "h200"):
        assert _measured_chain("c_lines16", gpu) / 16 == pytest.approx(200, rel=0.06)
    per_line = (_cycles("c_lines16") - _cycles("c_lines0") - 16 * 4) / 16
    assert per_line == pytest.approx(MEASURED["constant_fill_cycles"], rel=0.1)


def test_later_parameter_misses_follow_the_field():
    """`sm.parameter_next_fill_cycles` is honoured: doubling it adds 16 x 24 cycles to 16 lines."""
    slow = _measured_spec(parameter_next_fill_cycles=48.0)
    assert _cycles("p_lines16", slow) - _cycles("p_lines16") == pytest.approx(16 * 24, rel=0.15)


def test_unset_fields_fill_every_constant_line_at_the_l2_hit_latency():
    """The presets' 0s: each of 16 parameter lines a fill of the L2 hit latency of its own (273 on the H100)."""
    spec = presets.get("h100")
    assert spec.sm.parameter_fill_cycles == spec.sm.parameter_next_fill_cycles == 0
    per_line = (_cycles("p_lines16", spec) - _cycles("p_lines0", spec) - 16 * 4) / 16
    assert per_line == pytest.approx(spec.l2.hit_latency_cycles, rel=0.05)
