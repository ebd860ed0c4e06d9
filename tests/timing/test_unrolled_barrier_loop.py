"""A loop whose body a barrier splits into several PTX blocks, which ptxas unrolls (here eight
rounds a pass of a runtime count), is walked pass by pass like a one-block loop
(gpusim/frontend/sass/mapping.py `_chain`): each round issues one round of its SASS. Before, the
eight-round body was issued once a PTX round: 132 SASS instructions a warp a round where the SASS
has about 19, and 7 times the barriers (validate/shared_mix_probe.py's `rt1`: 269 us predicted, 50
measured on an H100; docs/mechanisms_24.md section 31). A loop of several blocks that is not such a
chain (a branch inside) and that ptxas unrolled is still issued as if not unrolled, and warned of."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.timing import TimingOptions
from gpusim.timing.record import TraceWindow
from validate import shared_mix_probe as mix

DATA = Path(__file__).resolve().parents[2] / "data" / "measurements"

SOURCE = r"""
extern "C" __global__ void barrier_rounds(float *out, int rounds) {
    __shared__ float t[256];
    volatile float *v = t;
    float acc = 0.0f;
    for (int r = 0; r < rounds; r++) {
        v[threadIdx.x] = acc + r;
        __syncthreads();
        acc += v[threadIdx.x ^ 1];
        __syncthreads();
    }
    out[threadIdx.x] = acc;
}
extern "C" __global__ void plain_rounds(float *out, int rounds) {
    __shared__ float t[256];
    volatile float *v = t;
    v[threadIdx.x] = threadIdx.x;
    __syncthreads();
    float acc = 0.0f;
    for (int r = 0; r < rounds; r++) acc += v[threadIdx.x ^ (r & 31)];
    out[threadIdx.x] = acc;
}
"""


ROUNDS = 16
WARPS = 8


def _launch(name: str, record=None):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        r = gpusim.launch(gpusim.CudaSource(SOURCE, name), 1, 32 * WARPS, (np.zeros(256, np.float32), np.int32(ROUNDS)),
                          gpu="h100", timing=TimingOptions(mode="full", record=record), outputs=False)
    return r, [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]


def test_a_barrier_loop_ptxas_unrolled_counts_its_barriers_once_a_round():
    r, said = _launch("barrier_rounds")
    bars = [k for k, x in enumerate(r.sass.instructions) if x.opcode.startswith("BAR.SYNC")]
    assert sum(int(r.sass.inst[k]) for k in bars) == WARPS * 2 * ROUNDS
    assert not [m for m in said if "unrolled" in m]


def test_a_barrier_loop_ptxas_unrolled_is_timed_with_one_rounds_barriers_a_round():
    r, _ = _launch("barrier_rounds", TraceWindow(sms=0, end_cycle=100_000))
    rec = r.extra["recording"]
    warp0 = [b for b in rec.barriers if (b[1], b[2]) == (0, 0)]      # sub-partition 0, slot 0: warp 0
    assert len(warp0) == 2 * ROUNDS


def _warnings(name: str) -> list[str]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        gpusim.launch(gpusim.CudaSource(SOURCE, name), 1, 256, (np.zeros(256, np.float32), np.int32(16)),
                      gpu="h100", timing=TimingOptions(mode="full"), outputs=False)
    return [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]


def test_a_one_block_loop_that_ptxas_unrolled_is_walked_without_a_warning():
    assert not [m for m in _warnings("plain_rounds") if "unrolled" in m]


@pytest.mark.slow
def test_the_probes_barrier_rounds_take_about_the_h100s_time():
    # validate/shared_mix_probe.py's rt1 (128 rounds of 4 row stores, a barrier, 4 row loads, a barrier; 8 blocks
    # of 8 warps an SM): 50.4 us on an H100 (data/measurements/shared_mix_h100.json), 269 us before the walk
    measured = {r["case"]: r["us"] for r in json.loads((DATA / "shared_mix_h100.json").read_text())["rows"]}["rt1"]
    args = mix._args(np, "rt1", np.zeros(2 * mix.BLOCKS, np.uint64))
    r = gpusim.launch(gpusim.CudaSource(mix.SOURCE, "rt1"), (mix.BLOCKS,), (32, 8), args, gpu="h100",
                      timing=TimingOptions(mode="auto"), outputs=False)
    assert r.metrics["gpu__time_duration.sum"] / 1e3 == pytest.approx(measured, rel=0.2)


@pytest.mark.parametrize("rounds", [1, 2, 3, 5])
def test_a_round_ptxas_peeled_out_of_an_unrolled_barrier_loop_is_timed(rounds):
    # validate/block_turnover_probe.py's 32 x 4 round: ptxas unrolls the rounds four a pass, then two,
    # then peels the last one out of every loop; that block was homed after the loop, so one-round
    # blocks issued nothing of their round (the H200 163.7 us for 33,792 of them, gpusim 21.7)
    from validate import block_turnover_probe as turnover
    blocks = 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # no access left without a SASS instruction
        m = gpusim.launch(gpusim.CudaSource(turnover.SOURCE, "rt32_w4"), blocks, (32, 4),
                          turnover._args(np, blocks, rounds), gpu="h200", timing=True, outputs=False).metrics
    assert m["gpusim__sass_unplaced_accesses.sum"] == 0
    warps = blocks * 4
    assert m["sm__inst_executed_pipe_lsu.sum"] == warps * 16 * rounds + warps * 2     # 8 STS + 8 LDS a warp a round
    assert m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == blocks * 4 * 256 * rounds
