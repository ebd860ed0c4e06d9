"""Random spec overrides and launch shapes (Hypothesis) never raise anything but gpusim's
own errors; timing runs give the same metrics bit for bit in another process."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings, strategies as st

import gpusim
from gpusim.errors import GpusimError
from gpusim.specs.describe import schema
from gpusim.specs.overrides import apply

from bad_inputs import noop

KEYS = sorted(schema())
ROOT = Path(__file__).resolve().parents[2]

# what a user might type after `--set key=`: numbers of every size and sign, text, nonsense
VALUES = st.one_of(
    st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from(["", "0", "1e30", "-1", "nan", "inf", "abc", "32", "1.5", "0x10", "true", "[1]", "4096 KiB"]),
    st.text(max_size=8),
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=12)), VALUES, min_size=1, max_size=3))
def test_random_spec_overrides_are_applied_or_refused_with_a_config_error(overrides):
    try:
        spec = apply("h100", overrides)
    except GpusimError as e:
        assert str(e)                         # a message the user can act on, never empty
        return
    assert spec.name.startswith("h100")      # accepted: a spec named after its base and settings


# each launch dimension: small legal values, zero and negatives, CUDA's limits and beyond,
# and things that are not ints; sizes that would simulate for minutes are left out
DIM = st.one_of(st.integers(min_value=-3, max_value=40), st.sampled_from([1024, 1025, 65535, 65536, 2**31 - 1, 2**31]),
                st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["8", None, (), [2]]))
SHAPE = st.one_of(DIM, st.lists(DIM, min_size=0, max_size=4).map(tuple))


def _cheap(grid, block) -> bool:
    """At most 4096 threads in all, when both shapes are tuples of small positive ints."""
    def dims(x):
        x = x if isinstance(x, tuple) else (x,)
        return x if all(type(v) is int for v in x) else None
    g, b = dims(grid), dims(block)
    if g is None or b is None or not g or not b:
        return True
    n = 1
    for v in g + b:
        n *= max(v, 0)
    return n <= 4096 or any(v <= 0 for v in g + b) or max(b) > 1024 or max(g) > 65535


@settings(max_examples=200, deadline=None, derandomize=True)
@given(SHAPE, SHAPE)
def test_random_launch_shapes_launch_or_raise_a_gpusim_error(grid, block):
    if not _cheap(grid, block):
        return
    try:
        gpusim.launch(noop, grid, block, (np.zeros(4, np.float32),))
    except GpusimError as e:
        assert "noop" in str(e)               # the message names the kernel


_RUN = """
import json, sys, gpusim, programs
p = programs.get("transpose_shared")
case = p.case("default", seed=0)
r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu="h100", shared_bytes=case.shared_bytes, timing=True)
json.dump({k: v for k, v in r.metrics.items() if isinstance(v, (int, float, str))}, sys.stdout, sort_keys=True)
"""


def test_timing_metrics_are_identical_across_processes_and_hash_seeds():
    outs = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", _RUN], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300, check=True)
        outs.append(json.loads(r.stdout))
    assert outs[0]["gpu__time_duration.sum"] > 0
    assert outs[0] == outs[1]
