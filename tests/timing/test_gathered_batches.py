"""Sampled timing executes the timed runs of blocks from across the grid together (functional_streams.py's
`gather`) where a block's streams do not depend on its batch: one property per test."""
import dataclasses

import programs
from gpusim import specs
from gpusim.api import launch, prepare
from gpusim.functional.prepared import PreparedLaunch
from gpusim.timing import engine as engine_module
from gpusim.timing import functional_streams
from gpusim.timing.engine import TimingOptions

GPU = dataclasses.replace(specs.get("h200"), sm_count=16)
OPTS = TimingOptions(mode="sampled", functional="sampled", sample_sms=2)


def _timed(name, size, monkeypatch, gather=True):
    batches = []
    real = PreparedLaunch.batch

    def counting(self, first, n, **kw):
        batches.append(n)
        return real(self, first, n, **kw)
    monkeypatch.setattr(PreparedLaunch, "batch", counting)
    if not gather:
        monkeypatch.setattr(engine_module, "batch_independent", lambda p: False)
    c = programs.get(name).case(size)
    r = launch(c.kernel, c.grid, c.block, c.args, gpu=GPU, shared_bytes=c.shared_bytes, timing=True,
               timing_options=OPTS)
    monkeypatch.undo()
    return r.metrics, batches


def test_gathered_runs_predict_exactly_what_run_by_run_execution_predicts(monkeypatch):
    gathered, few = _timed("matmul_tiled", "medium", monkeypatch)
    apart, many = _timed("matmul_tiled", "medium", monkeypatch, gather=False)
    assert {k: repr(v) for k, v in gathered.items()} == {k: repr(v) for k, v in apart.items()}
    assert sum(few) == sum(many) == gathered["timing__blocks_simulated"]
    assert len(few) < len(many)


def test_a_kernel_with_global_atomics_is_not_gathered():
    c = programs.get("histogram_global").case("default")
    assert not functional_streams.batch_independent(prepare(c.kernel, c.grid, c.block, c.args, GPU))
    c = programs.get("matmul_tiled").case("default")
    assert functional_streams.batch_independent(prepare(c.kernel, c.grid, c.block, c.args, GPU))
