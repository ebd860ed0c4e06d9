"""An mbarrier wait the SASS walk issues before its barrier's `init` still ends with the init's
first phase (gpusim/timing/mbarrier.py): ptxas 13.0 lays out programs/hopper_kernels/tma_wgmma_gemm
with three stages so that the CTA barrier after the init maps to the block before it, the other
warps wait first, and an init that dropped their waits left the launch running forever. And a
timing model with no warp able to issue again raises a `TimingDeadlock`, never loops."""
from types import SimpleNamespace

import pytest

import gpusim
from gpusim.errors import TimingDeadlock
from gpusim.timing.mbarrier import INF, MbarrierUnit
from gpusim.timing.payloads import MbarrierAccess


def _warp(cta):
    w = SimpleNamespace(cta=cta, vi=0, stream=SimpleNamespace(visits=[None]), at_barrier=False)
    cta.warps.append(w)
    return w


def test_a_wait_issued_before_the_init_ends_with_the_first_phase():
    released = []
    unit = MbarrierUnit(lambda w, slots, t: released.append((w, t)))
    cta = SimpleNamespace(block=0, warps=[], live=2)
    producer, consumer = _warp(cta), _warp(cta)
    wait = SimpleNamespace(dsts=(320,))
    assert unit.op(consumer, wait, 10.0, MbarrierAccess("try_wait", 0, parity=0), 2.0) == INF
    unit.op(producer, wait, 20.0, MbarrierAccess("init", 0, count=1), 2.0)
    unit.op(producer, wait, 30.0, MbarrierAccess("arrive_expect_tx", 0, count=1, tx=256), 2.0)
    unit.complete_tx(producer, MbarrierAccess("complete_tx", 0, tx=256), 500.0)
    assert released == [(consumer, 500.0)] and unit.forced == 0


def test_the_three_stage_tma_gemm_finishes_and_hides_more_than_two():
    from programs.hopper_kernels import tma_wgmma_gemm as T
    times = {}
    for stages in (2, 3):
        c = T.PROGRAM.case({**T.PROGRAM.sizes["default"], "stages": stages})
        r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", timing=True, shared_bytes=c.shared_bytes,
                          outputs=False, **c.options)
        assert "gpusim__mbarrier_forced_completions.sum" not in r.metrics
        times[stages] = r.metrics["gpu__time_duration.sum"]
    assert times[3] < times[2]


def test_no_warp_able_to_issue_is_an_error_not_a_hang(monkeypatch):
    """An SM whose resident warps can none of them issue again (here: made so) stops the launch
    with a TimingDeadlock naming the SM, where the block scheduler used to step it forever."""
    from gpusim.timing import sm as sm_module
    from programs import saxpy
    monkeypatch.setattr(sm_module.SM, "advance", lambda self, until: None)
    monkeypatch.setattr(sm_module.SM, "next_time", lambda self: INF)
    c = saxpy.PROGRAM.case("default")
    with pytest.raises(TimingDeadlock, match=r"^kernel saxpy: .*no resident warp can issue again .*block \d+ at SASS "
                                             r"instruction"):
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", timing=True, outputs=False, **c.options)
