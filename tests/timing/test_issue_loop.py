"""The compiled issue loop (gpusim/timing/issue_loop.py) follows the model sm.py and
policies.py document: one property per test."""
import dataclasses

import numpy as np
import pytest
from numba import cuda

import gpusim
import programs
from gpusim import specs
from gpusim.errors import ConfigError
from gpusim.timing import policies
from gpusim.timing.engine import TimingOptions
from gpusim.timing.record import TraceWindow


def fma_chain(out, a, b):
    x = out[cuda.grid(1)]
    for _ in range(32):
        x = x * a + b
    out[cuda.grid(1)] = x


def test_a_dependent_fixed_latency_instruction_issues_exactly_the_pipe_latency_after_its_producer():
    h100 = specs.get("h100")
    out = np.ones(32, np.float32)
    r = gpusim.launch(fma_chain, 1, 32, (out, np.float32(1.0001), np.float32(0.5)), gpu=h100, timing=True,
                      timing_options=TimingOptions(mode="full", record=TraceWindow(sms=(0,))))
    rec = r.extra["recording"]
    ffma = [e[3] for e in rec.issues if rec.opcodes[e[4]] == "FFMA"]   # the unrolled chain x = x * a + b
    assert len(ffma) == 32
    assert set(np.diff(ffma).tolist()) == {float(h100.sm.pipes.fmaheavy.latency_cycles)}


def _metrics(name, size, gpu):
    c = programs.get(name).case(size)
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=gpu, timing=True, shared_bytes=c.shared_bytes)
    return {k: v for k, v in r.metrics.items()}, r.table


@pytest.mark.parametrize("policy, reference", [("gto", policies.greedy_then_oldest), ("oldest", policies.oldest_first)])
def test_the_compiled_schedulers_pick_as_the_policy_functions_do(monkeypatch, policy, reference):
    # the loop runs gto and oldest itself; under another name the same function is called from
    # Python for every choice among several ready warps: every metric and stall table agrees
    monkeypatch.setitem(policies.POLICIES, "python-" + policy, reference)
    h100 = specs.get("h100")
    compiled = dataclasses.replace(h100, sm=dataclasses.replace(h100.sm, warp_scheduler=policy))
    python = dataclasses.replace(h100, sm=dataclasses.replace(h100.sm, warp_scheduler="python-" + policy))
    for name in ("transpose_shared", "reduce_sequential"):
        m1, t1 = _metrics(name, "small", compiled)
        m2, t2 = _metrics(name, "small", python)
        assert m1 == m2
        for k in t1:
            assert np.array_equal(np.asarray(t1[k]), np.asarray(t2[k])), k


def _fma_chain_launch(spec):
    out = np.ones(32, np.float32)
    r = gpusim.launch(fma_chain, 1, 32, (out, np.float32(1.0001), np.float32(0.5)), gpu=spec, timing=True,
                      timing_options=TimingOptions(mode="full"))
    m = r.metrics
    stalled = {k: v for k, v in m.items() if k.startswith("smsp__pcsamp_warps_issue_stalled_")
               and not k.endswith("not_issued")}
    return m["sm__cycles_elapsed.max"], m["smsp__pcsamp_warps_issue_stalled_wait"] / sum(stalled.values())


def test_ptxas_stall_counts_hold_the_warp_where_the_latency_table_needs_less():
    # a hypothetical 1-cycle FMA: the table would issue the chain's FFMAs a cycle apart, but ptxas
    # spaced them by stall counts for the real 4 cycles, and the warp waits them ('wait')
    h100 = specs.get("h100")
    p = h100.sm.pipes
    fast = dataclasses.replace(h100, sm=dataclasses.replace(h100.sm, pipes=dataclasses.replace(
        p, fmaheavy=dataclasses.replace(p.fmaheavy, latency_cycles=1),
        fmalite=dataclasses.replace(p.fmalite, latency_cycles=1))))
    table_only = dataclasses.replace(fast, sm=dataclasses.replace(fast.sm, stall_counts_from_compiler=False))
    (held, wait_held), (free, wait_free) = _fma_chain_launch(fast), _fma_chain_launch(table_only)
    assert held > free + 32 * 2                 # 32 dependent FFMAs, each at least 2 cycles later
    assert wait_held > 4 * wait_free            # 6% of the warp's stalled cycles against 0.3% (the load dominates)


def test_stall_counts_from_compiler_is_refused_unless_true_or_false():
    h100 = specs.get("h100")
    with pytest.raises(ConfigError, match="stall_counts_from_compiler"):
        dataclasses.replace(h100.sm, stall_counts_from_compiler=1)
