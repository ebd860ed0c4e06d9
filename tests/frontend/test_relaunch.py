"""A Triton launch like an earlier one takes its recipe (gpusim/relaunch.py): the same outputs and
counters as a launch bound, checked and planned afresh, each launch's own arrays; any difference in
what the recipe was made from takes the general path."""
import numpy as np
import pytest

try:
    import triton
    import triton.language as tl
except ImportError:
    pytest.skip("triton not installed (optional extra: pip install -e '.[triton]')", allow_module_level=True)

import gpusim
from gpusim import relaunch


@triton.jit
def _scale(x_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=m), mask=m)


THREE = np.float32(3.0)


def _launch(x, out, n, a=THREE, grid=None, **options):
    grid = grid if grid is not None else (lambda meta: (triton.cdiv(n, meta["BLOCK"]),))
    return gpusim.launch(_scale, grid, None, (x, out, np.int32(n), a), constexprs={"BLOCK": 64}, num_warps=2,
                         gpu="h100", workers=1, **options)


@pytest.fixture
def hits(monkeypatch) -> list:
    """Per launch that looked for a recipe: whether it found one."""
    got, find = [], relaunch.find

    def spy(*a, **k):
        out = find(*a, **k)
        got.append(out is not None)
        return out
    monkeypatch.setattr(relaunch, "find", spy)
    monkeypatch.setattr(relaunch, "_RECIPES", {})
    return got


def _x(seed, n=200):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def test_a_launch_again_takes_the_recipe_with_its_own_arrays(hits):
    outs = []
    for seed in (1, 2):
        x, out = _x(seed), np.zeros(200, np.float32)
        _launch(x, out, 200)
        outs.append((x, out))
    assert hits == [False, True]
    for x, out in outs:
        assert out.tobytes() == (np.float32(3.0) * x).tobytes()


def test_the_recipes_launch_counts_as_the_general_paths(hits, monkeypatch):
    x = _x(3)
    first = _launch(x, np.zeros(200, np.float32), 200, timing=True)
    again = _launch(x, np.zeros(200, np.float32), 200, timing=True)
    assert hits == [False, True]
    assert again.metrics == first.metrics


def test_a_grid_the_arguments_change_takes_the_general_path(hits):
    x = _x(4, 256)
    _launch(x, np.zeros(256, np.float32), 256)
    out = np.zeros(256, np.float32)
    _launch(x, out, 256, grid=(2,))                # 2 blocks of 64: half of them
    assert hits == [False, False]
    assert out[:128].tobytes() == (np.float32(3.0) * x[:128]).tobytes() and not out[128:].any()


def test_another_scalar_value_is_another_key(hits):
    x = _x(5)
    _launch(x, np.zeros(200, np.float32), 200)
    out = np.zeros(200, np.float32)
    _launch(x, out, 200, a=np.float32(-0.0))
    assert hits == [False, False]
    assert out.tobytes() == (np.float32(-0.0) * x).tobytes()


def test_a_sanitized_launch_looks_for_no_recipe(hits):
    x = _x(6)
    _launch(x, np.zeros(200, np.float32), 200)
    r = _launch(x, np.zeros(200, np.float32), 200, check="memcheck")
    assert hits == [False] and r.hazards == []


def test_the_reference_core_is_another_key(hits):
    x = _x(7)
    _launch(x, np.zeros(200, np.float32), 200)
    out = np.zeros(200, np.float32)
    _launch(x, out, 200, core="reference")
    assert hits == [False, False] and out.tobytes() == (np.float32(3.0) * x).tobytes()
