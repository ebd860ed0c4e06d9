"""The second held-out validation suite (validate/heldout2.py): every kernel's default case runs
in gpusim and equals its numpy reference, which the untouched outputs do not; `validate
measure --suite heldout2` selects exactly the measured sizes; `validate compare` rebuilds the
records; the textbook orderings name measured launches and are judged right; and, once
committed, the measurements cover every size with passing checks, current params, and show
the expected orderings. No GPU needed."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpusim
import programs
from validate import cli, compare, measure, orderings, passes, predict, suites
from validate.heldout import HELDOUT
from validate.heldout2 import HELDOUT2, ORDERINGS, Ordering, check_orderings, measured_sizes
from validate.microbench import MICROBENCHMARKS
from validate.datadir import DATA_DIR

ROOT = Path(__file__).resolve().parents[2]
DATA = {gpu: DATA_DIR / f"{gpu}_heldout2.json" for gpu in ("h200", "h100")}
NAMES = list(HELDOUT2)
MEASURED = {f"{n}/{s}" for n in NAMES for s in measured_sizes(n)}


def test_the_suite_has_30_or_more_kernels_named_apart_from_every_other_suite():
    assert len(HELDOUT2) >= 30
    others = set(programs.PROGRAMS) | set(MICROBENCHMARKS) | set(HELDOUT)
    assert not set(HELDOUT2) & others
    assert all(spec.name == name for name, spec in HELDOUT2.items())


@pytest.mark.parametrize("name", NAMES)
def test_every_kernel_has_a_default_and_two_or_more_measured_sizes(name):
    assert "default" in HELDOUT2[name].sizes and len(measured_sizes(name)) >= 2, HELDOUT2[name].sizes


@pytest.mark.parametrize("name", NAMES)
def test_default_case_runs_in_gpusim_and_matches_numpy(name):
    case = HELDOUT2[name].case("default")
    with pytest.raises(AssertionError):          # the outputs start wrong: the check means something
        case.check()
    gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu="h200", shared_bytes=case.shared_bytes)
    case.check()


def test_kernel_function_names_are_distinct():
    """Nsight's kernel names are matched to launches by the Python function's name."""
    kernels = {n: HELDOUT2[n].case("default").kernel.py_func.__name__ for n in NAMES}
    assert len(set(kernels.values())) == len(kernels), kernels


def test_measure_suite_heldout2_selects_the_measured_sizes_and_no_default():
    got = suites.selected(None, None, "heldout2")
    assert got == [("heldout2", n, s) for n in NAMES for s in measured_sizes(n)]
    assert len(got) == len(MEASURED) and all(s != "default" for _, _, s in got)
    assert suites.spec_of("heldout2", "wave_quant") is HELDOUT2["wave_quant"]


def test_measure_all_is_every_suite():
    assert suites.selected(None, None, "all") == (suites.selected(None, None) + suites.selected(None, None, "heldout")
                                                   + suites.selected(None, None, "heldout2"))


def test_measure_passes_the_suite_to_its_workers():
    import argparse
    p = argparse.ArgumentParser()
    measure.add_arguments(p)
    args = p.parse_args(["--suite", "heldout2"])
    assert passes.worker_cmd(args, "ncu", Path("x.json"))[-2:] == ["--suite", "heldout2"]


def _record(name, size, ns):
    return {"name": f"{name}/{size}", "heldout2": name, "size": size, "params": HELDOUT2[name].sizes[size],
            "check": "passed", "check_ncu": "passed", "metrics": {"gpu__time_duration.sum": ns}}


def test_compare_rebuilds_a_heldout2_record_and_labels_it_heldout2():
    rec = _record("vec_triad", "default", 2500.0)
    assert predict.build_case(rec).kernel is HELDOUT2["vec_triad"].case("default").kernel
    row = predict.predict(rec, "h200")
    assert row.kind == "heldout2" and row.predicted["gpu__time_duration.sum"] > 0


def test_compare_reports_the_orderings_for_a_heldout2_file(tmp_path):
    path = tmp_path / "h200_heldout2.json"
    path.write_text(json.dumps({"provenance": {"gpu_short_name": "h200"},
                                "kernels": [_record("vec_triad", "default", 2500.0)]}))
    _, summary, _ = compare.compare(path, preset="h200", jobs=1)
    assert summary["orderings"] == len(ORDERINGS) and summary["orderings_measured"] == 0
    assert summary["heldout2_duration_mape_pct"] >= 0


# ---- the textbook orderings ----------------------------------------------------------------

def test_every_ordering_compares_two_different_measured_launches():
    bad = [o for o in ORDERINGS if o.slower not in MEASURED or o.faster not in MEASURED or o.slower == o.faster]
    assert not bad, bad
    assert len({(o.slower, o.faster) for o in ORDERINGS}) == len(ORDERINGS)


def test_check_orderings_holds_when_slower_takes_longer_and_not_otherwise():
    o = (Ordering("a/x", "b/x", "why"),)
    assert check_orderings({"a/x": 30.0, "b/x": 10.0}, o)[0] | {"why": None} == \
        {"slower": "a/x", "faster": "b/x", "why": None, "ratio": 3.0, "holds": True}
    assert check_orderings({"a/x": 10.0, "b/x": 10.0}, o)[0]["holds"] is False
    assert check_orderings({"a/x": 10.0}, o)[0]["holds"] is None


def test_orderings_summary_counts_gpu_holds_and_predictions_that_miss_them():
    o = (Ordering("a/x", "b/x", ""), Ordering("c/x", "d/x", ""), Ordering("e/x", "f/x", ""))
    measured = {"a/x": 2.0, "b/x": 1.0, "c/x": 2.0, "d/x": 1.0, "e/x": 1.0, "f/x": 2.0}
    predicted = {"a/x": 2.0, "b/x": 1.0, "c/x": 1.0, "d/x": 2.0, "e/x": 2.0, "f/x": 1.0}
    s = orderings.summary(measured, predicted, o)
    assert (s["orderings_measured"], s["orderings_hold_measured"], s["orderings_hold_predicted"]) == (3, 2, 1)
    assert s["orderings_not_on_gpu"] == ["e/x > f/x"] and s["orderings_wrong_predicted"] == ["c/x > d/x"]


def test_validate_orderings_reads_a_measurement_file(tmp_path, capsys):
    recs = []
    for o in ORDERINGS:                          # every expected ordering made true
        for name, ns in ((o.slower, 2000.0), (o.faster, 1000.0)):
            kernel, size = name.split("/")
            recs.append(_record(kernel, size, ns))
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"provenance": {}, "kernels": recs}))
    assert cli.main(["orderings", "--data", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["orderings_measured"] == len(ORDERINGS) > 0
    assert "orderings_hold_predicted" not in out


# ---- Numba's CUDA simulator ------------------------------------------------------------

CUDASIM = """
import sys, time, types
sys.path.insert(0, "tests/programs")
from _cudasim_check import install_warp_intrinsics     # shuffles for the simulator
install_warp_intrinsics()
import numpy as np
from validate.heldout2 import HELDOUT2
from validate._heldout2 import compute
# the simulator's libdevice functions are stubs returning None, and its cuda.fma is a * b + c
# rounded twice: give sfu_loop a Python rsqrtf, and let Mandelbrot differ on a few pixels
compute.libdevice = types.SimpleNamespace(rsqrtf=lambda x: np.float32(1 / np.sqrt(x)))
SMALL = {"nbody_shared": {"n": 200}, "flash_attn_fwd": {"heads": 1, "seq": 128, "causal": False},
         "sgemm_reg_8x8": {"m": 128, "n": 256, "k": 16}, "rank_sort_block": {"n": 1024},
         "sgemm_shared_tile": {"m": 64, "n": 32, "k": 64}, "scan_blelloch_block": {"n": 1500},
         "reduce_warp_atomic_f32": {"n": 700}, "reduce_unrolled_tree": {"n": 2500},
         "spmv_warp_row": {"rows": 60, "kind": "powerlaw"}, "layernorm_smem_row": {"rows": 3, "cols": 1000},
         "softmax_block_row": {"rows": 3, "cols": 300}}
for name in sys.argv[1:]:
    t = time.time()
    case = HELDOUT2[name].case(SMALL.get(name, "default"))
    case.kernel[case.grid, case.block, 0, case.shared_bytes](*case.args)
    if name == "mandelbrot_f32":
        assert np.mean(case.args[0] != case.expected[0]) < 0.01, name
    else:
        case.check()
    print(name, "ok", round(time.time() - t, 1), flush=True)
"""


@pytest.mark.slow
def test_every_kernel_runs_under_numbas_cuda_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", CUDASIM, *NAMES], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert out.stdout.count(" ok") == len(NAMES)


# ---- the committed measurements ------------------------------------------------------------

MEASURED_FILES = [p for p in DATA.values() if p.exists()]


@pytest.fixture(scope="module", params=MEASURED_FILES, ids=lambda p: p.name)
def measured(request):
    return json.loads(request.param.read_text())


@pytest.mark.skipif(not MEASURED_FILES, reason="the second held-out suite is not measured yet")
def test_the_measurement_says_how_it_was_made(measured):
    prov = measured["provenance"]
    assert prov["gpu_name"].startswith("NVIDIA H")
    assert prov["command"].startswith("python -m validate measure") and "--suite heldout2" in prov["command"]
    assert 500 < prov["sm_clock_mhz_observed"] < 2500


@pytest.mark.skipif(not MEASURED_FILES, reason="the second held-out suite is not measured yet")
def test_every_measured_size_was_measured_and_passed(measured):
    seen = {r["name"] for r in measured["kernels"] if r.get("check") == "passed" and r.get("check_ncu") == "passed"
            and r.get("metrics", {}).get("gpu__time_duration.sum", 0) > 0}
    assert not MEASURED - seen, f"not measured or not passing: {sorted(MEASURED - seen)}"


@pytest.mark.skipif(not MEASURED_FILES, reason="the second held-out suite is not measured yet")
def test_recorded_params_are_the_current_sizes(measured):
    """Changing a kernel's sizes makes the measurement stale: measure again."""
    stale = [r["name"] for r in measured["kernels"]
             if r["heldout2"] not in HELDOUT2 or HELDOUT2[r["heldout2"]].sizes.get(r["size"]) != r["params"]]
    assert not stale, stale


@pytest.mark.skipif(not MEASURED_FILES, reason="the second held-out suite is not measured yet")
def test_the_gpu_shows_every_expected_ordering(measured):
    """An ordering the GPU does not show was a wrong expectation: say so in ORDERINGS' list
    (remove it, with the measured ratio in the commit), never by changing a kernel or size."""
    s = orderings.summary(orderings.measured_durations(measured))
    assert s["orderings_measured"] == len(ORDERINGS)
    assert not s["orderings_not_on_gpu"], s["orderings_not_on_gpu"]
