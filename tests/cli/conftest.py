"""A hand-built `Result` for the report tests: a small kernel source file on disk and
one PTX instruction per source line with chosen counters, so every number in the
rendered view is known in advance."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpusim.functional.counters import FIELDS, metric_values
from gpusim.result import Result

SOURCE = '''\
from numba import cuda, float32


@cuda.jit
def demo(x, out):
    i = cuda.grid(1)
    tile = cuda.shared.array((32, 32), float32)
    if i % 2 == 0:
        out[i] = x[i]
    # a comment line: no instructions
    tile[cuda.threadIdx.x, 0] = x[i]
    v = tile[cuda.threadIdx.x, 0]
    out[i * 32] = v
'''

# line -> counters of its one instruction. 64 warps (2 blocks x 1024 threads).
WARPS = 64
LINES = {
    5: {"inst": WARPS, "thread_inst": 32 * WARPS},                         # def (param loads)
    6: {"inst": 3 * WARPS, "thread_inst": 3 * 32 * WARPS},
    8: {"inst": WARPS, "thread_inst": 32 * WARPS},
    9: {"inst": WARPS, "thread_inst": 16 * WARPS,                         # half the lanes: 50%
        "global_ld_requests": WARPS, "global_ld_sectors": 4 * WARPS},
    11: {"inst": 2 * WARPS, "thread_inst": 2 * 32 * WARPS,                # 32-way conflicted store
         "global_ld_requests": WARPS, "global_ld_sectors": 4 * WARPS,
         "shared_st_requests": WARPS, "shared_st_wavefronts": 32 * WARPS},
    12: {"inst": WARPS, "thread_inst": 32 * WARPS,                        # 32-way conflicted load
         "shared_ld_requests": WARPS, "shared_ld_wavefronts": 32 * WARPS},
    13: {"inst": WARPS, "thread_inst": 32 * WARPS,                        # 32 sectors / request
         "global_st_requests": WARPS, "global_st_sectors": 32 * WARPS},
}


def make_result(tmp_path, lines=LINES, source=SOURCE, metrics_extra=None, block=(1024, 1, 1)) -> Result:
    path = tmp_path / "demo_kernel.py"
    path.write_text(source)
    order = sorted(lines)
    table = {f: np.zeros(len(order), np.int64) for f in FIELDS}
    infos = []
    for idx, ln in enumerate(order):
        for k, v in lines[ln].items():
            table[k][idx] = v
        is_mem = any(k.startswith(("global", "shared")) for k in lines[ln])
        infos.append(SimpleNamespace(index=idx, line=ln, file=str(path), ptx_line=idx + 1, mnemonic="op",
                                     unit="alu", space="global" if is_mem else None,
                                     access_bytes=4 if is_mem else 0))
    metrics = metric_values(table)
    metrics.update(metrics_extra or {})
    return Result(kernel="demo", gpu="h100", grid=(2, 1, 1), block=block, shared_bytes=0, metrics=metrics,
                  source_file=str(path), table=table, infos=infos)


@pytest.fixture
def demo_result(tmp_path):
    return make_result(tmp_path)


@pytest.fixture
def result_factory(tmp_path):
    return lambda **kw: make_result(tmp_path, **kw)


@pytest.fixture
def fake_launch(monkeypatch, tmp_path):
    """Replace gpusim.launch (`gpusim.api.launch`, which the command calls) by a stub returning
    the demo Result; `calls` records (kernel, grid, block, args, kwargs) of every launch."""
    import gpusim
    calls = []

    def launch(kernel, grid, block, args, gpu="h100", timing=False, shared_bytes=0, timing_options=None, **kw):
        calls.append((kernel, grid, block, args, {"gpu": gpu, "timing": timing, "shared_bytes": shared_bytes,
                                                  "timing_options": timing_options}))
        r = make_result(tmp_path)
        r.gpu = getattr(gpu, "name", gpu)
        return r

    monkeypatch.setattr(gpusim.api, "launch", launch)
    return calls
