"""Sweep recordings (the pickled functional runs a sweep replays) are checked cache entries: a
recording with one flipped byte, a truncated one or a changed part file is not replayed but
recorded again, so the replayed point's metrics equal a fresh run's."""
import pytest

import programs
from gpusim.frontend.diskcache import corrupt_entries
from gpusim.specs import resolve
from gpusim.sweep.point import metrics_row
from gpusim.sweep.replay import timed_launch
from gpusim.sweep.streams import StreamCache

SPEC0, SPEC1 = resolve("h100"), resolve("h100", ["hbm.bandwidth_GBps=1500"])


def _launch(cache, spec):
    c = programs.get("transpose_shared").case("small")
    r, how = timed_launch(c.kernel, c.grid, c.block, c.args, spec, c.shared_bytes, cache=cache)
    return metrics_row(r.metrics), how


@pytest.fixture
def recorded(tmp_path):
    want, how = _launch(StreamCache(tmp_path), SPEC1)             # the metrics of a point run afresh
    assert how == "recorded"
    for p in tmp_path.iterdir():
        p.unlink()
    assert _launch(StreamCache(tmp_path), SPEC0)[1] == "recorded"
    (path,) = tmp_path.glob("*.pkl")
    return path, want


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_recording_is_recorded_again(recorded, damage):
    path, want = recorded
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) * 2 // 3] ^= 0x01                          # one bit of the sector/address arrays
    else:
        data = data[: len(data) // 2]
    path.write_bytes(bytes(data))
    before = corrupt_entries()
    got, how = _launch(StreamCache(path.parent), SPEC1)
    assert how == "recorded" and corrupt_entries() == before + 1
    assert got == want


def test_an_intact_recording_is_replayed_to_the_same_metrics(recorded):
    path, want = recorded
    got, how = _launch(StreamCache(path.parent), SPEC1)
    assert how == "replayed" and got == want
