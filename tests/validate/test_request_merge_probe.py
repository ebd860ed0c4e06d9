"""validate/request_merge_probe.py: what the H100 it ran on counted (data/measurements/request_merge_h100.json:
reads of one region by SMs of one GPC are looked up once for several, by SMs of different GPCs each
time), that gpusim reproduces the two on its own SMs, and the probe's bookkeeping of the GPCs."""
import json

import numpy as np
import pytest

import gpusim
from gpusim.specs.overrides import resolve
from validate import gpc_topology
from validate import request_merge_probe as probe
from validate.datadir import DATA_DIR


def _rows(kind):
    doc = json.loads((DATA_DIR / "request_merge_h100.json").read_text())
    return {r["case"]: r["looked_up_per_received"] for r in doc["rows"] if r["kind"] == kind}


def test_the_h100_file_has_every_case_with_its_counters_and_provenance():
    doc = json.loads((DATA_DIR / "request_merge_h100.json").read_text())
    assert "H100" in doc["provenance"]["gpu"] and doc["provenance"]["ncu"]["rc"] == 0
    assert not doc["provenance"]["ncu"]["problems"]
    assert [(r["kind"], r["case"]) for r in doc["rows"]] == probe.cases(doc["provenance"]["sm_count"], doc["gpcs"])
    assert all(r["looked_up_per_received"] is not None for r in doc["rows"])


@pytest.mark.parametrize("kind", ["ca", "async"])
def test_on_the_h100_reads_of_sms_of_one_gpc_are_looked_up_once_for_several(kind):
    r = _rows(kind)
    assert r["own"] == pytest.approx(1.0, abs=0.01)
    assert r["tpc"] == pytest.approx(0.5, abs=0.02)
    assert r["gpc_two_tpcs_one_sm"] == pytest.approx(0.5, abs=0.02)
    assert r["gpc_two_tpcs"] == pytest.approx(0.25, abs=0.02)
    assert 0.24 < r["gpc"] < 0.30 and 0.24 < r["all"] < 0.30          # about four reads a lookup, not one a GPC


@pytest.mark.parametrize("kind", ["ca", "async"])
def test_on_the_h100_reads_of_sms_of_different_gpcs_are_each_looked_up(kind):
    r = _rows(kind)
    assert r["apart"] > 0.97 and r["next_tpc"] > 0.95


def test_on_the_h100_a_read_long_after_its_partners_is_looked_up_again():
    r = _rows("async")
    assert r["tpc_late1000"] < 0.52 and r["tpc_late16000"] == pytest.approx(1.0, abs=0.01)
    assert r["tpc_late1000"] < r["tpc_late4000"] < r["tpc_late8000"] < r["tpc_late16000"]


def _gpusim_share(readers):
    """gpusim's lookups a received sector when SMs `readers` of a 16-SM H100 with two GPCs read one region
    (GPC merging on at the measured window, the presets' join at a slice off)."""
    spec = resolve("h100", ["sm_count=16", "noc.gpcs=2", "noc.gpc_merge_window_cycles=750", "l2.join_queued_reads=false"])
    role = [0 if s in readers else -1 for s in range(16)]
    role, delay = probe._tables(role, [0] * 16)
    args = (np.arange(probe.REGION_INT4 * 4, dtype=np.int32), np.asarray(role, np.int32), np.asarray(delay, np.int32),
            np.zeros(2, np.uint64), np.zeros(16 * 6, np.uint64))
    m = gpusim.launch(gpusim.CudaSource(probe.source(sync=False), "merge_async"), 16, 32 * probe.WARPS, args,
                      gpu=spec, timing=True, shared_bytes=probe.SHARED_BYTES, outputs=False).metrics
    return probe.merged(m)["looked_up_per_received"]


def test_in_gpusim_two_sms_of_one_gpc_on_one_region_look_half_of_it_up():
    assert _gpusim_share({0, 1}) == pytest.approx(0.5, abs=0.04)


def test_in_gpusim_two_sms_of_different_gpcs_look_all_of_it_up():
    assert _gpusim_share({0, 8}) == pytest.approx(1.0, abs=0.01)


def test_clusters_link_the_sms_of_a_gpc():
    assert gpc_topology.gpc_groups([(2, [0, 1, 2, 3]), (4, [1, 2, 5, 6, 8, 9, 10, 11])]) == [[0, 1, 2, 3, 5, 6], [8, 9, 10, 11]]


def test_the_gpus_gpcs_land_in_gpusims_gpcs_of_consecutive_sms():
    order = gpc_topology.in_gpusim_order([[0, 1, 16, 17], [2, 3, 18, 19]], 8 * 4, 8)
    assert sorted(order) == list(range(32))
    assert set(order[:4]) in ({0, 1, 16, 17}, {2, 3, 18, 19})     # one found GPC in gpusim's first four SMs
