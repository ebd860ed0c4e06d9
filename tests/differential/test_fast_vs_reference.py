"""Differential test of gpusim's two functional cores: random kernels of the grammar
(`random_kernels.py`) run in the fast core (`gpusim/functional/fastpath`, every ALU segment
compiled at once: GPUSIM_COMPILE_AFTER=0) and in the reference interpreter give identical
outputs, bit for bit (NaN payloads included), and identical counters (per block: warps,
threads, loop back edges; per instruction: requests, sectors, wavefronts).

As test_differential.py: Hypothesis draws `EXAMPLES` examples (derandomized), each of
`PARTS` composites of `KERNELS` random kernels, run by long-lived workers (`worker.py`),
one per part; each worker runs its composite in both cores.
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

KERNELS = 10
PARTS = 2
EXAMPLES = int(os.environ.get("GPUSIM_FUZZ_EXAMPLES", "10"))   # 200 random kernels a CI run, as test_differential
HERE = Path(__file__).resolve().parent
COUNTERS = ("block_warps", "block_threads", "loop_back")


class Worker:
    def __init__(self, cache: Path):
        env = dict(os.environ, GPUSIM_CACHE_DIR=str(cache), GPUSIM_COMPILE_AFTER="0")
        env.pop("NUMBA_ENABLE_CUDASIM", None)
        self.p = subprocess.Popen([sys.executable, str(HERE / "worker.py")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)

    def run(self, path: Path, grid: int, block: int, seed: int, out: Path, core: str) -> None:
        self.p.stdin.write(json.dumps({"path": str(path), "name": "composite", "grid": grid, "block": block,
                                       "seed": seed, "kernels": KERNELS, "out": str(out), "core": core}) + "\n")
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
    ws = [Worker(cache) for _ in range(PARTS)]
    yield ws
    for w in ws:
        w.close()


def differences(fast: list, ref: list) -> list[str]:
    """Names of the outputs and counters that are not bit-identical."""
    names = list(kernel_io.OUTPUT_NAMES) + [f"counter {k}" for k in range(len(ref) - len(kernel_io.OUTPUT_NAMES))]
    return [n for n, a, b in zip(names, fast, ref)
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes()]


@pytest.mark.slow
def test_random_kernels_identical_in_fast_and_reference_cores(workers, tmp_path):
    checked = []
    calls = []                  # every call, replays included: each gets its own files

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=(Phase.generate,))
    @given(st.data())
    def example(data):
        block = data.draw(st.sampled_from([32, 64, 96]), label="block")
        grid = 2
        i = len(calls)
        calls.append(i)
        parts = []
        for part in range(PARTS):
            bodies = [data.draw(kernel_body(k, block), label=f"part {part} kernel {k}") for k in range(KERNELS)]
            path = tmp_path / f"gpusim_{i}_{part}.py"
            path.write_text(composite_source(bodies).replace("from numba import cuda\n", "from gpusim import cuda\n", 1))
            parts.append((path, bodies, 1000 * i + part))
        for core in ("reference", "fast"):
            for (path, _, seed), w in zip(parts, workers):
                w.run(path, grid, block, seed, path.with_suffix(f".{core}.npy"), core)
            errors = []
            for (path, _, _), w in zip(parts, workers):        # read every answer: the workers stay in step
                try:
                    w.receive(f"the {core} core on {path}")
                except AssertionError as e:
                    errors.append(str(e))
            assert not errors, "\n".join(errors)
        for path, bodies, seed in parts:
            ref = list(np.load(path.with_suffix(".reference.npy"), allow_pickle=True))
            fast = list(np.load(path.with_suffix(".fast.npy"), allow_pickle=True))
            assert len(ref) == len(fast) > len(kernel_io.OUTPUT_NAMES)
            bad = differences(fast, ref)
            if bad:
                mism = kernel_io.mismatches(fast, ref)
                k = mism[0][0] if mism else None
                raise AssertionError(f"{path} (block {block}, seed {seed}): {', '.join(bad)} differ between the "
                                     f"fast and the reference core" + (f"; first in random kernel {k}:\n" +
                                                                        "\n".join(bodies[k]) if k is not None else ""))
        checked.append(PARTS * KERNELS)

    example()
    assert sum(checked) == EXAMPLES * PARTS * KERNELS
