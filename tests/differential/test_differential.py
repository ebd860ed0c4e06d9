"""Differential test: random kernels (`random_kernels.py`) run in gpusim and in Numba's own CUDA
simulator give identical outputs.

Hypothesis draws `EXAMPLES` examples (derandomized: every CI run checks the same kernels),
each of `PARTS` composites of `KERNELS` random kernels. Each composite is written as a
Python file twice: with gpusim's drop-in (`from gpusim import cuda`) and with Numba's
(`from numba import cuda`). Long-lived workers (`worker.py`) run them: one gpusim worker
per part, so the parts compile on separate cores (Numba's compilation is most of the
cost), and one worker in Numba's simulator. Every output element (each variable of each
kernel, per thread, and the atomic accumulators) must be equal; a mismatch names the
random kernel and prints its source.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kernel_io
from random_kernels import composite_source, kernel_body

KERNELS = 10                # random kernels per composite (one compile, one launch)
PARTS = 2                   # composites per example, compiled in parallel
EXAMPLES = int(os.environ.get("GPUSIM_FUZZ_EXAMPLES", "10"))   # 10 x 2 x 10 = 200 random kernels a CI run; 26: 520
HERE = Path(__file__).resolve().parent


class Worker:
    def __init__(self, cudasim: bool, cache: Path):
        env = dict(os.environ, GPUSIM_CACHE_DIR=str(cache))    # the random kernels' PTX: not in the user's cache
        if cudasim:
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        else:
            env.pop("NUMBA_ENABLE_CUDASIM", None)
        self.p = subprocess.Popen([sys.executable, str(HERE / "worker.py")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)

    def send(self, path: Path, grid: int, block: int, seed: int, out: Path) -> None:
        self.p.stdin.write(json.dumps({"path": str(path), "name": "composite", "grid": grid, "block": block,
                                       "seed": seed, "kernels": KERNELS, "out": str(out)}) + "\n")
        self.p.stdin.flush()

    def receive(self, what: str) -> None:
        line = self.p.stdout.readline()
        assert line, f"the worker running {what} died"
        answer = json.loads(line)
        assert answer["ok"], f"{what} failed: {answer['error']}"

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(timeout=60)


@pytest.fixture(scope="module")
def workers(tmp_path_factory):
    cache = tmp_path_factory.mktemp("ptx_cache")
    ws = {"cudasim": Worker(True, cache), "gpusim": [Worker(False, cache) for _ in range(PARTS)]}
    yield ws
    for w in [ws["cudasim"], *ws["gpusim"]]:
        w.close()


def test_random_kernels_match_numba_simulator(workers, tmp_path):
    checked = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=(Phase.generate,))
    @given(st.data())
    def example(data):
        block = data.draw(st.sampled_from([32, 64, 96]), label="block")     # whole warps: full-mask collectives
        grid = 2
        i = len(checked)
        parts = []
        for part in range(PARTS):
            bodies = [data.draw(kernel_body(k, block), label=f"part {part} kernel {k}") for k in range(KERNELS)]
            src = composite_source(bodies)
            name = f"{i}_{part}"
            (tmp_path / f"cudasim_{name}.py").write_text(src)
            (tmp_path / f"gpusim_{name}.py").write_text(src.replace("from numba import cuda\n",
                                                                    "from gpusim import cuda\n", 1))
            parts.append((name, bodies, 1000 * i + part))
        for (name, _, seed), w in zip(parts, workers["gpusim"]):
            w.send(tmp_path / f"gpusim_{name}.py", grid, block, seed, tmp_path / f"gpusim_{name}.npy")
        for name, _, seed in parts:
            workers["cudasim"].send(tmp_path / f"cudasim_{name}.py", grid, block, seed, tmp_path / f"ref_{name}.npy")
        for (name, _, _), w in zip(parts, workers["gpusim"]):
            w.receive(f"gpusim on {tmp_path / f'gpusim_{name}.py'}")
        for name, _, _ in parts:
            workers["cudasim"].receive(f"Numba's simulator on {tmp_path / f'cudasim_{name}.py'}")
        for name, bodies, seed in parts:
            got = list(np.load(tmp_path / f"gpusim_{name}.npy", allow_pickle=True))
            want = list(np.load(tmp_path / f"ref_{name}.npy", allow_pickle=True))
            bad = kernel_io.mismatches(got, want)
            if bad:
                k = bad[0][0]
                rows = "\n".join(f"  {out}[{row}, {col}]: gpusim {g!r}, Numba simulator {w!r}"
                                 for kk, out, row, col, g, w in bad if kk == k)
                raise AssertionError(f"random kernel {k} of {tmp_path / f'gpusim_{name}.py'} (block {block}, "
                                     f"seed {seed}) differs:\n{rows}\nits source:\n" + "\n".join(bodies[k]))
        checked.append(PARTS * KERNELS)

    example()
    assert sum(checked) == EXAMPLES * PARTS * KERNELS
