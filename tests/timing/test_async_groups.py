"""A warp's group scoreboards (gpusim/timing/async_groups.py) in the SM's issue loop: wgmma
groups (HGMMA ... gsb0, WARPGROUP.DEPBAR) and cp.async groups (LDGSTS, LDGDEPBAR, DEPBAR.LE
SB0), on synthetic SASS streams through one SM whose L1 answers copies after a set time."""
import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from gpusim import specs
from gpusim.frontend.sass.listing import SassInstr
from gpusim.timing import async_groups, tensor_pipe
from gpusim.timing.engine import TimingStats
from gpusim.timing.sm import SM
from gpusim.timing.static import IssueProgram, sass_classifier

H100 = specs.get("h100")
FILL = H100.tensor.cp_async_fill_cycles                     # a copy's bytes reach shared memory this long after its sectors
GMMA = "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24"          # 64 cycles a warp at the H100's 4096 FLOP/cycle/SM


def _instr(i: int, text: str) -> SassInstr:
    opcode, _, operands = text.partition(" ")
    return SassInstr(offset=16 * i, opcode=opcode, text=text, source_line=None, operands=operands.strip())


class CopyL1:
    """An L1 whose copies (LDGSTS) land `latencies[k]` cycles after the k-th is issued."""

    xbar_bytes = 0                      # what the SM reads around each access (a block's L2 traffic): none here

    def __init__(self, latencies):
        self.latencies = list(latencies)
        self.issued = []

    def copy_in(self, t, sectors, allocate):
        self.issued.append((t, allocate))
        return t + self.latencies[len(self.issued) - 1]


def run(texts, spec=H100, l1=None) -> float:
    """Cycle at which one warp has issued `texts`; LDGSTS lines get a one-sector payload."""
    classify = sass_classifier(spec)
    statics = tuple(classify(i, _instr(i, t), None) for i, t in enumerate(texts))
    program = IssueProgram((statics,), {0: 0}, {}, np.zeros(len(texts), dtype=np.int64), len(texts))
    stats = TimingStats(len(texts))
    done = []
    sm = SM(0, spec, program, l1, stats, lambda sm, block, t: done.append(t))
    mem = {i: np.array([i], np.uint64) for i, t in enumerate(texts) if t.startswith("LDGSTS")}
    sm.add_cta(0, [SimpleNamespace(visits=[(0, None, mem)], warp_in_block=0, local_sectors=0, gid=0)], 0.0)
    sm.advance(1e9)
    assert done, "the warp did not finish"
    return done[0], stats


def with_tensor(spec=H100, **kw):
    return dataclasses.replace(spec, tensor=dataclasses.replace(spec.tensor, **kw))


def test_the_sass_roles_are_read_as_ptxas_writes_them():
    role = lambda t: async_groups.role(_instr(0, t))              # noqa: E731
    assert role(GMMA) == (async_groups.WGMMA, -1, -1, 0)
    assert role(GMMA + ", gsb0") == (async_groups.WGMMA, async_groups.WGMMA, -1, 0)
    assert role("WARPGROUP.DEPBAR.LE gsb0, 0x1") == (-1, -1, async_groups.WGMMA, 1)
    assert role("WARPGROUP.ARRIVE") == (-1, -1, -1, 0)
    assert role("LDGSTS.E.BYPASS.128 [R7], desc[UR8][R2.64]") == (async_groups.LDGSTS, -1, -1, 0)
    assert role("LDGDEPBAR") == (-1, async_groups.LDGSTS, -1, 0)
    assert role("DEPBAR.LE SB0, 0x2") == (-1, -1, async_groups.LDGSTS, 2)
    assert role("DEPBAR.LE SB1, 0x0") == (-1, -1, -1, 0)       # another scoreboard: not a copy group


def test_wgmmas_chained_on_one_accumulator_issue_at_the_tensor_pipe_s_rate():
    # 32 HGMMA 64x128x16 into R24: 64 cycles apart, not the 120-cycle latency each
    t16, _ = run([GMMA] * 16)
    t32, _ = run([GMMA] * 32)
    assert (t32 - t16) / 16 == pytest.approx(64.0, abs=0.5)


def test_wait_group_0_waits_for_the_last_wgmma_of_the_group():
    # four chained: issued at 0, 64, 128, 192; the last done its latency (120.4, whole cycles: 121) later
    group = [GMMA] * 3 + [GMMA + ", gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "FADD R200, R24, R25"]
    t, stats = run(group)
    t_free, _ = run(group[:4] + group[5:])                     # the consumer without the wait
    latency = math.ceil(H100.tensor.wgmma_latency_cycles)
    assert t - t_free == pytest.approx(3 * 64 + latency - 3 * 64, abs=2)
    assert stats.stall[-1].sum() == pytest.approx(latency, abs=2)   # the wait counts as Nsight's `gmma`


def test_wait_group_1_leaves_the_newest_group_in_flight():
    first = [GMMA + ", gsb0"]
    second = ["HGMMA.64x128x16.F32 R88, gdesc[UR4], R88, gsb0"]
    tail = ["FADD R200, R24, R25"]
    t1, _ = run(first + second + ["WARPGROUP.DEPBAR.LE gsb0, 0x1"] + tail)
    t0, _ = run(first + second + ["WARPGROUP.DEPBAR.LE gsb0, 0x0"] + tail)
    assert t0 - t1 == pytest.approx(64.0, abs=2)     # the second completes one issue interval after the first


def test_wgmma_latency_field_moves_the_group_s_completion():
    group = [GMMA + ", gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "FADD R200, R24, R25"]
    base, _ = run(group)
    late, _ = run(group, with_tensor(wgmma_latency_cycles=400.0))
    assert late - base == pytest.approx(400.0 - H100.tensor.wgmma_latency_cycles, abs=2)


def test_wgmma_operands_from_shared_memory_hold_the_shared_path():
    # A and B through descriptors: (64x16 + 128x16) x 2 B / 4 = 1536 B a warp; at 8 B/cycle that is
    # 192 cycles on the SM's shared path, longer than the 64-cycle issue interval: the group ends later
    op = "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24, gsb0"
    assert tensor_pipe.shared_operand_cycles(_instr(0, op), H100.tensor) == pytest.approx(12.0)
    group = [op, "WARPGROUP.DEPBAR.LE gsb0, 0x0", "FADD R200, R24, R25"]
    base, _ = run(group)
    narrow = with_tensor(shared_operand_bytes_per_cycle_per_sm=8.0)
    slow, _ = run(group, narrow)
    interval = tensor_pipe.timing(_instr(0, op), narrow.tensor, 4, 4.0)[0]
    assert interval == pytest.approx(768.0)          # the issue interval: 1536 B at 2 B/cycle per SMSP
    assert slow - base == pytest.approx(interval - 64.0, abs=2)


def test_an_ldgsts_writes_no_register_so_the_next_instruction_does_not_wait():
    ops = ["LDGSTS.E.BYPASS.128 [R7], desc[UR8][R2.64]", "IADD3 R9, R9, 0x1, RZ", "IADD3 R9, R9, 0x1, RZ"]
    l1 = CopyL1([700])
    t, _ = run(ops, l1=l1)
    assert t - l1.issued[0][0] < 30


def test_depbar_waits_for_the_committed_copies_to_land():
    ops = ["LDGSTS.E.BYPASS.128 [R7], desc[UR8][R2.64]", "LDGDEPBAR", "DEPBAR.LE SB0, 0x0", "LDS R4, [R7]"]
    l1 = CopyL1([700])
    t, stats = run(ops, l1=l1)
    assert t - l1.issued[0][0] == pytest.approx(700 + FILL, abs=30)    # the LDS issues once the copy is in
    assert l1.issued[0][1] is False                   # .BYPASS: not allocated in the L1
    assert stats.stall[4].sum() >= 690 + FILL               # long_scoreboard: the wait for an L1TEX operation


def test_depbar_le_1_leaves_the_newest_copy_group_in_flight():
    copy = "LDGSTS.E.BYPASS.128 [R7], desc[UR8][R2.64]"
    ops = lambda n: [copy, "LDGDEPBAR", copy, "LDGDEPBAR", f"DEPBAR.LE SB0, {n}", "LDS R4, [R7]"]  # noqa: E731
    first, second = CopyL1([300, 900]), CopyL1([300, 900])
    t1, _ = run(ops("0x1"), l1=first)
    t0, _ = run(ops("0x0"), l1=second)
    assert t1 - first.issued[0][0] == pytest.approx(300 + FILL, abs=30)
    assert t0 - second.issued[1][0] == pytest.approx(900 + FILL, abs=30)


def test_copy_groups_complete_in_order():
    # the second group's copy lands first; waiting for the first still waits for the first
    copy = "LDGSTS.E.BYPASS.128 [R7], desc[UR8][R2.64]"
    ops = [copy, "LDGDEPBAR", copy, "LDGDEPBAR", "DEPBAR.LE SB0, 0x0", "LDS R4, [R7]"]
    l1 = CopyL1([900, 100])
    t, _ = run(ops, l1=l1)
    assert t - l1.issued[0][0] == pytest.approx(900 + FILL, abs=30)
