"""A kernel launched again with arguments of the same kinds reuses its plan (gpusim/launch_template.py):
the same outputs and counters as a launch planned afresh, each launch's own arrays in and out."""
import numpy as np
import pytest

try:
    import triton
    import triton.language as tl
except ImportError:
    pytest.skip("triton not installed (optional extra: pip install -e '.[triton]')", allow_module_level=True)

import gpusim
from gpusim import launch_template


@triton.jit
def _axpy(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def _launch(x, y, out, n, a):
    return gpusim.launch(_axpy, (1,), None, (x, y, out, np.int32(n), a), constexprs={"BLOCK": 128}, num_warps=4,
                         gpu="h100", workers=1)


@pytest.fixture
def plans(monkeypatch) -> list:
    """The plan each launch got, in order (every launch planned: no recipe, gpusim/relaunch.py)."""
    from gpusim import launch_plan  # here: the module whose planning is spied on
    got, plan = [], launch_plan.plan_launch
    monkeypatch.setattr("gpusim.relaunch.key", lambda *a, **k: None)

    def spy(*a, **k):
        out = plan(*a, **k)
        got.append(out[0])
        return out
    monkeypatch.setattr("gpusim.api.plan_launch", spy)
    return got


def _arrays(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(128).astype(np.float32), rng.standard_normal(128).astype(np.float32)


def test_a_launch_again_with_new_data_gets_the_same_plan_and_its_own_results(plans):
    outs = []
    for seed in (1, 2):
        x, y = _arrays(seed)
        out = np.zeros(128, np.float32)
        _launch(x, y, out, 100, np.float32(2.0))
        outs.append((out, x, y))
    assert plans[0] is plans[1]
    for out, x, y in outs:
        want = np.where(np.arange(128) < 100, np.float32(2.0) * x + y, 0)
        assert out.tobytes() == want.astype(np.float32).tobytes()


def test_the_same_launch_with_templates_off_gives_the_same_bytes_and_metrics(monkeypatch):
    x, y = _arrays(3)
    runs = []
    for off in (False, True):
        if off:
            monkeypatch.setattr(launch_template, "key", lambda *a, **k: None)
            monkeypatch.setattr("gpusim.relaunch.key", lambda *a, **k: None)
        out = np.zeros(128, np.float32)
        for _ in range(2):
            r = _launch(x, y, out, 128, np.float32(-1.5))
        runs.append((out.tobytes(), r.metrics))
    assert runs[0] == runs[1]


def _again(plans, **change):
    """Launch with n=128, a=0.0 and fresh arrays, then again with `change`d arguments (out="x": the
    output is x itself); (whether the second launch got the first's plan, its output, what numpy gives)."""
    x, y = _arrays(4)
    _launch(x.copy(), y, np.zeros(128, np.float32), 128, np.float32(0.0))
    args = dict(x=x, y=y, out=np.zeros(128, np.float32), n=128, a=np.float32(0.0)) | change
    if isinstance(change.get("out"), str):
        args["out"] = x
    out, n = args["out"], args["n"]
    want = args["a"] * x + y
    _launch(**args)
    return plans[0] is plans[1], out[:n], want[:n]


def test_another_scalar_value_is_planned_afresh(plans):
    same, out, want = _again(plans, n=99)
    assert not same and out.tobytes() == want.tobytes()


def test_minus_zero_is_not_the_plus_zero_the_template_was_made_with(plans):
    same, out, want = _again(plans, a=np.float32(-0.0))
    assert not same and out.tobytes() == want.tobytes()


def test_a_bigger_array_is_planned_afresh(plans):
    same, out, want = _again(plans, out=np.zeros(256, np.float32))
    assert not same and out.tobytes() == want.tobytes()


def test_an_array_passed_twice_is_planned_afresh_and_updated_in_place(plans):
    same, out, want = _again(plans, out="x")
    assert not same and out.tobytes() == want.tobytes()


def test_a_read_only_argument_is_not_written_back(plans):
    x, y = _arrays(5)
    x.flags.writeable = False
    for _ in range(2):
        out = np.zeros(128, np.float32)
        _launch(x, y, out, 128, np.float32(1.0))
    assert plans[0] is plans[1] and (out == x + y).all()


def test_launches_that_count_alike_share_metrics_values_but_not_the_dict():
    # PreparedLaunch.finish reuses the metrics of the plan's last launch when every count is the same
    x, y = _arrays(6)
    r1 = _launch(x, y, np.zeros(128, np.float32), 128, np.float32(1.0))
    r1.metrics["smsp__inst_executed.sum"] = -1
    r2 = _launch(x, y, np.zeros(128, np.float32), 128, np.float32(1.0))
    r3 = _launch(x, y, np.zeros(128, np.float32), 77, np.float32(1.0))    # fewer active lanes: other counts
    assert r2.metrics["smsp__inst_executed.sum"] > 0
    st = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
    assert (r2.metrics[st], r3.metrics[st]) == (16, 10)                  # 128 and 77 floats stored
