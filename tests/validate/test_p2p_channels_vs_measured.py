"""Point-to-point model vs NCCL with its p2p channels capped on 2 H200s
(data/measurements/h200x2_p2p_channels.json, benchmarks/nccl_p2p_channels_probe.py): the 2-GPU
default (16 channels a peer), 8 a peer (as on 4 GPUs) and 4 a peer (as on 8 GPUs). The small
calls with 8 or 4 channels a peer take a low intercept that depends on buffer reuse and that
the model does not represent (DEVIATIONS.md, "p2p channels per peer"): only operations of
16 MiB and more to one peer (an all_to_all's size / GPUs) are held to 10% there. No GPU needed."""
import json

import pytest

from validate.compare_multi import channel_setting_rows
from validate.datadir import DATA_DIR

DATA = DATA_DIR / "h200x2_p2p_channels.json"
MIB = 1 << 20


@pytest.fixture(scope="module")
def rows():
    rows, left_out = channel_setting_rows(json.loads(DATA.read_text()))
    assert not left_out
    return rows


def test_every_setting_op_and_size_is_compared(rows):
    assert len(rows) == 3 * 2 * 16


def test_default_channels_busbw_within_10_percent_from_1_mib(rows):
    worst = max(abs(r["busbw_err_pct"]) for r in rows if r["setting"] == "default" and r["bytes"] >= MIB)
    assert worst <= 10.0          # reached: 8.8 (all_to_all at 20 MiB)


@pytest.mark.parametrize("setting,channels", [("max_p2p_16", 8), ("max_p2p_8", 4)])
def test_fewer_channels_a_peer_busbw_within_10_percent_from_16_mib_a_peer(rows, setting, channels):
    big = [r for r in rows if r["setting"] == setting and peer_bytes(r) >= 16 * MIB]
    assert {r["channels"] for r in big if r["bytes"] < 128 * MIB} == {channels}
    assert max(abs(r["busbw_err_pct"]) for r in big) <= 10.0    # reached: 5.7 (send_recv 128 MiB) / 6.5 (64 MiB)


def peer_bytes(r) -> float:
    return r["bytes"] / r["gpus"] if r["op"] == "all_to_all" else r["bytes"]
