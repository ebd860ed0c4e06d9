"""validate/copy_latency_probe.py: its chains, its kernels in gpusim, and what the H200 and H100 it ran on say
(data/measurements/copy_latency_h200.json and _h100.json; docs/mechanisms_24.md section 44): a load waits longer
the more write-backs go to the DRAM, long before reading alone makes it wait, and for random and in-order lines
alike. One measured property per test."""
import json

import numpy as np
import pytest

import gpusim
from validate import copy_latency_probe as probe
from validate.datadir import DATA_DIR

GPUS = ("h200", "h100")


def _rows(name: str) -> list[dict]:
    return json.loads((DATA_DIR / f"copy_latency_{name}.json").read_text())["rows"]


def _steps(gpu: str, kernel="chase", order="random", write=0) -> dict:
    return {r["warps_per_sm"]: r["step_cycles"] for r in _rows(gpu)
            if r["kernel"] == kernel and r["order"] == order and r["write"] == write and r["blocks"] > 16
            and "prefill" not in r}


def test_the_random_chain_is_one_cycle_through_every_line_with_the_warps_spread_over_it():
    nxt, start = probe.tables(np, "random", 8)
    seen, line = set(), int(start[0])
    for _ in range(probe.LINES):
        seen.add(line)
        line = int(nxt[line])
    assert len(seen) == probe.LINES and line == start[0]
    assert len(set(start.tolist())) == 8


def test_the_stream_chain_gives_each_warp_its_own_run_of_lines():
    nxt, start = probe.tables(np, "stream", 4)
    assert (nxt[:5] == [1, 2, 3, 4, 5]).all() and start.tolist() == [0, probe.LINES // 4, probe.LINES // 2,
                                                                      3 * probe.LINES // 4]


def test_64_warps_a_sm_run_as_two_blocks_of_32():
    assert probe.launch_shape({"warps_per_sm": 64, "blocks": 132}) == ((264,), (1024,))
    assert probe.launch_shape({"warps_per_sm": 8, "blocks": 132}) == ((132,), (256,))


@pytest.mark.parametrize("write", [0, 1, 2])
def test_the_chase_follows_its_chain_and_copies_what_it_read_in_gpusim(write):
    lines = 64
    nxt = ((np.arange(lines) * 5 + 3) % lines).astype(np.uint32)        # x -> 5x + 3: one cycle mod 64
    start = np.array([0, 32], np.uint32)
    copy = np.zeros(lines * 32, np.uint32)
    steps = 6
    gpusim.launch(gpusim.CudaSource(probe.SOURCE, "chase"), (1,), (64,),
                  (np.repeat(nxt, 32), copy, start, np.int32(steps), np.int32(write)), gpu="h200")
    for w, s in enumerate(start):
        line = int(s)
        for k in range(steps):
            if write == 1:
                assert (copy[line * 32:(line + 1) * 32] == nxt[line]).all()
            elif write == 2:
                assert (copy[(w * 8 + k) * 32:(w * 8 + k + 1) * 32] == nxt[line]).all()
            line = int(nxt[line])
    if write == 0:
        assert not copy.any()


@pytest.mark.parametrize("gpu", GPUS)
def test_write_backs_lengthen_a_load_by_200_cycles_at_32_warps_a_sm(gpu):
    copy = _steps(gpu, write=1)
    assert copy[32] - copy[1] > 200


@pytest.mark.parametrize("gpu", GPUS)
def test_reading_alone_at_32_warps_a_sm_lengthens_a_load_by_little(gpu):
    read = _steps(gpu, write=0)
    assert read[32] - read[1] < 120


@pytest.mark.parametrize("gpu", GPUS)
def test_random_and_in_order_lines_wait_alike_under_a_copy(gpu):
    rnd, seq = _steps(gpu, write=1), _steps(gpu, order="stream", write=1)
    for w in (16, 32, 64):
        assert abs(seq[w] / rnd[w] - 1) < 0.1


@pytest.mark.parametrize("gpu", GPUS)
def test_a_lone_chase_takes_as_long_on_one_sm_as_on_sixteen(gpu):
    rows = json.loads((DATA_DIR / f"copy_latency_{gpu}.json").read_text())["rows"]
    one = [r["step_cycles"] for r in rows if r["kernel"] == "chase_one_cg" and r["order"] == "random"
           and r["blocks"] <= 16]
    assert len(one) == 3 and max(one) / min(one) < 1.05


@pytest.mark.parametrize("run", ["h200_run3", "h100_run2"])
def test_reading_warps_wait_as_long_as_copying_warps_beside_them(run):
    split = {r["warps_per_sm"]: r for r in _rows(run) if r["kernel"] == "chase_split" and r["write"] == 1}
    for r in split.values():
        assert abs(r["even_step_cycles"] / r["odd_step_cycles"] - 1) < 0.01


@pytest.mark.parametrize("run", ["h200_run3", "h100_run2"])
def test_copying_warps_make_the_reading_ones_beside_them_wait(run):
    rows = [r for r in _rows(run) if r["kernel"] == "chase_split" and r["warps_per_sm"] == 32]
    reading_only = next(r for r in rows if r["write"] == 0)["even_step_cycles"]
    beside_copies = next(r for r in rows if r["write"] == 1)["even_step_cycles"]
    assert beside_copies - reading_only > 100


def test_reading_sms_wait_as_long_as_the_copying_sms_beside_them():
    split = {r["warps_per_sm"]: r for r in _rows("h200_run4") if r["kernel"] == "chase_split" and r["write"] == 2}
    reading_only = {r["warps_per_sm"]: r for r in _rows("h200_run4") if r["kernel"] == "chase_split" and r["write"] == 0}
    for w in (16, 32):
        assert abs(split[w]["even_step_cycles"] / split[w]["odd_step_cycles"] - 1) < 0.02
        assert split[w]["even_step_cycles"] - reading_only[w]["even_step_cycles"] > 50


def _beside(run: str, hit: int) -> list[tuple[float, float]]:
    rows = [r for r in _rows(run) if r["kernel"] == "store_beside" and r["hit"] == hit]
    return sorted((r["store_TBps"], r["even_step_cycles"]) for r in rows)


@pytest.mark.parametrize("run", ["h200_run5", "h100_run3"])
def test_loads_wait_longer_the_more_stores_miss_the_l2(run):
    beside = _beside(run, 0)
    waits = [c for _, c in beside]
    assert waits == sorted(waits) and 150 < (waits[-1] - waits[0]) / beside[-1][0] < 320   # cycles per TB/s


@pytest.mark.parametrize("run", ["h200_run5", "h100_run3"])
def test_stores_that_hit_the_l2_make_no_load_wait(run):
    waits = [c for _, c in _beside(run, 1)]
    assert _beside(run, 1)[-1][0] > 1.5 and max(waits) / min(waits) < 1.03


@pytest.mark.parametrize("run", ["h200_run3", "h100_run2"])
def test_reads_whose_victims_are_dirty_wait_little(run):
    prefill = {(r["prefill"], r["warps_per_sm"]): r["step_cycles"] for r in _rows(run) if "prefill" in r}
    for w in (16, 32):
        assert 0 <= prefill["dirty", w] - prefill["clean", w] < 40


def test_gpusim_waits_most_of_the_h200s_extra_under_a_copy():
    # the write-allocation wait (l2_write_wait.py): 232 extra cycles a step at 32 copying warps a SM against the
    # GPU's 266 (59 before it)
    pred = json.loads((DATA_DIR.parent.parent / "benchmarks/results/copy_latency_check_h200.json").read_text())["rows"]
    model = {r["warps_per_sm"]: r["step_cycles"] for r in pred
             if r["kernel"] == "chase" and r["order"] == "random" and r["write"] == 1}
    gpu = _steps("h200", write=1)
    assert 0.75 * (gpu[32] - gpu[1]) < model[32] - model[1] < 1.1 * (gpu[32] - gpu[1])
