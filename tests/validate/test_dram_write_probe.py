"""The DRAM write probe's committed H200 measurements (validate/dram_write_probe.py;
data/measurements/dram_write_h200_run2.json to _run4.json, docs/mechanisms_24.md sections 48-49): what scattered
writes cost the GPU against scattered reads of the same bursts, and the probe's kernels running in
gpusim with the results a GPU gives. One property per test."""
import json

import numpy as np
import pytest

import gpusim
from validate import dram_write_probe as probe
from validate.datadir import DATA_DIR

RUN = {r["case"]: r for r in json.loads((DATA_DIR / "dram_write_h200_run2.json").read_text())["kernels"]}


def _ns(case):
    return RUN[case]["duration_ns_median"]


def _dram(case, what):
    return RUN[case]["metrics"][f"dram__bytes_{what}.sum"]


def test_a_random_whole_sector_write_costs_more_than_a_random_read_of_its_burst():
    # 2^23 random bursts each: written as whole 32-B sectors (no fill) 278.9 us, read 217.3 us
    assert _dram("grp_store32", "read") < 0.01 * _dram("grp_store32", "write")
    assert 1.2 < _ns("grp_store32") / _ns("grp_load32") < 1.4


def test_a_partial_sector_write_is_slow_whether_or_not_its_sector_is_filled():
    # two 16-B stores into one absent sector (the second completes it: 7% of the sectors filled) take
    # within 10% of one 4-B store a sector (every sector filled from DRAM)
    assert _dram("rand_store32", "read") < 0.1 * _dram("rand_store4", "read")
    assert abs(_ns("rand_store32") / _ns("rand_store4") - 1) < 0.1
    assert _ns("rand_store32") > 1.5 * _ns("grp_store32")


@pytest.mark.slow                                      # a 1 GiB array
def test_the_probe_s_kernels_store_what_they_say_in_gpusim():
    a = np.zeros(probe.WORDS, np.uint32)
    f = np.zeros(1, np.uint32)
    gpusim.launch(gpusim.CudaSource(probe.SOURCE, "grp_store32"), 1, 64, (a, f), gpu="h200")
    bursts = [(g * 0x9E3779B1) & ((1 << 24) - 1) for g in range(32)]
    assert all((a[16 * b:16 * b + 8] == 2 * g + np.repeat([0, 1], 4)).all() for g, b in enumerate(bursts))
    assert int((a != 0).sum()) == 32 * 8 - 4           # thread 0 stores four zeros


RUN3 = {r["case"]: r for r in json.loads((DATA_DIR / "dram_write_h200_run3.json").read_text())["kernels"]}
RUN4 = {r["case"]: r for r in json.loads((DATA_DIR / "dram_write_h200_run4.json").read_text())["kernels"]}


def _m(run, case, metric):
    return run[case]["metrics"][metric]


def test_one_thread_s_stores_into_one_sector_from_two_instructions_reach_the_l2_apart():
    # 16-B pairs with lanes 128 B apart (32 lines an instruction): L2 write sectors 1.5x the L1's (the far
    # partition's copy), nothing combined
    ratio = _m(RUN3, "comb16_s128", "lts__t_sectors_op_write.sum") / _m(RUN3, "comb16_s128", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
    assert 1.4 < ratio < 1.6


def test_a_warp_s_stores_into_two_lines_are_combined():
    # 4-B pairs with lanes 8 B apart (2 lines an instruction): one L2 write request a line, 0.75x the L1's sectors
    assert abs(_m(RUN3, "comb4_s8", "lts__t_requests_srcunit_tex_op_write.sum") / (1 << 14) - 1) < 0.05
    ratio = _m(RUN3, "comb4_s8", "lts__t_sectors_op_write.sum") / _m(RUN3, "comb4_s8", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
    assert 0.7 < ratio < 0.8


def test_the_l2_keeps_tens_of_thousands_of_partly_written_lines_and_completes_the_rest():
    # 2^K lines, one 4-B store each, in a region the L2 holds: no DRAM reads up to 2^15 lines; beyond
    # about 50-75 K lines every further line is read (and written) once
    assert _m(RUN4, "pr_k15", "dram__bytes_read.sum") < 0.01 * 32 * (1 << 15)
    for k in (18, 19):
        filled = _m(RUN4, f"pr_k{k}", "dram__bytes_read.sum") / 32
        assert 40_000 < (1 << k) - filled < 80_000


def test_the_limit_counts_lines_not_sectors():
    # four partial sectors a line keep about as many lines as one (43-56 K), a quarter as many sectors' worth
    kept_one = (1 << 18) - _m(RUN4, "pr_k18", "dram__bytes_read.sum") / 32
    kept_four = (1 << 17) - _m(RUN4, "pr4_k17", "dram__bytes_read.sum") / 32 / 4
    assert 0.7 < kept_four / kept_one < 1.3


@pytest.mark.slow                                      # 2^18 threads
def test_gpusim_completes_what_the_h200_completes():
    a = np.zeros(probe.WORDS, np.uint32)
    f = np.zeros(1, np.uint32)
    m = gpusim.launch(gpusim.CudaSource(probe.SOURCE, "pr_k18"), (1 << 18) // probe.THREADS, probe.THREADS, (a, f),
                      gpu="h200", timing=True, outputs=False).metrics
    assert abs(m["dram__bytes_read.sum"] / _m(RUN4, "pr_k18", "dram__bytes_read.sum") - 1) < 0.1
