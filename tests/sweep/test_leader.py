"""The point a sweep records the functional run at (executors.order): the fewest SMs, whose
sampled timing covers the most blocks."""
from types import SimpleNamespace

import gpusim
from gpusim.sweep.executors import order


def _task(i, group, sms):
    return SimpleNamespace(index=i, group=group, spec=SimpleNamespace(sm_count=sms))


def test_leader_is_the_point_with_the_fewest_sms_then_task_order():
    tasks = [_task(0, "a", 132), _task(1, "a", 66), _task(2, "b", 132), _task(3, "a", 66), _task(4, "b", 132)]
    leaders, follow = order(tasks)
    assert [t.index for t in leaders] == [1, 2]
    assert [t.index for t in follow["a"]] == [0, 3] and [t.index for t in follow["b"]] == [4]


def test_sweep_records_at_the_fewest_sms(tmp_path):
    df = gpusim.sweep(["transpose_shared"], ["small"], {"sm.count": [132, 66]}, workers=1, cache_dir=str(tmp_path))
    assert dict(zip(df["sm_count"], df["functional_run"])) == {132: "replayed", 66: "recorded"}
