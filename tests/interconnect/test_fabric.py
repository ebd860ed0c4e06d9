"""The fabric's ports: one hardware property per test, on the datasheet H200 (18 NVLinks)."""
import pytest

from gpusim.errors import ConfigError
from gpusim.interconnect.copy_engine import peer_copies
from gpusim.specs import presets
from gpusim.specs.overrides import apply

H200 = presets.get("h200-datasheet")
GiB = 1 << 30


def test_a_large_peer_copy_runs_at_the_links_payload_rate():
    r = peer_copies(H200, [(0, 1, GiB)], gpus=2)
    assert GiB / (r["time_us"] * 1e3) == pytest.approx(18 * 26.5625 * 0.83, rel=0.01)


def test_copies_both_ways_do_not_share_a_direction():
    one = peer_copies(H200, [(0, 1, GiB)], gpus=2)["time_us"]
    both = peer_copies(H200, [(0, 1, GiB), (1, 0, GiB)], gpus=2)["time_us"]
    assert both == pytest.approx(one, rel=0.01)


def test_copies_on_one_gpus_stream_run_one_after_another():
    one = peer_copies(H200, [(0, 1, GiB)], gpus=4)["time_us"]
    three = peer_copies(H200, [(0, 1, GiB), (0, 2, GiB), (0, 3, GiB)], gpus=4)
    assert three["time_us"] == pytest.approx(3 * one, rel=0.01)
    assert three["per_copy_us"][0] == pytest.approx(one, rel=0.01)


def test_two_gpus_copying_into_one_split_its_ingress_port():
    one = peer_copies(H200, [(0, 2, GiB)], gpus=4)["time_us"]
    two = peer_copies(H200, [(0, 2, GiB), (1, 2, GiB)], gpus=4)["time_us"]
    assert two == pytest.approx(2 * one, rel=0.02)


def test_halving_the_link_count_halves_copy_bandwidth():
    half = apply(H200, {"nvlink.links": 9})
    t18 = peer_copies(H200, [(0, 1, GiB)], gpus=2)["time_us"]
    t9 = peer_copies(half, [(0, 1, GiB)], gpus=2)["time_us"]
    assert t9 / t18 == pytest.approx(2.0, rel=0.01)


def test_direct_topology_gives_each_peer_its_share_of_the_links():
    direct = apply(H200, {"system.topology": "direct", "system.gpu_count": 4})
    t = peer_copies(direct, [(0, 1, GiB)], gpus=4)["time_us"]
    assert GiB / (t * 1e3) == pytest.approx(6 * 26.5625 * 0.83, rel=0.01)     # 18 links / 3 peers


def test_pcie_topology_runs_at_the_pcie_rate():
    pcie = apply(H200, {"system.topology": "pcie"})
    t = peer_copies(pcie, [(0, 1, GiB)], gpus=2)["time_us"]
    assert GiB / (t * 1e3) == pytest.approx(63.0, rel=0.01)


def test_link_counters_count_the_payload():
    r = peer_copies(H200, [(0, 1, 64 << 20)], gpus=2)
    assert r["nvltx__bytes.sum"] == [64 << 20, 0] and r["nvlrx__bytes.sum"] == [0, 64 << 20]


def test_nvlink_topology_without_links_is_refused():
    with pytest.raises(ConfigError, match="nvlink.links is 0"):
        apply(H200, {"nvlink.links": 0, "system.gpu_count": 2})


def test_direct_topology_needs_a_link_per_peer():
    with pytest.raises(ConfigError, match="at least one NVLink to each peer"):
        apply(presets.get("v100-datasheet"), {"system.gpu_count": 8})


def test_unknown_topology_is_refused():
    with pytest.raises(ConfigError, match="topology must be one of"):
        apply(H200, {"system.topology": "torus"})
