"""A sweep's rows equal independent gpusim.launch(..., timing=True) runs of the same
configurations, bit for bit in every metric, whether the point recorded the functional run,
replayed it, or replayed it with blocks the recording lacked (another SM count)."""
import numpy as np
import pytest

import gpusim
import programs
from gpusim.specs import resolve
from gpusim.sweep.point import metrics_row
from gpusim.sweep.replay import timed_launch
from gpusim.sweep.streams import StreamCache
from sampling_kernels import reread

VARY = {"sm_count": [132, 16], "hbm.bandwidth_GBps": [3352, 1500]}


def _independent(name, size, spec):
    c = programs.get(name).case(size)
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=spec, timing=True, shared_bytes=c.shared_bytes)
    return r, c


def _same(a: dict, b: dict) -> list:
    keys = set(a) | set(b)
    return sorted(k for k in keys if repr(a.get(k)) != repr(b.get(k)))


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("streams")
    return gpusim.sweep(["transpose_shared"], ["small"], VARY, cache_dir=str(d))


def test_sweep_rows_equal_independent_launches(table):
    # the sweep records at its fewest SMs (executors.order); 132 SMs then replays with blocks the recording lacked
    assert list(table["functional_run"]) == ["replayed", "replayed", "recorded", "replayed"]
    for row in table.to_dict("records"):
        spec = resolve("h100", [f"sm_count={row['sm_count']}", f"hbm.bandwidth_GBps={row['hbm.bandwidth_GBps']}"])
        r, _ = _independent("transpose_shared", "small", spec)
        want = metrics_row(r.metrics)
        got = {k: row[k] for k in want}
        assert _same(got, want) == [], (row["sm_count"], row["hbm.bandwidth_GBps"])
    # 16 SMs sample other blocks than 132 (48 blocks: full mode vs sampled): the 132-SM replays ran those
    assert table["timing__mode"].tolist() == ["full", "full", "sampled", "sampled"]


def test_replayed_result_has_the_same_tables_and_outputs():
    cache = StreamCache(disk=False)
    spec0, spec1 = resolve("h100"), resolve("h100", ["l2.hit_latency_cycles=400", "sm.warp_scheduler=lrr"])
    c = programs.get("reduce_sequential").case("tiny")
    _, how = timed_launch(c.kernel, c.grid, c.block, c.args, spec0, c.shared_bytes, cache=cache)
    c = programs.get("reduce_sequential").case("tiny")
    got, how2 = timed_launch(c.kernel, c.grid, c.block, c.args, spec1, c.shared_bytes, cache=cache)
    c.check()                                  # the recorded outputs came back into the arrays
    want, _ = _independent("reduce_sequential", "tiny", spec1)
    assert (how, how2) == ("recorded", "replayed")
    assert _same(got.metrics, want.metrics) == []
    assert sorted(got.table) == sorted(want.table)
    for k in want.table:
        assert np.array_equal(np.asarray(got.table[k]), np.asarray(want.table[k])), k
    assert np.array_equal(got.sass.inst, want.sass.inst)


def test_functional_fields_record_again():
    cache = StreamCache(disk=False)
    c = programs.get("bank_conflict_demo").case()
    hows = []
    for sets in ([], ["sm.shared_banks=64"], ["hbm.latency_ns=300"]):
        c = programs.get("bank_conflict_demo").case()
        hows.append(timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100", sets), cache=cache)[1])
    assert hows == ["recorded", "recorded", "replayed"]


def test_disk_cache_serves_another_cache_object(tmp_path):
    c = programs.get("vector_add").case()
    timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100"), cache=StreamCache(tmp_path))
    c = programs.get("vector_add").case()
    fresh = StreamCache(tmp_path)
    r, how = timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100", ["clocks.sm_clock_mhz=1500"]),
                          cache=fresh)
    assert how == "replayed" and fresh.loads == 1
    c.check()


def test_other_inputs_are_not_replayed(tmp_path):
    cache = StreamCache(disk=False)
    P = programs.get("vector_add")
    c = P.case(seed=0)
    timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100"), cache=cache)
    c = P.case(seed=1)                         # same shapes, other values: keyed by content too
    assert timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100"), cache=cache)[1] == "recorded"


def test_a_point_whose_sample_cannot_see_its_reuse_is_simulated_in_full_as_a_launch_is():
    # 'auto' gives up a sample blind to a 1 MiB array's reuse in a 1 MiB L2 for full simulation
    # (timing/sampling/extrapolation.py reuse_note); a sweep's recorded and replayed points too
    n = (1 << 20) // 4
    spec = resolve("h100", [f"l2.size_bytes={1 << 20}"])
    cache = StreamCache(disk=False)
    want = gpusim.launch(reread, 4 * n // 256, 256, (np.ones(n, np.float32), np.zeros(1, np.float32), n), gpu=spec,
                         timing=True).metrics
    assert want["timing__mode"] == "full"
    for how in ("recorded", "replayed"):
        got, run = timed_launch(reread, 4 * n // 256, 256, (np.ones(n, np.float32), np.zeros(1, np.float32), n), spec,
                                cache=cache)
        assert run == how and _same(got.metrics, want) == []
