"""The SM's TMA unit (gpusim/timing/tma.py) and its mbarriers (gpusim/timing/mbarrier.py): bulk
copies queue for the SM's one unit at `tensor.tma_request_interval_cycles`, their bytes complete
the mbarrier they name when they land, and a warp waiting on an mbarrier issues when its phase
completes (synthetic SASS streams with the payloads the functional core gives; and a PTX kernel
whose warps meet at an mbarrier)."""
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import gpusim
from gpusim import specs
from gpusim.frontend.sass.listing import SassInstr
from gpusim.timing.engine import TimingStats
from gpusim.timing.sm import SM
from gpusim.timing.static import IssueProgram, sass_classifier
from gpusim.timing.tma import CopyPayload, TMAUnit
from gpusim.timing.payloads import MbarrierAccess

H100 = specs.get("h100")
LOAD = "UTMALDG.2D [UR8], [UR4]"
WAIT = "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8], R0"


class Memory:
    """The memory system below the SM: reads land `latency` cycles after they leave."""

    def __init__(self, latency=900.0):
        self.latency = latency
        self.reads = []

    def read(self, t, sm_id, sectors):
        self.reads.append(t)
        return t + self.latency

    @property
    def first_back(self):
        """When the first line of the latest read was back: every line of a read lands at once."""
        return self.reads[-1] + self.latency


def run(streams, spec=H100, memory=None):
    """(cycle the block finishes, stats, memory) for warps issuing `streams`: per warp a list of
    (SASS line, payload or None); every warp's program is the union of the lines, in order."""
    texts = [t for s in streams for t, _ in s]
    classify = sass_classifier(spec)
    statics = tuple(classify(i, SassInstr(offset=16 * i, opcode=t.partition(" ")[0], text=t, source_line=None,
                                          operands=t.partition(" ")[2]), None) for i, t in enumerate(texts))
    segments, base = [], 0
    for s in streams:
        segments.append(statics[base:base + len(s)])
        base += len(s)
    program = IssueProgram(tuple(segments), {}, {}, np.zeros(len(texts), dtype=np.int64), len(texts))
    stats = TimingStats(len(texts))
    done = []
    memory = memory or Memory()
    sm = SM(0, spec, program, SimpleNamespace(lower=memory, xbar_bytes=0), stats, lambda sm, block, t: done.append(t))
    warps, base = [], 0
    for w, s in enumerate(streams):
        mem = {base + i: p for i, (_, p) in enumerate(s) if p is not None}
        warps.append(SimpleNamespace(visits=[(w, None, mem)], warp_in_block=w, local_sectors=0, gid=w))
        base += len(s)
    sm.add_cta(0, warps, 0.0)
    sm.advance(1e9)
    assert done, "the block did not finish"
    return done[0], stats, memory, sm


def copy(n_sectors=32, mbar=None):
    return CopyPayload(np.arange(n_sectors, dtype=np.uint64), mbar)


def test_the_sm_s_tma_unit_takes_one_request_per_interval_from_all_its_warps():
    streams = [[(LOAD, copy())] for _ in range(4)]              # four warps, four sub-partitions
    _, _, mem, _ = run(streams)
    assert np.diff(sorted(mem.reads)).tolist() == [H100.tensor.tma_request_interval_cycles] * 3
    slow = dataclasses.replace(H100, tensor=dataclasses.replace(H100.tensor, tma_request_interval_cycles=50.0))
    _, _, mem, _ = run(streams, slow)
    assert np.diff(sorted(mem.reads)).tolist() == [50.0] * 3


def test_a_tma_load_completes_its_mbarrier_when_its_bytes_land():
    bar = lambda what, **kw: MbarrierAccess(what, 0, **kw)           # noqa: E731
    producer = [("SYNCS.EXCH.64 URZ, [UR8], UR4", bar("init", count=1)),
                ("SYNCS.ARRIVE.TRANS64 RZ, [UR8], R2", bar("arrive_expect_tx", count=1, tx=1024)),
                (LOAD, copy(32, bar("complete_tx", tx=1024)))]
    consumer = [(WAIT, bar("try_wait", parity=0)), ("SEL R5, R6, R7, P0", None), ("FADD R4, R4, R4", None)]
    t, stats, mem, sm = run([producer, consumer], memory=Memory(900.0))
    assert t == pytest.approx(mem.reads[0] + 900.0, abs=15)         # the consumer goes on once the copy is in
    assert stats.stall[4].sum() > 800                               # waiting: long_scoreboard
    assert sm.mbarriers.forced == 0


def test_a_wait_on_an_mbarrier_phase_already_complete_passes():
    bar = lambda what, **kw: MbarrierAccess(what, 0, **kw)           # noqa: E731
    warp = [("SYNCS.EXCH.64 URZ, [UR8], UR4", bar("init", count=1)),
            ("SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR8], RZ", bar("arrive", count=1)),
            (WAIT, bar("try_wait", parity=0)), ("SEL R5, R6, R7, P0", None)]
    t, _, _, sm = run([warp])
    assert t < 400 and sm.mbarriers.forced == 0


def test_a_block_whose_warps_all_wait_is_completed_and_counted():
    bar = lambda what, **kw: MbarrierAccess(what, 0, **kw)           # noqa: E731
    warp = [("SYNCS.EXCH.64 URZ, [UR8], UR4", bar("init", count=2)), (WAIT, bar("try_wait", parity=0)),
            ("SEL R5, R6, R7, P0", None)]
    _, _, _, sm = run([warp])
    assert sm.mbarriers.forced == 1


PTX = (Path(__file__).parent / "mbarrier_wait.ptx").read_text()


def _warps_meet(n: int):
    out = np.zeros(64, np.float32)
    return gpusim.launch(gpusim.PtxSource(PTX, "meet"), 1, 64, (out, np.uint32(n)), gpu="h100", timing=True)


def test_a_warp_waiting_on_an_mbarrier_stalls_until_the_other_warp_arrives():
    # warp 0 runs n dependent FMAs before it arrives; warp 1 waits for it: every cycle the 200 more
    # iterations add to the block (at least the FMA latency each, plus the loop's ptxas stall counts)
    # is a cycle warp 1 spends waiting on the mbarrier
    short, long = _warps_meet(200), _warps_meet(400)
    key = "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
    extra_cycles = long.metrics["sm__cycles_elapsed.max"] - short.metrics["sm__cycles_elapsed.max"]
    assert extra_cycles >= 200 * H100.sm.pipes.fmalite.latency_cycles
    assert long.metrics[key] - short.metrics[key] == pytest.approx(extra_cycles, rel=0.01)
    assert "gpusim__mbarrier_forced_completions.sum" not in long.metrics


@pytest.mark.parametrize("mbarrier_first", [False, True])
def test_a_bulk_copy_s_global_side_and_its_mbarrier_make_one_payload(mbarrier_first):
    # what the functional core's bulk copy traces (trace_access 'global', trace_mbarrier 'complete_tx'),
    # in either order, lands on its UTMALDG as one CopyPayload
    from gpusim.functional.decode import InstrInfo
    from gpusim.functional.step_record import Access
    from gpusim.timing.access_payloads import AccessPayloads
    from gpusim.timing.payloads import StepPayloads
    info = InstrInfo(0, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "async", "ldst", 0, "", 1)
    adder = AccessPayloads([info], {})
    lsu = SimpleNamespace(shared_stride=1 << 16)
    lane = np.array([0])
    accesses = [Access(0, "global", lane, np.array([4096], np.uint64)),
                Access(0, "mbarrier", lane, np.array([64], np.uint64), values=("complete_tx", [np.array([4096])]))]
    sp = StepPayloads(np.array([0]))
    for a in (accesses[::-1] if mbarrier_first else accesses):
        adder.add(a, sp, lsu, np.array([0]), 1)
    sp.finish()
    p = sp.build(0)[0]
    assert sp.counts.tolist() == [1] and sp.kinds.tolist() == [[1, 0, 0]]     # counted as issue_stream._kinds does
    assert isinstance(p, CopyPayload) and p.mbarrier == MbarrierAccess("complete_tx", 64, tx=4096)
    assert len(p.sectors) == 1


@pytest.mark.slow
def test_the_tma_wgmma_gemm_is_timed_through_its_mbarriers():
    # programs/hopper_kernels/tma_wgmma_gemm: every TMA load's bytes complete its stage's mbarrier, the
    # consumers' waits end when they land (no phase left for the model to force), and a third stage
    # hides more of the copies' latency than two
    from programs.hopper_kernels import tma_wgmma_gemm as T
    times = {}
    for stages in (2, 3):
        c = T.PROGRAM.case({**T.PROGRAM.sizes["default"], "stages": stages})
        r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", timing=True, shared_bytes=c.shared_bytes,
                          **c.options)
        c.check()
        assert "gpusim__mbarrier_forced_completions.sum" not in r.metrics
        assert r.metrics["gpusim__sass_unplaced_accesses.sum"] == 0
        assert r.metrics["smsp__pcsamp_warps_issue_stalled_gmma"] > 0
        times[stages] = r.metrics["gpu__time_duration.sum"]
    assert times[3] < times[2]


def test_a_block_left_waiting_is_completed_after_its_finished_warp_s_row_went_to_another_block():
    # block 0: warp 0 finishes at once, warp 1 waits on an mbarrier no one arrives at; before warp
    # 1 waits, block 1 arrives and its warp takes warp 0's freed row. Warp 0 must still read as
    # finished (its own final state), so the waiting block is completed, not left hanging
    bar = lambda what, **kw: MbarrierAccess(what, 0, **kw)           # noqa: E731
    texts = ["FADD R4, R4, R4", "SYNCS.EXCH.64 URZ, [UR8], UR4"] + ["FADD R4, R4, R4"] * 400 + \
        [WAIT, "SEL R5, R6, R7, P0", "FADD R9, R9, R9"]
    classify = sass_classifier(H100)
    statics = tuple(classify(i, SassInstr(offset=16 * i, opcode=t.partition(" ")[0], text=t, source_line=None,
                                          operands=t.partition(" ")[2]), None) for i, t in enumerate(texts))
    program = IssueProgram((statics[:1], statics[1:-1], statics[-1:]), {}, {}, np.zeros(len(texts), dtype=np.int64),
                           len(texts))
    done = []
    sm = SM(0, H100, program, SimpleNamespace(lower=Memory(), xbar_bytes=0), TimingStats(len(texts)),
            lambda sm, block, t: done.append(block))
    wait_at = len(texts) - 3
    block0 = [SimpleNamespace(visits=[(0, None, {})], warp_in_block=0, local_sectors=0, gid=0),
              SimpleNamespace(visits=[(1, None, {1: bar("init", count=2), wait_at: bar("try_wait", parity=0)})],
                              warp_in_block=1, local_sectors=0, gid=1)]
    sm.add_cta(0, block0, 0.0)
    first = sm.residency.ctas[0].warps[0]
    t = 0.0
    while first.vi < 1:                                              # until warp 0 is done
        t += 64.0
        sm.advance(t)
    assert not sm.mbarriers.bars[(0, 0)].waiters                     # warp 1 is still in its FADDs
    block1 = [SimpleNamespace(visits=[(2, None, {})] * 50, warp_in_block=0, local_sectors=0, gid=2)]
    sm.add_cta(1, block1, t)
    assert first.vi == 1                                             # not its row's new warp's
    sm.advance(1e9)
    assert done == [1, 0] or done == [0, 1]
    assert sm.mbarriers.forced == 1


def test_a_block_whose_last_running_warp_stops_at_its_barrier_behind_an_mbarrier_wait_is_completed():
    # warp 0 waits on an mbarrier no one arrives at (as a TMA producer does when loop sampling left
    # out its consumers' arrivals); warp 1 works on, then stops at the block's barrier: from then on
    # nothing can complete the phase, so it is completed then, and the block finishes
    bar = lambda what, **kw: MbarrierAccess(what, 0, **kw)           # noqa: E731
    sync = "BAR.SYNC.DEFER_BLOCKING 0x0"
    producer = [("SYNCS.EXCH.64 URZ, [UR8], UR4", bar("init", count=2)), (WAIT, bar("try_wait", parity=0)),
                ("SEL R5, R6, R7, P0", None), (sync, None)]
    consumer = [("FADD R4, R4, R4", None)] * 200 + [(sync, None), ("FADD R9, R9, R9", None)]
    end, _, _, sm = run([producer, consumer])
    assert sm.mbarriers.forced == 1
    assert end < 10_000


def test_a_copy_fills_shared_memory_only_from_when_its_first_line_is_back():
    """A load served by DRAM (its lines back 900 cycles after it left) writes shared memory at the
    fill rate from then on: 16 KB end 16384 / rate cycles after the data arrived, not in the
    shadow of the DRAM latency (an L2 hit's latency after the unit took it)."""
    unit = TMAUnit(H100, 0, Memory(latency=900.0))
    done = unit.copy(0.0, np.arange(512, dtype=np.int64))
    assert done == pytest.approx(900.0 + 16384 / H100.tensor.tma_fill_bytes_per_cycle)
