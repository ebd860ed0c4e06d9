"""The DRAM write probe's committed H200 measurements (validate/dram_write_probe.py;
data/measurements/dram_write_h200_run2.json, docs/mechanisms_24.md section 48): what scattered
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
