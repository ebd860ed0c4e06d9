"""validate/l2_share_probe.py: its kernels copy what it says in gpusim, and what the H100 it ran on
counted for them (data/measurements/l2_share_h100.json): the L1 asked the L2 for every sector the
threads copied, and the L2 saw only part of them."""
import json

import numpy as np
import pytest

import gpusim
from validate import l2_share_probe as probe
from validate.datadir import DATA_DIR


def _doc():
    return json.loads((DATA_DIR / "l2_share_h100.json").read_text())


@pytest.mark.parametrize("case", [(8, 0, False), (2, 1, False), (2, 1, True)])
def test_each_round_copies_its_resident_and_streamed_lines(case):
    res, streamed, store = case
    iters = 2
    m = gpusim.launch(gpusim.CudaSource(probe.source(), probe.kernel_name(*case)), 1, 32 * probe.WARPS,
                      (np.ones(probe.REGION_INT4 * 4, np.int32), np.zeros(iters * 32 * probe.WARPS * 4, np.int32),
                       np.int32(iters), np.zeros(17, np.uint64)), gpu="h100", shared_bytes=probe.SHARED_BYTES).metrics
    threads = 32 * probe.WARPS
    copies = iters * threads * (res + (0 if store else streamed))
    assert m["smsp__inst_executed_op_ldgsts.sum"] == copies // 32
    record = probe.WARPS + 1                                   # each warp's cycles and %smid: a sector each
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == (iters * threads * streamed // 2 if store else 0) + record


def test_the_h100_file_has_every_case_with_its_counters_and_provenance():
    doc = _doc()
    assert "H100" in doc["provenance"]["gpu"] and doc["provenance"]["command"] and doc["provenance"]["ncu"]["rc"] == 0
    assert [r["case"] for r in doc["rows"]] == [probe.kernel_name(*c) for c in probe.CASES]
    assert all("read_sectors_per_slice_cycle" in r for r in doc["rows"])


def test_on_the_h100_the_l2_saw_part_of_the_sectors_its_l1_copied_for_the_threads():
    for r in _doc()["rows"]:
        m = r["metrics"]
        copied = m["sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"]
        want = 132 * probe.ITERS * 32 * probe.WARPS * (r["resident"] + (0 if r["store"] else r["streamed"])) // 2
        assert copied == want                                      # 16 B a thread a copy: half a sector
        assert m["lts__t_sectors_srcunit_tex_op_read.sum"] < 0.8 * copied


def test_with_one_round_in_flight_the_sparser_rounds_copies_all_reach_the_l2():
    """data/measurements/l2_share_h100_stages1.json: with one round in flight (wait_group 0), the rounds that
    come back to a sector 6 and 12 rounds later (4:1, 2:1) have every copied sector looked up at the L2; the
    8:0 rounds, back every 3 rounds, have 59%."""
    doc = json.loads((DATA_DIR / "l2_share_h100_stages1.json").read_text())
    assert doc["stages"] == 1
    share = {r["case"]: r["metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"]
             / r["metrics"]["sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"] for r in doc["rows"]}
    for case in ("mix_4_1_f", "mix_2_1_f", "mix_4_1_s", "mix_2_1_s"):
        assert share[case] == pytest.approx(1.0, abs=0.01)
    assert share["mix_8_0_f"] < 0.65
