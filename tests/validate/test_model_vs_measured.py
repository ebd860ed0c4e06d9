"""Model vs measured regression tests: current predictions against the committed H200
measurements (data/measurements/h200.json), with a tolerance per metric. No GPU needed.

The kernels compared (`CI_SET`) are every program of programs/ at every measured size,
large ones included, and a cross-section of the microbenchmarks; the rest of the data
file (the full shared-memory stride sweep, the bandwidth and pointer-chase sweeps) is
compared offline by `python -m validate compare --data data/measurements/h200.json`, whose
figures the closing notes and DEVIATIONS.md quote. Tolerances hold the figures the model
reaches on this set with a little headroom; DEVIATIONS.md lists the gaps.
"""
import json

import pytest

import programs
from validate.compare import compare
from validate.figures import rel_err
from validate.predict import DURATION
from validate.datadir import DATA_DIR

DATA = DATA_DIR / "h200.json"
MICRO = ("pointer_chase/(default|fp_4KiB|fp_64KiB|fp_1MiB)$", "smem_stride/(default|ld_s1|ld_s4|ld_s32|st_s8)$",
         "issue_throughput/", "atomic_throughput/", "launch_overhead/", "block_dispatch/(default|b8448)$",
         "bandwidth/(default|read_l2|copy_l2)$")
CI_SET = "^(" + "|".join([f"{p}/" for p in programs.PROGRAMS] + list(MICRO)) + ")"
# the module's fixture simulates every program size (about 4 minutes on CI's 2 cores, more on a busy
# machine): more than pytest's default 600 s limit per test may be needed there
pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def comparison():
    rows, summary, preset = compare(DATA, only=CI_SET, jobs=2)
    return rows, summary, preset


def _predicted(rows, name):
    return next(r for r in rows if r.name == name).predicted[DURATION]


def test_predictions_use_the_calibrated_h200_preset(comparison):
    assert comparison[2] == "h200"


def test_every_program_size_is_compared(comparison):
    names = {r.name for r in comparison[0]}
    sizes = {f"{p}/{s}" for p, spec in programs.PROGRAMS.items() for s in spec.sizes}
    measured = {k["name"] for k in json.loads(DATA.read_text())["kernels"]}
    assert (sizes & measured) <= names


def test_duration_mape_is_at_most_12_percent(comparison):
    assert comparison[1]["duration_mape_pct"] <= 12.0


def test_duration_median_error_is_at_most_6_percent(comparison):
    assert comparison[1]["duration_median_ape_pct"] <= 6.0


def test_duration_rank_correlation_is_at_least_0_97(comparison):
    assert comparison[1]["spearman"] >= 0.97


def test_no_kernel_is_off_by_more_than_60_percent(comparison):
    rows = comparison[0]
    worst = max(rows, key=lambda r: abs(rel_err(r.predicted[DURATION], r.measured[DURATION])))
    assert abs(rel_err(worst.predicted[DURATION], worst.measured[DURATION])) <= 0.60, worst.name


def test_sass_instruction_counts_within_5_percent_on_at_least_90_percent(comparison):
    assert comparison[1]["inst_executed_within_5pct_share"] >= 90.0


def test_thread_per_instruction_ratio_within_2_percent_on_at_least_95_percent(comparison):
    assert comparison[1]["thread_inst_ratio_within_2pct_share"] >= 95.0


def test_real_bank_conflicts_within_5_percent_where_above_1000(comparison):
    s = comparison[1]
    assert s["bank_conflicts_cases"] >= 5
    # 3% is the target; the largest error, reduce_interleaved_strided/large (4.0%), includes the
    # Nsight noise its conflict-free accesses add (see DEVIATIONS.md)
    assert s["bank_conflicts_max_error_pct"] <= 5.0


def test_nsight_conflicts_on_conflict_free_accesses_stay_a_small_share(comparison):
    # the addresses prove these accesses conflict-free; Nsight still counts a few percent
    assert comparison[1]["bank_conflict_noise_max_share_pct"] <= 10.0


def test_global_sectors_per_request_exact(comparison):
    assert comparison[1]["sectors_per_request_exact_pct"] == 100.0


def test_l2_sector_counts_within_15_percent_on_average(comparison):
    assert comparison[1]["l2_sectors_mape_pct"] <= 15.0


def test_dram_read_bytes_within_5_percent_on_average(comparison):
    assert comparison[1]["dram_read_bytes_mape_pct"] <= 5.0


def test_sampling_error_estimates_stay_below_15_percent(comparison):
    # where the sample sees every reuse distance. Since the estimates became honest (issue 24.4:
    # they add the measured floor of the scaled memory system and the L2 re-reads a sample cannot
    # tell) the widest is a compute-bound issue-throughput microbenchmark at 14.3% (it was under
    # 10% before); the two 67 MB B strips of the large matmuls sit at the H200 L2's capacity knee
    # and the block-dispatch microbenchmarks' tiny blocks leave reuse undecided, so their notes
    # say why their estimates are wider. Since the issue loop honours ptxas stall counts (issue 29)
    # the widest is issue_throughput/fp32_fma at 15.1% (its actual error -4.2%): its 8 blocks an SM
    # are all resident at once and the schedulers' order spreads their durations, which the
    # estimate reads as work varying between blocks (DEVIATIONS.md). Since a read miss waits behind the lines
    # stores allocated lately (issue 24, docs/mechanisms_24.md section 45) the widest is const_lookup/large at
    # 18.4% (5.9% before; its actual error -7.2 -> +0.4%): its first blocks run before any store has allocated a
    # line and wait for none, the later ones do, and the estimate reads that start as blocks that vary. Since
    # 'auto' times a sample whose rate had not settled again with four times its waves (section 46),
    # const_lookup/large is settled (5.1%) and the widest is issue_throughput/fp32_fma's 15.1% again
    assert comparison[1]["sampling_error_max_pct"] <= 16.0
    noted = set(comparison[1]["sampling_noted"])
    assert noted - {"matmul_naive/large", "matmul_tiled/large"} <= {"block_dispatch/b8448", "block_dispatch/b67584",
                                                                     "block_dispatch/b540672"}


@pytest.mark.parametrize("family", [
    ("reduce_interleaved_divergent", "reduce_interleaved_strided", "reduce_sequential", "reduce_first_add",
     "reduce_warp_shuffle"),
    ("transpose_naive", "transpose_shared", "transpose_padded"),
    ("histogram_global", "histogram_shared"),
    ("matmul_naive", "matmul_tiled"),
], ids=["reduction", "transpose", "histogram", "matmul"])
def test_textbook_ordering_at_large_size(comparison, family):
    t = [_predicted(comparison[0], f"{name}/large") for name in family]
    assert t == sorted(t, reverse=True), dict(zip(family, t))
