"""Broadcast and reduce in place and out of place vs NCCL on 2 H200s
(data/measurements/h200x2_broadcast_inplace.json, benchmarks/nccl_inplace_probe.py: 1-64 MiB, each
configuration measured twice; compared with the mean of the two). Out of place, NCCL's broadcast root
also copies its input into its own output (copySend); reduce runs the same primitives either way.
DEVIATIONS.md, row "chains". No GPU needed."""
import json
import statistics
from collections import defaultdict

import pytest

from gpusim.collectives import simulate
from validate.datadir import DATA_DIR

DATA = DATA_DIR / "h200x2_broadcast_inplace.json"
MIB = 1 << 20


@pytest.fixture(scope="module")
def rows():
    times = defaultdict(list)
    for r in json.loads(DATA.read_text())["records"]:
        times[(r["op"], r["bytes"], r["placement"] == "in_place")].append(r["time_us"])
    return {k: (statistics.fmean(v), simulate(k[0], k[1], "h200", 2, in_place=k[2]).time_us)
            for k, v in times.items()}


def test_every_placement_op_and_size_within_10_percent_in_time(rows):
    assert len(rows) == 2 * 2 * 6
    worst = max(abs(pred / meas - 1) for meas, pred in rows.values())
    # reached: 9.5%, reduce out of place at 2 MiB (10.7% before the root copy and its refit)
    assert worst <= 0.10


def test_out_of_place_broadcast_root_copy_costs_what_was_measured_at_64_mib(rows):
    # measured: 205.4 us out of place against 198.8 in place (6.7 us); the root's copySend at 1.5 x the copy
    # of a send makes its 24 channels, not the wire, bind: 5.9 us
    (m_out, p_out), (m_in, p_in) = rows[("broadcast", 64 * MIB, False)], rows[("broadcast", 64 * MIB, True)]
    assert p_out - p_in == pytest.approx(m_out - m_in, abs=1.5)
