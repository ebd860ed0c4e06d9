"""validate/l2_request_rate_probe.py: its loads touch the lines and sectors it says, and the H200 it
measured takes line requests, not only sectors, at a rate of its own (data/measurements/l2_request_rate_h200.json)."""
import json

import numpy as np
import pytest

import gpusim
from validate import l2_request_rate_probe as probe
from validate.datadir import DATA_DIR


@pytest.mark.parametrize("lines, sectors", [(32, 32), (16, 32), (8, 32), (1, 4)])
def test_each_warp_load_touches_its_lines_sectors(lines, sectors):
    m = gpusim.launch(gpusim.CudaSource(probe.SOURCE, "probe"), 1, 32,
                      (np.ones(probe.BUF_BYTES // 4, np.float32), np.zeros(1, np.float32), np.int32(lines),
                       np.uint32(probe.BUF_BYTES // 128), np.int32(4)), gpu="h200").metrics
    assert m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 4
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 4 * sectors


def test_the_h200_serves_one_sector_requests_at_about_half_the_sectors_of_two_or_four():
    doc = json.loads((DATA_DIR / "l2_request_rate_h200.json").read_text())
    assert "H200" in doc["provenance"]["gpu"] and doc["provenance"]["command"]
    rate = {r["lines"]: r for r in doc["rows"]}
    assert abs(rate[16]["sectors_per_ns"] / rate[8]["sectors_per_ns"] - 1) < 0.05     # bytes bound both
    assert 0.5 < rate[32]["sectors_per_ns"] / rate[16]["sectors_per_ns"] < 0.6       # 1 sector a request
    assert abs(rate[32]["line_requests_per_ns"] / rate[16]["line_requests_per_ns"] - 1) < 0.1


def test_the_h100_also_serves_one_sector_requests_at_about_half_the_sectors_of_two_or_four():
    doc = json.loads((DATA_DIR / "l2_request_rate_h100.json").read_text())
    assert "H100" in doc["provenance"]["gpu"] and doc["provenance"]["command"]
    rate = {r["lines"]: r for r in doc["rows"]}
    assert abs(rate[16]["sectors_per_ns"] / rate[8]["sectors_per_ns"] - 1) < 0.05
    assert 0.5 < rate[32]["sectors_per_ns"] / rate[16]["sectors_per_ns"] < 0.6
