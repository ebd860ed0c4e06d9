"""The SM's residency unit (gpusim/timing/residency.py) on its own: block slots, warp
placement, CTA barriers, block completion and the residency integrals. One property per test."""
from types import SimpleNamespace

import numpy as np

from gpusim.timing import issue_loop as L
from gpusim.timing.residency import Residency

SPEC = SimpleNamespace(sub_partitions=4, max_warps_per_sm=64, barrier_latency_cycles=20.0, barrier_arrival_cycles=2.0)


def _stream(warp_in_block, visits=1, local_sectors=0, gid=0):
    return SimpleNamespace(visits=[(0, None, None)] * visits, warp_in_block=warp_in_block,
                           local_sectors=local_sectors, gid=gid)


def _admit(r, block, nwarps, t0=0.0, **kw):
    """Admit a block and give its warps rows of their own (what SM._seat does), each at visit 0."""
    cta = r.admit(block, [_stream(i, **kw) for i in range(nwarps)], t0)
    for w in cta.warps:
        w.f, w.i = np.zeros(L.WF_COLS), np.zeros(L.WI_COLS, np.int64)
    return cta


def test_warps_go_to_sub_partitions_by_warp_index_in_age_order():
    r = Residency(0, SPEC)
    cta = _admit(r, 7, 6)
    assert [(w.sp, w.slot, w.age) for w in cta.warps] == [(0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 0, 3),
                                                           (0, 1, 4), (1, 1, 5)]


def test_a_block_takes_the_lowest_slot_a_finished_block_freed():
    r = Residency(0, SPEC)
    a, b, c = (_admit(r, blk, 1) for blk in (0, 1, 2))
    r.remove(c, 5.0)
    r.remove(a, 5.0)
    assert [_admit(r, blk, 1).slot for blk in (3, 4, 5)] == [0, 2, 3]


def test_local_frames_are_the_slots_of_this_sm():
    # SM 2, block slot 1 of 4-warp blocks: warp 3's frame is 2*64 + 1*4 + 3 = 135; its stream's is gid 9
    r = Residency(2, SPEC)
    _admit(r, 0, 4)
    cta = r.admit(1, [_stream(i, local_sectors=8, gid=6 + i) for i in range(4)], 0.0)
    assert int(cta.warps[3].local_delta) == (135 - 9) * 8


def test_the_barrier_completes_with_the_last_live_warp():
    r = Residency(0, SPEC)
    cta = _admit(r, 0, 3)
    assert [r.arrive(w, 0.0) for w in cta.warps] == [False, False, True]


def test_a_finished_warp_no_longer_counts_towards_the_barrier():
    r = Residency(0, SPEC)
    w0, w1, w2 = _admit(r, 0, 3).warps
    assert not r.arrive(w0, 0.0) and not r.arrive(w1, 0.0)
    assert r.leave(w2) and w2.cta.live == 2


def test_a_release_lets_the_waiting_warps_go_after_the_barrier_latency():
    r = Residency(0, SPEC)
    cta = _admit(r, 0, 2)
    for w in cta.warps:
        r.arrive(w, 0.0)
    cta.warps[1].i[L.W_V] = 1                    # past its only visit: done, nothing to prepare
    go = r.release(cta, 100.0)
    assert go == [cta.warps[0]] and cta.waiting == []
    assert [(w.at_barrier, w.ready_at, w.reason) for w in cta.warps] == [(False, 120.0, "barrier")] * 2


def test_the_barrier_unit_takes_one_arrival_at_a_time_across_blocks():
    # two blocks of 2 warps arrive together at 100: the unit takes the 4 arrivals every 2 cycles,
    # so the second block's barrier completes when its last arrival is taken (108), + latency 20
    r = Residency(0, SPEC)
    a, b = _admit(r, 0, 2), _admit(r, 1, 2)
    for w in a.warps + b.warps:
        r.arrive(w, 100.0)
    assert SPEC.barrier_arrival_cycles == 2.0
    assert r.release(a, 100.0) and a.warps[0].ready_at == 124.0
    r.release(b, 100.0)
    assert b.warps[0].ready_at == 128.0


def test_residency_integrals_count_resident_warps_over_time():
    r = Residency(0, SPEC)
    a = _admit(r, 0, 4, t0=10.0)                 # 4 warps over 10..30, then 2 more over 30..50
    b = _admit(r, 1, 2, t0=30.0)
    r.remove(a, 50.0)
    r.remove(b, 60.0)                            # 2 warps over 50..60
    assert (r.warp_cycles, r.active_cycles, r.has_work()) == (4 * 20 + 6 * 20 + 2 * 10, 50.0, False)
