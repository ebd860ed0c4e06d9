"""Device addresses of measured launches (validate/address_merge.py): merged onto the kernels a
replay ran, the measured figures untouched, the replay's agreement in the provenance; and the
committed sets carry them."""
import copy
import json

import pytest

from validate.address_merge import merge
from validate.datadir import DATA_DIR


def _data():
    return {"provenance": {"gpu_name": "NVIDIA H200"},
            "kernels": [{"name": "a/x", "event_time_us": 500.0, "metrics": {"gpu__time_duration.sum": 499.0}},
                        {"name": "b/y", "event_time_us": 200.0, "metrics": {}},
                        {"name": "c/z", "event_time_us": 20.0, "metrics": {}}]}


def _replay():
    return {"provenance": {"gpu_name": "NVIDIA H200", "driver": "580.159.04"},
            "kernels": [{"name": "a/x", "event_time_us": 505.0, "arg_addresses": [2 << 21, (2 << 21) + 512]},
                        {"name": "b/y", "event_time_us": 260.0, "arg_addresses": [0]},
                        {"name": "c/z", "event_time_us": 40.0, "arg_addresses": [0]}]}


def test_addresses_go_onto_the_kernels_the_replay_ran_and_nothing_else_changes():
    before = _data()
    after = merge(copy.deepcopy(before), _replay(), "cmd", "2026-11-27")
    assert after["kernels"][0]["arg_addresses"] == [2 << 21, (2 << 21) + 512]
    for k0, k1 in zip(before["kernels"], after["kernels"]):
        assert {k: v for k, v in k1.items() if not k.startswith("arg_addresses")} == k0


def test_the_provenance_lists_long_kernels_whose_replay_time_differs():
    p = merge(_data(), _replay(), "cmd", "2026-11-27")["provenance"]["arg_addresses"]
    assert p["replay_differs_over_8pct_at_100us_or_more"] == ["b/y"]       # c/z is launch noise (20 us)
    assert p["kernels"] == 3 and p["command"] == "cmd"


@pytest.mark.parametrize("name", ["h200", "h100", "h200_heldout", "h200_heldout2", "h100_heldout2"])
def test_the_committed_sets_say_where_the_gpu_put_each_array(name):
    data = json.loads((DATA_DIR / f"{name}.json").read_text())
    assert all("arg_addresses" in k for k in data["kernels"])
    assert data["provenance"]["arg_addresses"]["replay_differs_over_8pct_at_100us_or_more"] == []


def test_the_held_out_histogram_of_256_bins_had_them_at_512_mod_1024():
    # why hist_global_atomic/bins256 ran at four atomic units' rate on both GPUs (519.9 / 520.9 us)
    for name in ("h200_heldout2", "h100_heldout2"):
        k = next(k for k in json.loads((DATA_DIR / f"{name}.json").read_text())["kernels"]
                 if k["name"] == "hist_global_atomic/bins256")
        assert k["arg_addresses"][1] % 1024 == 512
