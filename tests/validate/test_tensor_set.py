"""The tensor validation set's harness (validate/tensor_set): its entries cover the issue's sizes,
entries whose programs are absent are left out with a note, a present program builds at an
entry's sizes, the measure command selects it, the dry run predicts it, and compare rebuilds its
records. The GPU side (CuPy, Triton on torch) runs on the GPU machine only."""
import json

import pytest

from validate import compare, figures, predict, suites
from validate.tensor_set import dryrun, launch, suite
from validate.datadir import DATA_DIR

DATA = DATA_DIR / "h100_tensor.json"
TEST_ENTRY = suite.Entry("test_cp_async_double", "tensor_set_program", {"stages": 2},
                         {"n64": {"m": 64, "n": 64, "k": 128}, "n128": {"m": 128, "n": 128, "k": 128}})
ABSENT = suite.Entry("absent", "programs.no_such_package.gemm", {}, suite.MATMUL_SIZES)


@pytest.fixture
def entries(monkeypatch):
    monkeypatch.setattr(suite, "ENTRIES", (TEST_ENTRY, ABSENT))
    monkeypatch.setattr(suite, "BY_NAME", {e.name: e for e in (TEST_ENTRY, ABSENT)})
    monkeypatch.setattr(dryrun, "ENTRIES", (TEST_ENTRY, ABSENT))


def test_the_set_covers_matmul_512_to_8192_and_attention_1k_to_16k():
    mm = {e.sizes[s]["m"] for e in suite.ENTRIES if e.family == "matmul" for s in e.sizes}
    att = {e.sizes[s]["n_ctx"] for e in suite.ENTRIES if e.family == "attention" for s in e.sizes}
    assert mm == {512, 1024, 2048, 4096, 8192} and att == {1024, 4096, 16384}


def test_an_entry_whose_program_is_absent_is_left_out_with_a_note(entries):
    ok, notes = suite.available()
    assert [e.name for e in ok] == ["test_cp_async_double"]
    assert "programs.no_such_package.gemm does not import" in notes["absent"]


def test_an_entry_s_size_is_its_variant_with_the_size_parameters(entries):
    c = suite.spec("test_cp_async_double").case("n128")
    assert c.params == {"m": 128, "n": 128, "k": 128, "stages": 2} and c.grid == (4, 4)
    assert launch.kernel_name(c.kernel) == "gemm_double" and launch.language(c.kernel) == "cuda"
    assert launch.launch_grid(c) == [4, 4, 1] and launch.launch_block(c) == [16, 16, 1]


def test_measure_selects_the_available_entries_sizes(entries):
    assert suites.selected(None, None, "tensor") == [("tensor", "test_cp_async_double", "n64"),
                                                      ("tensor", "test_cp_async_double", "n128")]
    assert suites.spec_of("tensor", "test_cp_async_double").sizes["n64"]["k"] == 128


def test_compare_rebuilds_a_tensor_record(entries):
    c = predict.build_case({"tensor": "test_cp_async_double", "size": "n64", "seed": 0})
    assert c.args[0].shape == (64, 128)


@pytest.mark.slow
def test_the_dry_run_builds_and_predicts_every_available_entry(entries):
    res = dryrun.dry_run(all_sizes=True, predict_all=True, time_limit_s=120)
    assert res["failed"] == [] and not res["entries"]["absent"]["available"]
    rows = {r["name"]: r for r in res["cases"]}
    assert set(rows) == {"test_cp_async_double/n64", "test_cp_async_double/n128", "test_cp_async_double/smoke"}
    # 16 and 4 blocks of the same per-block work (k = 128) both fit in one wave of 132 SMs:
    # the same time within a few percent, not 4x
    n64, n128 = rows["test_cp_async_double/n64"]["predicted_ns"], rows["test_cp_async_double/n128"]["predicted_ns"]
    assert n64 > 0 and abs(n128 / n64 - 1) < 0.05
    assert rows["test_cp_async_double/n64"]["launch_note"] == ""


COMPARED = DATA.parents[2] / "benchmarks" / "results" / "compare_h100_tensor.json"


def test_the_committed_tensor_compare_accounts_for_every_measured_kernel():
    """The whole set is compared offline (`python -m validate compare --data
    data/measurements/h100_tensor.json`, minutes a launch at 4096^3 and up): its committed result
    names every measured kernel, each with a prediction or the reason it has none."""
    measured = {k["name"] for k in json.loads(DATA.read_text())["kernels"]}
    rows = {k["name"]: k for k in json.loads(COMPARED.read_text())["kernels"]}
    assert set(rows) == measured
    assert all((r["predicted_ns"] is None) == bool(r["no_prediction"]) for r in rows.values())


@pytest.mark.slow
def test_a_measured_mma_sync_gemm_is_predicted_within_35_percent_of_the_h100():
    rows, summary, _ = compare.compare(DATA, only="^cuda_mma_double/n512$", jobs=1)
    assert summary["no_prediction"] == {} and len(rows) == 1
    assert abs(figures.rel_err(rows[0].predicted[predict.DURATION], rows[0].measured[predict.DURATION])) <= 0.35
