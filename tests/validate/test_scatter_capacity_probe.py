"""validate/scatter_capacity_probe.py: its kernels store every word once in gpusim, and what the H200 it
ran on wrote back to DRAM (data/measurements/scatter_capacity_h200.json with Nsight's CSV beside it):
lines written from many SMs are written back many times at sizes where lines each written by one SM
are not. One measured property per test."""
import numpy as np
import pytest

import gpusim
from validate import scatter_capacity_probe as probe
from validate.datadir import DATA_DIR


def _measured():
    rows = probe.measured(DATA_DIR / "scatter_capacity_h200.json", DATA_DIR / "scatter_capacity_h200_ncu.csv")
    return {(r["mode"], r["mib"]): r for r in rows}


@pytest.mark.parametrize("mode", probe.MODES)
def test_each_mode_stores_every_word_of_its_array_once(mode):
    words = probe.BLOCKS * 32 * 4                        # four lines a block
    span = words if mode == "shared" else words // probe.BLOCKS
    bits = (span - 1).bit_length()
    per_it = probe.BLOCKS * probe.BLOCK if mode == "shared" else probe.BLOCK
    out = np.zeros(words, np.int32)
    gpusim.launch(gpusim.CudaSource(probe.SOURCE, f"scatter_{mode}"), probe.BLOCKS, probe.BLOCK,
                      (out, np.uint32(words), np.uint32(bits), np.uint32(-(-(1 << bits) // per_it))), gpu="h200")
    assert (out == np.arange(words)).all()


def test_the_h200_file_has_every_case_three_times_under_nsight_with_its_provenance():
    rows = _measured()
    assert len(rows) == len(probe.MODES) * len(probe.SIZES_MIB)
    assert all(r["every_word_written"] for r in rows.values())
    assert all(r["ncu"]["lts__t_sectors_op_write.sum"] >= r["words"] for r in rows.values())


def test_on_the_h200_lines_written_from_many_sms_are_written_back_more_at_every_size():
    rows = _measured()
    for mib in probe.SIZES_MIB:
        assert rows["shared", mib]["written_per_array"] > rows["own", mib]["written_per_array"]


def test_on_the_h200_a_scatter_over_many_sms_writes_its_array_back_twice_and_more_from_32_mib():
    # 60 MB of L2: 24 MiB is written back about once, 32 MiB 2.7 times (each line of it from SMs of both partitions)
    rows = _measured()
    assert rows["shared", 24]["written_per_array"] < 1.2
    assert rows["shared", 32]["written_per_array"] > 2.5
    assert rows["own", 32]["written_per_array"] < 1.2


def test_on_the_h200_a_small_scatter_from_one_sm_a_line_stays_in_the_l2():
    rows = _measured()
    assert rows["own", 8]["written_per_array"] < 0.05
    assert rows["shared", 8]["written_per_array"] > 0.4
