"""A step's payloads kept per access (gpusim/timing/payloads.py): one property per test."""
import pickle

import numpy as np

import programs
from gpusim.api import prepare
from gpusim.timing.functional_streams import TraceSource
from gpusim.timing.payloads import ATOMIC, LOAD, STORE, LazyMem, StepPayloads, owned_sectors


def _step():
    """Warps 3, 5, 8 of a step: instruction 7 a shared access of warps 3 and 8, then (a
    generic load's global part) sectors of warps 5 and 8; instruction 9 a store of warp 5."""
    sp = StepPayloads(np.array([3, 5, 8]))
    sp.wavefronts(7, np.array([3, 8]), np.array([2, 1]))
    sp.sectors(LOAD, 7, np.array([5, 8]), np.array([0, 2, 3]), np.array([10, 11, 12], np.uint64))
    sp.sectors(STORE, 9, np.array([5]), np.array([0, 1]), np.array([40], np.uint64), np.array([0xF], np.uint32))
    sp.finish()
    return sp


def test_a_warps_payloads_follow_its_accesses_in_order_a_later_load_replacing_a_wavefront_count():
    sp = _step()
    assert LazyMem(sp, 0)._dict() == {7: 2}
    mem5 = LazyMem(sp, 1)._dict()
    assert list(mem5) == [7, 9] and mem5[7].tolist() == [10, 11] and mem5[9][1].tolist() == [0xF]
    assert LazyMem(sp, 2)[7].tolist() == [12]


def test_counts_and_kinds_are_those_of_the_payloads_built():
    sp = _step()
    assert sp.counts.tolist() == [len(LazyMem(sp, j)._dict()) for j in range(3)] == [1, 2, 1]
    assert sp.kinds.tolist() == [[0, 0, 0], [1, 1, 0], [1, 0, 0]]


def test_a_lazy_payload_pickles_as_the_dict_it_stands_for():
    mem = pickle.loads(pickle.dumps(LazyMem(_step(), 1)))
    assert type(mem) is dict and list(mem) == [7, 9]


def test_a_recorded_streams_summary_counts_its_visits_payloads():
    c = programs.get("matmul_tiled").case("default")
    src = TraceSource(prepare(c.kernel, c.grid, c.block, c.args, "h200"), 2)
    for st in src.peek(0):
        n = sum(len(v[2]) for v in st.visits)
        kinds = [0, 0, 0]
        for v in st.visits:
            for p in v[2].values():
                if isinstance(p, tuple):
                    kinds[1 if p[1].dtype == np.uint32 else 2] += 1
                elif not isinstance(p, int):
                    kinds[0] += 1
        assert st.summary == (n, kinds) and n > 0


def test_a_step_whose_accesses_leave_no_payload_counts_zero_for_each_warp():
    # wgmma reads its operands from shared memory without a payload of its own (Triton's tl.dot)
    sp = StepPayloads(np.array([3, 5]))
    sp.finish()
    assert sp.counts.dtype == np.int64 and sp.counts.tolist() == [0, 0] and len(LazyMem(sp, 1)) == 0


def _built_sectors(mems) -> list:
    """The sector arrays that reading each map's values finds (what warming._blocks_lines reads)."""
    out = []
    for m in mems:
        for p in m.values():
            p = p[0] if isinstance(p, tuple) else p
            if isinstance(p, np.ndarray) and p.size:
                out.append(p.tolist())
    return out


def _distinct_step():
    """Warps 2, 3, 4, each instruction accessed once: a shared access, a load of warps 2 and 4,
    a store of warp 3, an atomic of warps 3 and 4."""
    sp = StepPayloads(np.array([2, 3, 4]))
    sp.wavefronts(5, np.array([2, 3]), np.array([1, 2]))
    sp.sectors(LOAD, 6, np.array([2, 4]), np.array([0, 2, 5]), np.array([10, 11, 20, 21, 22], np.uint64))
    sp.sectors(STORE, 7, np.array([3]), np.array([0, 1]), np.array([40], np.uint64), np.array([0xF], np.uint32))
    sp.sectors(ATOMIC, 8, np.array([3, 4]), np.array([0, 1, 3]), np.array([50, 60, 61], np.uint64),
               np.array([1, 1, 2], np.int64))
    sp.finish()
    return sp


def test_a_steps_sectors_read_without_building_are_those_of_the_built_payloads():
    for js in ([0, 1, 2], [1, 2], [2], [2, 0]):                   # every warp of the step, and some
        lazy = [LazyMem(_distinct_step(), j) for j in js]
        owner, sectors = owned_sectors([lazy])
        assert all(m._d is None for m in lazy)                    # nothing was built
        want = sorted(x for a in _built_sectors([LazyMem(_distinct_step(), j) for j in js]) for x in a)
        assert sorted(sectors.tolist()) == want and want and not owner.any()


def test_an_instruction_accessed_twice_in_a_step_has_its_payloads_built_for_its_sectors():
    sp = _step()                                                  # instruction 7: wavefronts, then a load
    assert sp.owned_sectors([0, 1, 2], [0, 0, 0]) is None
    owner, sectors = owned_sectors([[LazyMem(sp, j) for j in range(3)]])
    assert sorted(sectors.tolist()) == sorted(x for a in _built_sectors([LazyMem(sp, j) for j in range(3)])
                                              for x in a) == [10, 11, 12, 40]


def test_owned_sectors_are_each_groups_read_together_a_distinct_step_without_building():
    # groups take warps of one step in any order (a batch's step holds several blocks' warps),
    # a plain map and a step read only by building (an instruction accessed twice) among them
    sp, twice = _distinct_step(), _step()
    groups = [[LazyMem(sp, 2), LazyMem(twice, 1)], [LazyMem(sp, 0), {3: np.array([90, 91], np.uint64)}],
              [LazyMem(sp, 1), LazyMem(twice, 2)], []]
    owner, sectors = owned_sectors(groups)
    assert owner.dtype == sectors.dtype == np.int64
    assert groups[0][0]._d is None and groups[1][0]._d is None and groups[2][0]._d is None   # not built
    assert [sorted(sectors[owner == g].tolist()) for g in range(4)] == \
        [[10, 11, 20, 21, 22, 40, 60, 61], [10, 11, 90, 91], [12, 40, 50], []]


def test_owned_sectors_of_no_maps_are_empty_int64_arrays():
    owner, sectors = owned_sectors([[], [{}]])
    assert owner.size == sectors.size == 0 and owner.dtype == sectors.dtype == np.int64
