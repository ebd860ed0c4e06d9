"""Blocks that only their predecessor falls into run with it in one step (decode.chains): the same
results, counters and step budget as block by block, in fewer steps."""
import numpy as np
import pytest

from gpusim.errors import StepBudgetExceeded
from gpusim.functional import decode
from ptx_harness import metrics, run_ptx

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"
# four blocks in a row, split by labels nothing branches to (as Triton's debug labels split its PTX),
# then a loop whose header two blocks lead to (not chained) and a block after it
CHAINED = HEAD + """.visible .entry ch_k(.param .u64 pout)
{
.reg .pred %p;
.reg .b32 %tx, %a, %i;
.reg .b64 %d, %o;
ld.param.u64 %d, [pout];
mov.u32 %tx, %tid.x;
$L__tmp0:
add.u32 %a, %tx, 1;
$L__tmp1:
mul.lo.u32 %a, %a, 3;
$L__tmp2:
mov.u32 %i, 0;
$L__loop:
add.u32 %a, %a, %i;
add.u32 %i, %i, 1;
setp.lt.u32 %p, %i, 4;
@%p bra $L__loop;
mul.wide.u32 %o, %tx, 4; add.s64 %d, %d, %o;
st.global.u32 [%d], %a;
ret;
}
"""


def test_a_row_of_fallthrough_blocks_is_one_chain_and_the_loop_header_is_not_in_it():
    from isa.parser import parse  # here: the chains of a parsed kernel's blocks
    from gpusim.functional.fastpath import factory  # here: as above
    from gpusim.functional.memory import DeviceMemory  # here: as above
    from gpusim.variable_layout import layout  # here: as above
    prog = parse(CHAINED)
    k = prog.kernel("ch_k")
    dk = decode.Decoder(k, layout(prog, k, DeviceMemory()).symbols, factory("fast")).decode()
    assert {b.index: b.chain for b in dk.blocks if b.chain} == {0: (1, 2, 3)}


def _run(core, monkeypatch, chained: bool, budget: int | None = None):
    """(output, metrics, steps counted, blocks or chains run: `_block` calls) of CHAINED on 64 threads."""
    from gpusim.functional import executor  # here: the executor spied on
    calls = []
    block, init = executor.BatchExecutor._block, executor.BatchExecutor.__init__

    def spy_init(self, *a, **k):
        init(self, *a, **k)
        self.step_budget = budget
    monkeypatch.setattr(executor.BatchExecutor, "_block", lambda self, b, *a: calls.append(b) or block(self, b, *a))
    monkeypatch.setattr(executor.BatchExecutor, "__init__", spy_init)
    if not chained:
        monkeypatch.setattr(decode, "chains", lambda cfg, blocks: {})
    (out,), x = run_ptx(CHAINED, "ch_k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)], core=core)
    monkeypatch.undo()
    return out, metrics(x), x.steps, len(calls)


@pytest.mark.parametrize("core", ["fast", "reference"])
def test_a_chain_gives_the_block_by_block_results_and_counters_in_fewer_steps(core, monkeypatch):
    out, m, steps, calls = _run(core, monkeypatch, True)
    out1, m1, steps1, calls1 = _run(core, monkeypatch, False)
    t = np.arange(64)
    assert out.tolist() == ((t + 1) * 3 + 6).tolist() == out1.tolist()
    assert m == m1
    assert (steps, steps1) == (9, 9) and (calls, calls1) == (6, 9)     # blocks 0-3 in one call, 4 loop steps, 1 after


def test_the_step_budget_counts_each_block_of_a_chain(monkeypatch):
    with pytest.raises(StepBudgetExceeded):
        _run("fast", monkeypatch, True, budget=3)                       # the chain alone is 4 blocks
