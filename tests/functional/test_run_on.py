"""A batch whose every warp runs each step together runs on from block to block in one `execute`
(executor.py's run-on: `stack_kernels.same_top`, a CTA barrier every live lane reaches completing as
they arrive, `barrier_kernels.arrive_all`): the same results, counters and steps as the scheduler
picking each step; a warp that leaves the group (threads that exit, a divergent branch) hands the
batch back to the scheduler."""
import numpy as np
import pytest

from gpusim.functional import barrier_kernels, stack_kernels
from ptx_harness import metrics, run_ptx

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"
# a loop of 3 trips around a barrier, each trip reading a neighbour's value from shared memory;
# threads >= %plive leave before the loop (none when it is the block size)
LOOP = HEAD + """.visible .entry ro(.param .u64 pout, .param .u32 plive)
{
.reg .pred %p, %q;
.reg .b32 %tx, %a, %i, %n, %live, %s, %nb, %base, %c;
.reg .b64 %d, %o;
.shared .align 4 .b32 buf[128];
ld.param.u64 %d, [pout];
ld.param.u32 %live, [plive];
mov.u32 %tx, %tid.x;
mov.u32 %nb, %ntid.x;
mov.u32 %base, buf;
setp.ge.u32 %q, %tx, %live;
@%q bra $L__done;
add.u32 %a, %tx, 1;
mov.u32 %i, 0;
$L__loop:
shl.b32 %s, %tx, 2;
add.u32 %s, %base, %s;
st.shared.u32 [%s], %a;
bar.sync 0;
add.u32 %n, %tx, 1;
rem.u32 %n, %n, %live;
shl.b32 %s, %n, 2;
add.u32 %s, %base, %s;
ld.shared.u32 %n, [%s];
bar.sync 0;
add.u32 %a, %a, %n;
add.u32 %i, %i, 1;
setp.lt.u32 %p, %i, 3;
@%p bra $L__loop;
mov.u32 %c, %ctaid.x;
mad.lo.u32 %c, %c, %nb, %tx;
mul.wide.u32 %o, %c, 4; add.s64 %d, %d, %o;
st.global.u32 [%d], %a;
$L__done:
ret;
}
"""


def _want(live: int, threads: int) -> np.ndarray:
    a = np.arange(threads, dtype=np.int64) + 1
    out = np.zeros(threads, np.int64)
    v = a[:live].copy()
    for _ in range(3):
        v = v + np.roll(v, -1)
    out[:live] = v
    return out.astype(np.uint32)


def _run(monkeypatch, live: int, grid=(1, 1, 1), on: bool = True):
    """(output, metrics, steps, `execute` calls) of LOOP on blocks of 128 threads."""
    from gpusim.functional import executor  # here: the executor spied on
    calls = []
    execute = executor.BatchExecutor.execute
    monkeypatch.setattr(executor.BatchExecutor, "execute", lambda self, b, g: calls.append(b) or execute(self, b, g))
    if not on:
        monkeypatch.setattr(stack_kernels, "same_top", lambda *a: -1)
        monkeypatch.setattr(barrier_kernels, "arrive_all", lambda *a: False)
    n = 128 * grid[0]
    (out,), x = run_ptx(LOOP, "ro", grid, (128, 1, 1), [np.zeros(n, np.uint32), np.uint32(live)], core="fast")
    monkeypatch.undo()
    return out, metrics(x), x.steps, len(calls)


@pytest.mark.parametrize("grid", [(1, 1, 1), (3, 1, 1)])
def test_every_thread_in_step_runs_on_through_barriers_and_the_loop_in_one_execute(monkeypatch, grid):
    out, m, steps, calls = _run(monkeypatch, 128, grid)
    out0, m0, steps0, calls0 = _run(monkeypatch, 128, grid, on=False)
    assert out.tolist() == out0.tolist() == np.tile(_want(128, 128), grid[0]).tolist()
    assert m == m0 and steps == steps0
    assert (calls, calls0) == (1, steps0)


def test_threads_that_leave_first_hand_the_batch_back_to_the_scheduler(monkeypatch):
    out, m, steps, calls = _run(monkeypatch, 40)            # warps 1 and 2 part-live, warp 3 gone
    out0, m0, steps0, calls0 = _run(monkeypatch, 40, on=False)
    assert out.tolist() == out0.tolist() == _want(40, 128).tolist()
    assert m == m0 and steps == steps0 and calls == calls0 > 1
