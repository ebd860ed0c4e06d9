"""The held-out validation suite (validate/heldout.py): every kernel's default case runs in
gpusim and equals its numpy reference, which the untouched outputs do not; `validate
measure --suite heldout` selects exactly these kernels and `validate compare` rebuilds
them; the committed H200 measurement covers every size with passing checks and current
params. No GPU needed."""
import json
import math
from pathlib import Path

import pytest

import gpusim
import programs
from validate import measure, passes, predict, suites
from validate.heldout import HELDOUT
from validate.microbench import MICROBENCHMARKS
from validate.datadir import DATA_DIR

DATA = DATA_DIR / "h200_heldout.json"
NAMES = list(HELDOUT)


def test_the_suite_has_30_or_more_kernels_named_apart_from_programs_and_microbenchmarks():
    assert len(HELDOUT) >= 30
    assert not set(HELDOUT) & (set(programs.PROGRAMS) | set(MICROBENCHMARKS))
    assert all(spec.name == name for name, spec in HELDOUT.items())


@pytest.mark.parametrize("name", NAMES)
def test_every_kernel_has_a_default_and_a_measured_size(name):
    sizes = HELDOUT[name].sizes
    assert "default" in sizes and len(sizes) >= 2, sizes


@pytest.mark.parametrize("name", NAMES)
def test_default_case_runs_in_gpusim_and_matches_numpy(name):
    case = HELDOUT[name].case("default")
    with pytest.raises(AssertionError):          # the outputs start wrong: the check means something
        case.check()
    gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu="h200", shared_bytes=case.shared_bytes)
    case.check()


def test_measure_suite_heldout_selects_every_heldout_size_and_nothing_else():
    want = [("heldout", n, s) for n, spec in HELDOUT.items() for s in spec.sizes]
    assert suites.selected(None, None, "heldout") == want
    assert suites.spec_of("heldout", "warp_scan") is HELDOUT["warp_scan"]


def test_measure_default_suite_is_unchanged_and_all_is_both():
    default = suites.selected(None, None)
    assert {k for k, _, _ in default} == {"program", "microbenchmark"}
    assert suites.selected(None, None, "all") == (default + suites.selected(None, None, "heldout")
                                                   + suites.selected(None, None, "heldout2"))
    assert suites.selected("^strided_read/", None, "heldout") == [
        ("heldout", "strided_read", s) for s in HELDOUT["strided_read"].sizes]


def test_measure_passes_the_suite_to_its_workers():
    import argparse
    p = argparse.ArgumentParser()
    measure.add_arguments(p)
    args = p.parse_args(["--suite", "heldout"])
    assert passes.worker_cmd(args, "events", Path("x.json"))[-2:] == ["--suite", "heldout"]
    assert p.parse_args([]).suite == "programs"


def test_compare_rebuilds_a_heldout_record_and_labels_it_heldout():
    rec = {"name": "soa_read/default", "heldout": "soa_read", "size": "default",
           "metrics": {"gpu__time_duration.sum": 2500.0}}
    case = predict.build_case(rec)
    assert case.kernel is HELDOUT["soa_read"].case("default").kernel
    row = predict.predict(rec, "h200")
    assert row.kind == "heldout" and row.predicted["gpu__time_duration.sum"] > 0


# ---- the committed measurement ----------------------------------------------------------

@pytest.fixture(scope="module")
def measured():
    return json.loads(DATA.read_text())


def test_the_measurement_says_how_it_was_made(measured):
    prov = measured["provenance"]
    assert prov["gpu_name"] == "NVIDIA H200"
    assert prov["command"].startswith("python -m validate measure") and "--suite heldout" in prov["command"]
    assert 500 < prov["sm_clock_mhz_observed"] < 2500


def test_every_heldout_size_was_measured_and_passed(measured):
    seen = {(r["heldout"], r["size"]) for r in measured["kernels"]
            if r.get("check") == "passed" and r.get("check_ncu") == "passed"
            and r.get("metrics", {}).get("gpu__time_duration.sum", 0) > 0}
    missing = sorted((n, s) for n, spec in HELDOUT.items() for s in spec.sizes if (n, s) not in seen)
    assert not missing, f"held-out sizes not measured or not passing: {missing}"


def test_recorded_params_are_the_current_sizes(measured):
    """Changing a held-out kernel's sizes makes the measurement stale: measure again."""
    stale = [r["name"] for r in measured["kernels"]
             if r["heldout"] not in HELDOUT or HELDOUT[r["heldout"]].sizes.get(r["size"]) != r["params"]]
    assert not stale, stale


def test_measured_sizes_take_20us_to_20ms_on_the_h200(measured):
    out = {r["name"]: r["metrics"]["gpu__time_duration.sum"] / 1e3 for r in measured["kernels"]
           if r["size"] != "default" and not 20 <= r["metrics"]["gpu__time_duration.sum"] / 1e3 <= 20_000}
    assert not out, f"measured sizes outside 20 us .. 20 ms: {out}"
    assert all(math.isfinite(v) for r in measured["kernels"] for v in r["metrics"].values())
