"""Differential test: random kernels (`grammar.py`) run in gpusim and in Numba's own CUDA
simulator give identical outputs.

Hypothesis draws `COMPOSITES` composites of `KERNELS` random kernels each (derandomized:
every CI run checks the same 500+ kernels); each composite is written as a Python file,
compiled and run by gpusim (the kernel is defined with gpusim's drop-in `gpusim.cuda`),
and run by Numba's simulator in a long-lived subprocess (`cudasim_worker.py`) at the same
time. Every output element (each variable of each kernel, per thread, and the atomic
accumulators) must be equal; a mismatch names the random kernel and prints its source.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import harness
from grammar import composite_source, kernel_body

KERNELS = 20                # random kernels per composite (one compile, one launch)
COMPOSITES = 26             # composites per run: 520 random kernels
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cudasim():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    p = subprocess.Popen([sys.executable, str(HERE / "cudasim_worker.py")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    yield p
    p.stdin.close()
    p.wait(timeout=60)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_gpusim(path: Path, grid: int, block: int, seed: int) -> list[np.ndarray]:
    from gpusim.api import BATCH_LANES, prepare
    mod = load(path, f"gpusim_{path.stem}")
    args = harness.make_args(seed, grid * block, KERNELS)
    p = prepare(mod.composite, grid, block, args)            # compile (drop-in), lay out, marshal
    with np.errstate(all="ignore"):
        p.run_all(BATCH_LANES)
    p.marshalled.copy_back(p.memory)                          # as launch() does, without the SASS counts
    return args[7:]


def test_random_kernels_match_numba_simulator(cudasim, tmp_path):
    checked = []

    @settings(max_examples=COMPOSITES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=(Phase.generate,))
    @given(st.data())
    def composite(data):
        block = data.draw(st.sampled_from([32, 64]), label="block")
        grid = 2
        bodies = [data.draw(kernel_body(k, block), label=f"kernel {k}") for k in range(KERNELS)]
        i = len(checked)
        seed = 1000 + i
        src = composite_source(bodies)
        ref_path = tmp_path / f"cudasim_{i}.py"
        sim_path = tmp_path / f"gpusim_{i}.py"
        ref_path.write_text(src)
        sim_path.write_text(src.replace("from numba import cuda\n", "from gpusim import cuda\n", 1))
        out = tmp_path / f"ref_{i}.npy"
        cudasim.stdin.write(json.dumps({"path": str(ref_path), "name": "composite", "grid": grid, "block": block,
                                        "seed": seed, "kernels": KERNELS, "out": str(out)}) + "\n")
        cudasim.stdin.flush()
        got = run_gpusim(sim_path, grid, block, seed)         # while the simulator runs the same
        answer = json.loads(cudasim.stdout.readline())
        assert answer["ok"], f"Numba's simulator failed on composite {i} ({sim_path}): {answer['error']}"
        want = list(np.load(out, allow_pickle=True))
        bad = harness.mismatches(got, want)
        if bad:
            k = bad[0][0]
            lines = "\n".join(bodies[k])
            rows = "\n".join(f"  {name}[{row}, {col}]: gpusim {g!r}, Numba simulator {w!r}"
                             for kk, name, row, col, g, w in bad if kk == k)
            raise AssertionError(f"random kernel {k} of composite {i} (block {block}, seed {seed}; file {sim_path}) "
                                 f"differs:\n{rows}\nits source:\n{lines}")
        checked.append(KERNELS)

    composite()
    assert sum(checked) >= 500
