"""Cooperative groups' grid sync (`cuda.cg.this_grid().sync()`): the functional core's grid
barrier, the cooperative launch limit, and what is refused."""
from __future__ import annotations

import numpy as np
import pytest

import gpusim
from gpusim import cuda
from gpusim.errors import BarrierError, LaunchError, UnsupportedKernel


@cuda.jit
def rotate_rows(m):
    """Row r+1 takes row r's element of the mirrored column: written by another block."""
    col = cuda.grid(1)
    g = cuda.cg.this_grid()
    for row in range(1, m.shape[0]):
        m[row, col] = m[row - 1, m.shape[1] - col - 1] + 1
        g.sync()


@cuda.jit
def count_then_read(counter, out):
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(counter, 0, 1)
    cuda.syncthreads()
    cuda.cg.this_grid().sync()
    out[cuda.grid(1)] = counter[0]


@cuda.jit
def first_block_leaves(out):
    if cuda.blockIdx.x == 0:
        return
    cuda.cg.this_grid().sync()
    out[cuda.grid(1)] = 1


def test_rows_written_by_other_blocks_are_complete_after_each_grid_sync():
    m = np.zeros((64, 256), np.int32)
    rotate_rows[8, 32](m)
    assert m[63, 5] == 63


def test_every_block_arrives_before_any_leaves_the_grid_sync():
    counter = np.zeros(1, np.int32)
    out = np.zeros(12 * 64, np.int32)
    count_then_read[12, 64](counter, out)
    assert out.min() == 12


def test_block_that_exits_before_the_grid_sync_is_reported_as_a_deadlock():
    with pytest.raises(BarrierError, match=r"block \(0, 0, 0\) finished without reaching this_grid\(\)\.sync\(\)"):
        first_block_leaves[4, 32](np.zeros(128, np.int32))


def test_cooperative_launch_larger_than_the_resident_grid_is_refused():
    # h100: 132 SMs x 32 blocks of 32 threads (the per-SM block limit)
    with pytest.raises(LaunchError, match=r"holds at most 4,224 \(32 per SM, limited by blocks, x 132 SMs\)"):
        count_then_read[4225, 32](np.zeros(1, np.int32), np.zeros(4225 * 32, np.int32))


def test_max_cooperative_grid_blocks_is_blocks_per_sm_times_sms():
    m = np.zeros((2, 256), np.int32)
    rotate_rows[1, 256](m)
    (ov,) = rotate_rows.overloads.values()
    assert ov.cooperative
    assert ov.max_cooperative_grid_blocks(256) == 8 * 132       # 64 warps per SM / 8 warps per block


def test_grid_sync_in_a_batch_without_the_whole_grid_is_an_error():
    p = gpusim.prepare(count_then_read, 4, 32, (np.zeros(1, np.int32), np.zeros(128, np.int32)))
    with pytest.raises(BarrierError, match="needs all 4 blocks of the grid running at once"):
        p.batch(0, 2).run()


def test_timing_a_grid_sync_kernel_is_refused_not_guessed():
    with pytest.raises(UnsupportedKernel, match="timing model does not model a grid barrier"):
        gpusim.launch(count_then_read, 2, 32, (np.zeros(1, np.int32), np.zeros(64, np.int32)), timing=True)
