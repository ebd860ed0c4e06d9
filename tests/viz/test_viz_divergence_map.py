"""Divergence maps: the lanes drawn active are the ones the functional core counts."""
import numpy as np
import pytest

import gpusim
import programs
from gpusim.viz import capture, divergence_map
from gpusim.viz.divergence_map import PAD


@pytest.fixture(scope="module")
def demo():
    c = programs.get("divergence_demo").case("default")
    src = open(c.kernel.py_func.__code__.co_filename).read().splitlines()
    even = next(n for n, t in enumerate(src, 1) if t.strip() == "acc = 3 * v + 1")
    odd = next(n for n, t in enumerate(src, 1) if t.strip() == "acc = v // 2 - 7")
    return c, capture(c), even, odd


def test_lane_parity_branch_runs_16_even_lanes_then_16_odd_lanes(demo):
    _, cap, even, odd = demo
    m = divergence_map.divergence_map(cap)
    (p_even,), (p_odd,) = m.path_at_line(even), m.path_at_line(odd)
    assert p_even != p_odd and 0 not in (p_even, p_odd)
    assert m.lanes_on_path(p_even) == {16} and m.lanes_on_path(p_odd) == {16}
    assert set(m.mask[m.src_line == even].tolist()) == {0x55555555}
    assert set(m.mask[m.src_line == odd].tolist()) == {0xAAAAAAAA}


def test_active_lanes_add_up_to_the_ptx_thread_instruction_counter(demo):
    c, cap, _, _ = demo
    r = gpusim.launch(c.kernel, 1, c.block, tuple(np.copy(a) for a in c.args))
    m = divergence_map.divergence_map(cap)
    assert int((m.path != PAD).sum()) == r.metrics["gpusim__ptx_inst_executed.sum"]
    assert int(m.active_lanes.sum()) == r.metrics["gpusim__ptx_thread_inst_executed.sum"]


def test_reconvergence_points_widen_the_mask_and_the_last_restores_all_32_lanes(demo):
    _, cap, _, _ = demo
    m = divergence_map.divergence_map(cap)
    for r in range(m.mask.shape[0]):
        at = np.flatnonzero(m.reconverge[r])
        assert len(at) >= 2                                   # after the parity branch and after the loop
        before, after = m.mask[r, at - 1], m.mask[r, at]
        assert ((before & ~after) == 0).all() and (after != before).all()   # lanes join, none leave
        assert int(after[-1]) == 0xFFFFFFFF


def test_one_line_map_keeps_only_that_lines_instructions(demo):
    _, cap, even, _ = demo
    m = divergence_map.divergence_map(cap, line=even, warps=[0, 3])
    assert m.mask.shape[0] == 2 and set(m.src_line[m.path != PAD].tolist()) == {even}


def test_divergence_map_writes_a_png(demo, tmp_path):
    out = tmp_path / "divergence.png"
    divergence_map.plot(divergence_map.divergence_map(demo[1]), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_the_if_converted_parity_branch_is_drawn_predicated_off_not_idle(demo):
    c, cap, even, _ = demo
    m = divergence_map.divergence_map(cap)
    src = open(c.kernel.py_func.__code__.co_filename).read().splitlines()
    loop = next(n for n, t in enumerate(src, 1) if t.strip() == "acc = (5 * acc + t) % MODULUS")
    side = m.src_line == even
    assert side.any() and (m.issued[side] == 0xFFFFFFFF).all()               # ptxas: issued to all 32 lanes
    assert (m.active_lanes[side] == 16).all()                                # 16 of them do the work
    assert (m.predicated_off[side].sum(axis=-1) == 16).all()
    body = m.src_line == loop                                                # a real branch: idle, not predicated
    assert body.any() and not m.predicated_off[body].any()
