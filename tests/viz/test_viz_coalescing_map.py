"""Coalescing maps: the sectors drawn are the ones the load/store unit counts."""
import numpy as np

import gpusim
import programs
from gpusim.viz import capture, coalescing_map

SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_{}.sum"
REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_{}.sum"


def one_block_vector_add():
    c = programs.get("vector_add").case("default")
    return c.kernel, 1, c.block, c.args


def test_unit_stride_float32_warp_load_touches_4_sectors_of_1_line():
    m = coalescing_map.coalescing_map("vector_add")
    assert (m.n_sectors, m.n_lines, m.access_bytes) == (4, 1, 4)
    assert m.efficiency == 1.0


def test_column_store_of_naive_transpose_touches_32_sectors_in_32_lines():
    m = coalescing_map.coalescing_map("transpose_naive")
    assert m.mnemonic.startswith("st.global")
    assert (m.n_sectors, m.n_lines) == (32, 32) and m.efficiency == 4 * 32 / (32 * 32)


def test_vector_add_maps_add_up_to_the_lines_sector_and_request_counters():
    kernel, grid, block, args = one_block_vector_add()
    r = gpusim.launch(kernel, grid, block, tuple(np.copy(a) for a in args))
    cap = capture((kernel, grid, block, args))
    line = cap.lines_with("global")[0]
    maps = coalescing_map.coalescing_maps(cap, line)
    m = r.lines[line].metrics
    assert sum(x.n_sectors for x in maps) == sum(m[SECTORS.format(o)] for o in ("ld", "st")) == 8 * 3 * 4
    assert len(maps) == sum(m[REQUESTS.format(o)] for o in ("ld", "st"))


def test_coalescing_map_writes_a_png(tmp_path):
    out = tmp_path / "coalescing.png"
    coalescing_map.plot(coalescing_map.coalescing_map("transpose_naive"), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
