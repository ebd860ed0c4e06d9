"""validate/tensor_timing/block_drift.py: `drift_summary` reads waves and B's sharers from stamps as they
are laid out, and the committed H100 run shows how close in time a GEMM's B sharers run
(docs/mechanisms_24.md section 43): the wmma GEMM's waves stay in lockstep, the tiled f32 GEMM's sharers
settle at the dispatch spacing of one block row within two waves, and the double-buffered mma.sync GEMM's
blocks run at two speeds by SM; and validate/tensor_timing/sm_paths.py's runs, which find those SMs fast only
beside the others."""
import heapq
import json
from pathlib import Path

import numpy as np
import pytest

from validate.tensor_timing import block_drift as D

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "measurements" / "block_drift_h100.json"


def _schedule(durations, slots: int) -> np.ndarray:
    """Stamps [start, middle, end, slot] of blocks dealt out in order to the first free of `slots`."""
    free = [(0.0, i) for i in range(slots)]
    out = np.zeros((len(durations), 4))
    for b, d in enumerate(durations):
        t, i = heapq.heappop(free)
        out[b] = (t, t + d / 2, t + d, i)
        heapq.heappush(free, (t + d, i))
    return out.astype(np.int64)


def test_equal_blocks_make_waves_that_start_together_and_sharers_that_touch_at_once():
    s = D.drift_summary(_schedule([1000] * 40, 10), grid_x=4, wave_blocks=10)
    assert [w["blocks"] for w in s["waves"]] == [10, 10, 10, 10]
    assert all(w["start_spread_std"] == 0 and w["sharer_gap_median"] == 0 for w in s["waves"])
    assert [w["sharer_pairs"] for w in s["waves"]] == [6, 6, 6, 6]      # pairs 4 apart within one wave of 10


def test_a_slow_block_delays_its_slots_next_block_into_the_gap_it_measures():
    d = [1000] * 20
    d[0] = 1500                                           # block 0's slot frees 500 late: block 10 starts there
    s = D.drift_summary(_schedule(d, 10), grid_x=10, wave_blocks=10)
    assert s["waves"][1]["start_range"] == pytest.approx(0.5)
    assert s["waves"][0]["sharer_pairs"] == 0             # blocks 10 apart never share a wave of 10


def _rows() -> dict:
    doc = json.loads(DATA.read_text())
    assert doc["provenance"]["gpu"].startswith("NVIDIA H100")
    return {r["launch"]: r for r in doc["rows"] if r["repeat"] == 0}


def test_the_tiled_gemms_b_sharers_settle_at_one_block_row_of_dispatch():
    r = _rows()["matmul_tiled/large"]
    spacing = r["grid_x"] / r["wave_blocks"]              # 256 / 1056 of a block's time
    assert r["waves"][0]["start_range"] < 0.01            # the first wave starts together
    for w in r["waves"][3:10]:                            # then its sharers come one block row of dispatch apart
        assert w["sharer_gap_median"] == pytest.approx(spacing, rel=0.05)
        assert w["sharer_gap_under_5pct"] < 0.05


def test_the_mma_gemms_b_sharers_stay_closer_than_their_dispatch_spacing():
    r = _rows()["cuda_mma_double/n4096"]
    spacing = r["grid_x"] / r["wave_blocks"]              # 64 / 924
    assert r["waves"][3]["start_spread_std"] > 0.25       # by the fourth wave the starts are spread over a block's time
    for w in r["waves"][:4]:                              # yet half the sharers touch within 5% of a block's time
        assert w["sharer_gap_median"] < spacing
        assert w["sharer_gap_under_5pct"] > 0.4


def test_the_raw_stamps_are_the_first_launch_of_each():
    raw = np.load(DATA.with_suffix(".npz"))
    rows = _rows()
    for name in rows:
        stamps = raw[name.replace("/", "__")]
        assert stamps.shape == (rows[name]["blocks"], 4)
        summary = D.drift_summary(stamps.astype(np.int64), rows[name]["grid_x"], rows[name]["wave_blocks"])
        assert summary["waves"] == rows[name]["waves"]


def test_the_wmma_gemms_waves_stay_in_lockstep():
    for size in ("n4096", "n8192"):
        r = _rows()[f"cuda_wmma_f16/{size}"]
        assert all(w["start_spread_std"] < 0.01 for w in r["waves"])
        assert all(w["sharer_gap_p90"] < 0.01 for w in r["waves"] if w["sharer_pairs"])


@pytest.mark.parametrize("size", ["n4096", "n8192"])
def test_the_double_buffered_gemm_runs_a_quarter_of_its_sms_faster(size):
    speed = np.array(list(D.sm_speeds(np.load(DATA.with_suffix(".npz"))[f"cuda_mma_double__{size}"]
                                      .astype(np.int64)).values()))
    fast = speed < 0.85
    assert 0.15 < fast.mean() < 0.25                    # 24 of 132 SMs on the measured H100
    assert speed[fast].max() < 0.8 and speed[~fast].min() > 0.95


def test_the_single_buffered_gemm_runs_its_sms_alike():
    speed = np.array(list(D.sm_speeds(np.load(DATA.with_suffix(".npz"))["cuda_mma_single__n4096"]
                                      .astype(np.int64)).values()))
    assert speed.min() > 0.9 and speed.max() < 1.1


def _gpu_b_reads(name: str) -> float:
    """B's reads from DRAM the GPU's Nsight run implies: DRAM bytes read less A's once, over B's size."""
    for setname in ("h100_tensor", "h100"):
        for k in json.loads((ROOT / "data" / "measurements" / f"{setname}.json").read_text())["kernels"]:
            if k["name"] == name:
                n = 4096 if name.endswith(("n4096", "large")) else 8192
                size = n * n * (4 if name.startswith("matmul") else 2)
                return (k["metrics"]["dram__bytes_read.sum"] - size) / size
    raise KeyError(name)


@pytest.mark.parametrize("name, low, high", [("cuda_wmma_f16/n4096", 4.5, 5.5), ("cuda_wmma_f16/n8192", 17, 19),
                                             ("matmul_tiled/large", 245, 256)])
def test_lockstep_and_spread_out_blocks_fetch_b_as_the_gpu_did_whatever_the_residency(name, low, high):
    stamps = np.load(DATA.with_suffix(".npz"))[name.replace("/", "__")].astype(np.int64)
    gx = _rows()[name]["grid_x"]
    for residency_us in (10, 20, 40):
        assert low < D.sharer_fetches(stamps, gx, residency_us * 1e3) < high
    assert low < _gpu_b_reads(name) < high


def _rates(name: str) -> tuple[float, float]:
    raw = np.load(DATA.with_suffix(".npz"))
    fast = [k for k, v in D.sm_speeds(raw["cuda_mma_double__n4096"].astype(np.int64)).items() if v < 0.85]
    return D.sm_rates(raw[name.replace("/", "__")].astype(np.int64), _rows()[name]["blocks_per_sm"], fast)


def test_at_seven_blocks_an_sm_most_sms_run_single_and_double_buffered_alike():
    single, double = _rates("cuda_mma_single_r72/n4096"), _rates("cuda_mma_double/n4096")
    assert double[1] == pytest.approx(single[1], rel=0.03)        # the 108: the L2's share of each
    assert double[0] > 1.3 * double[1] and single[0] < 1.15 * single[1]


def test_with_fewer_blocks_an_sm_double_buffering_gains_on_every_sm():
    single, double = _rates("cuda_mma_single_r72_b2/n4096"), _rates("cuda_mma_double_b2/n4096")
    assert double[1] > 1.5 * single[1] and double[0] > 1.5 * single[0]


def _paths(gpu: str) -> dict:
    doc = json.loads((ROOT / "data" / "measurements" / f"sm_paths_{gpu}.json").read_text())
    assert doc["provenance"]["gpu"].startswith(f"NVIDIA {gpu.upper()}")
    return {r["run"]: r for r in doc["rows"]}


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_fast_sms_pull_as_fast_as_the_others_alone(gpu):
    runs = _paths(gpu)
    assert runs["pitch80/w32/fast"]["fast_cycles"] == pytest.approx(runs["pitch80/w32/slow_as_many"]["other_cycles"],
                                                                   rel=0.01)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_fast_sms_get_a_larger_share_only_when_every_sm_pulls_deep(gpu):
    runs = _paths(gpu)
    every = runs["pitch80/w32/all"]
    assert every["fast_cycles"] < 0.85 * every["other_cycles"]
    for shallow in ("pitch80/w32/even", "pitch80/w8/all"):
        assert runs[shallow]["fast_cycles"] == pytest.approx(runs[shallow]["other_cycles"], rel=0.03)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_every_gpc_of_16_sms_holds_four_fast_sms_and_the_full_gpcs_none(gpu):
    prov = json.loads((ROOT / "data" / "measurements" / f"sm_paths_{gpu}.json").read_text())["provenance"]
    fast = set(prov["fast_sms"])
    by_size = {}
    for g in prov["gpcs"]:
        by_size.setdefault(len(g), []).append(sum(k in fast for k in g))
    assert by_size[16] == [4] * len(by_size[16]) and len(by_size[16]) == 5
    assert by_size[18] == [0, 0]
