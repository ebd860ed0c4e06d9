"""One launch plan, built once (gpusim/launch_plan.py): the GPU is resolved, the launch shape and
its shared memory, peer arrays and clusters checked once per launch, and the timing engine reads the
launch through the frozen plan, not through the functional core's objects."""
from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim import launch_checks
from gpusim.launch_plan import LaunchPlan
from gpusim.specs import overrides

TIMING = Path(__file__).resolve().parents[2] / "gpusim" / "timing"


@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1.0


def _counted(monkeypatch, module, name: str) -> list:
    """Count the calls of `module.name` wherever gpusim bound it (`from ... import name`)."""
    original, calls = getattr(module, name), []

    def counting(*a, **k):
        calls.append(a)
        return original(*a, **k)
    for mod in list(sys.modules.values()):
        if mod is not None and mod.__name__.startswith("gpusim") and vars(mod).get(name) is original:
            monkeypatch.setattr(mod, name, counting)
    return calls


@pytest.fixture
def counts(monkeypatch):
    return {"resolve": _counted(monkeypatch, overrides, "resolve"),
            **{n: _counted(monkeypatch, launch_checks, n) for n in ("check_dims", "check_shared", "check_peer_args",
                                                                         "check_cluster")}}


@pytest.mark.parametrize("timing", [False, True])
def test_a_launch_resolves_the_gpu_and_checks_its_shape_once(counts, timing):
    x = np.zeros(64, np.float32)
    gpusim.launch(add_one, 2, 32, (x,), gpu="h100", timing=timing)
    assert x.tolist() == [1.0] * 64
    assert {k: len(v) for k, v in counts.items()} == {"resolve": 1, "check_dims": 1, "check_shared": 1,
                                                      "check_peer_args": 1, "check_cluster": 1}


def test_prepare_resolves_and_checks_once_too(counts):
    p = gpusim.prepare(add_one, 2, 32, (np.zeros(64, np.float32),), gpu="h100")
    assert p.plan.geometry.nblocks == 2 and {k: len(v) for k, v in counts.items()} == {
        "resolve": 1, "check_dims": 1, "check_shared": 1, "check_peer_args": 1, "check_cluster": 1}


def test_the_plan_carries_the_launch_clusters():
    plan = gpusim.prepare(add_one, 4, 32, (np.zeros(128, np.float32),), gpu="h100", cluster=2).plan
    assert plan.geometry.cluster == (2, 1, 1) and plan.geometry.cluster_explicit


def test_the_plan_is_frozen_and_names_what_the_layers_below_read():
    x = np.zeros(64, np.float32)
    plan = gpusim.prepare(add_one, (2, 1), 32, (x,), gpu="h100").plan
    assert plan.grid == (2, 1, 1) and plan.block == (32, 1, 1) and plan.spec.name == "h100"
    (((addr, nbytes),),) = plan.arrays                    # the one argument: one array of 64 floats
    assert nbytes == 256 and addr > 0 and plan.peer_ranges == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.geometry = None
    with pytest.raises(TypeError):
        plan.params["x"] = b""


def _timing_sources():
    for path in sorted(TIMING.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def test_timing_imports_nothing_of_the_prepared_launch_but_the_plan_type():
    for path, tree in _timing_sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("gpusim.functional.prepared") for a in node.names), path
            elif isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("gpusim.functional.prepared"), (path, node.lineno)
                if node.module == "gpusim.launch_plan":
                    assert {a.name for a in node.names} <= {"LaunchPlan"}, (path, node.lineno)
                if node.module == "gpusim.functional":
                    assert "prepared" not in {a.name for a in node.names}, (path, node.lineno)


def test_timing_reads_the_launch_from_the_plan_not_the_functional_cores_objects():
    """No `.marshalled` (the functional core's arguments and copy-back), and no `getattr(x,
    "<a plan field>", default)` guessing whether an object has a field."""
    fields = {f.name for f in dataclasses.fields(LaunchPlan)}
    for path, tree in _timing_sources():
        for node in ast.walk(tree):
            assert not (isinstance(node, ast.Attribute) and node.attr == "marshalled"), (path, node.lineno)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and len(node.args) == 3 and isinstance(node.args[1], ast.Constant):
                assert node.args[1].value not in fields, (path, node.lineno)
