"""Interconnect model vs measured: current predictions against the committed 2 and 4 x H200
measurements (data/measurements/h200x4_multi.json: NCCL collectives, peer copies, peer-memory
kernels). No GPU needed. Tolerances hold what the model reaches with a little headroom;
DEVIATIONS.md ("Interconnect and collectives") names the gaps, and
`python -m validate compare-multi --table` shows every record.
"""

import pytest

from validate.compare_multi import compare
from validate.datadir import DATA_DIR

DATA = DATA_DIR / "h200x4_multi.json"
# what the calibrated h200 reaches (python -m validate compare-multi), with a little headroom
BUSBW_MAPE = 5.0          # percent, collectives >= 1 MiB with NCCL's own choice (reached: 4.31)
BUSBW_WITHIN_10 = 90.0    # percent of those within 10% (reached: 93.5, 144 of 154; issue target: all)
BUSBW_MAX = 23.0          # worst (reached: 19.7, send_recv on 4 GPUs at 4 MiB)
SMALL_WITHIN_25 = 98.0    # percent of the calls < 1 MiB within 25% in time (reached: 100)
SMALL_MAX = 23.0          # worst (reached: 19.3, all_gather on 2 GPUs at 128 KiB; MAPE 5.38)
FORCED_MAPE = 11.5        # all_reduce with the algorithm and protocol forced, every size (reached: 10.5)


@pytest.fixture(scope="module")
def comparison():
    return compare(DATA, "h200", kernels=False)


def test_every_measured_collective_and_copy_is_compared(comparison):
    summary, rows = comparison
    assert summary["collective_records"] == 210 and summary["forced_records"] == 180
    assert sum(r["part"] == "copy" for r in rows) == 32


def test_collective_busbw_mape_at_1_mib_and_above(comparison):
    assert comparison[0]["busbw_mape_pct_ge_1MiB"] <= BUSBW_MAPE


def test_collective_busbw_within_10_percent_share(comparison):
    assert comparison[0]["busbw_within_10pct_share_ge_1MiB"] >= BUSBW_WITHIN_10


def test_collective_busbw_worst_case(comparison):
    assert comparison[0]["busbw_max_err_pct_ge_1MiB"] <= BUSBW_MAX


def test_small_collective_time_within_25_percent_share(comparison):
    assert comparison[0]["time_within_25pct_share_lt_1MiB"] >= SMALL_WITHIN_25


def test_small_collective_time_worst_case(comparison):
    assert comparison[0]["time_max_err_pct_lt_1MiB"] <= SMALL_MAX


def test_forced_protocols_time_mape(comparison):
    assert comparison[0]["forced_time_mape_pct"] <= FORCED_MAPE


def test_protocol_choice_agrees_with_nccl(comparison):
    assert comparison[0]["choice_agreement_pct"] >= 97.0           # reached: 148 of 150


def test_large_peer_copy_bandwidth_within_5_percent(comparison):
    big = [r for r in comparison[1] if r["part"] == "copy" and r["bytes"] >= 16 << 20]
    assert len(big) == 16 and max(abs(r["bw_err_pct"]) for r in big) <= 5.0


def test_ring_all_reduce_on_4_gpus_at_1_gib(comparison):
    r = next(r for r in comparison[1] if r["part"] == "collective" and r["op"] == "all_reduce"
             and r["gpus"] == 4 and r["bytes"] == 1 << 30)
    assert abs(r["busbw_err_pct"]) <= 5.0                          # reached: -3.3


def test_peer_read_kernel_is_bound_by_the_measured_nvlink_rate():
    import json

    from validate.peer_kernels import predict
    data = json.loads(DATA.read_text())
    rec = next(k for k in data["kernels"] if k["case"] == "read" and k["buffer_gpu"] != k["launch_gpu"])
    p = predict(rec, "h200")
    assert abs(p["time_us"] / rec["time_us"] - 1) <= 0.10


def test_a_two_gpu_machine_never_fitted_on_meets_the_same_figures():
    # data/measurements/h200x2_multi.json: the same measurement on a 2 x H200 machine (nvidia-h200-x2);
    # calibrate-multi fitted on the 4-GPU file only
    summary, _ = compare(DATA.with_name("h200x2_multi.json"), "h200", kernels=False)
    assert summary["busbw_mape_pct_ge_1MiB"] <= BUSBW_MAPE
    assert summary["time_within_25pct_share_lt_1MiB"] >= SMALL_WITHIN_25
    assert summary["choice_agreement_pct"] >= 97.0
    assert summary["copy_bw_max_err_pct_ge_16MiB"] <= 5.0


def test_calibrate_multi_fits_the_records_of_several_files_together():
    # calibrate-multi --data A --data B: each file's collectives and forced rings, one after the other
    import json

    from validate.calibrate_multi import pooled, records
    four, two = (json.loads(p.read_text()) for p in (DATA, DATA.with_name("h200x2_multi.json")))
    assert len(records(four, forced={"ring"})) == 300 and len(records(two, forced={"ring"})) == 150
    assert len(pooled([four, two], forced={"ring"})) == 450


def test_measure_side_busbw_factors_are_the_models():
    # validate.measure_nccl repeats nccl-tests' factors so that it runs without gpusim on the GPU machine
    from gpusim.collectives.conventions import OPS, busbw_factor
    from validate.measure_nccl import BUSBW_FACTOR, OPS as MEASURED_OPS
    assert MEASURED_OPS == OPS
    assert all(BUSBW_FACTOR[op](n) == busbw_factor(op, n) for op in OPS for n in range(2, 9))
