"""Counters equal hand-computed values on kernels built for them (one property each)."""
import math

import numpy as np
import pytest
from numba import cuda, float32

import gpusim

SHARED_LD_WF = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SHARED_LD_CONF = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
GLD_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
GLD_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"


def strided_shared_read(out, stride):
    s = cuda.shared.array(1024, float32)
    t = cuda.threadIdx.x
    for k in range(32):
        s[k * 32 + t] = k
    cuda.syncthreads()
    out[t] = s[(t * stride) % 1024]


@pytest.mark.parametrize("stride", [1, 2, 3, 4, 6, 8, 16, 31, 32, 33])
def test_stride_s_shared_read_takes_gcd_wavefronts(stride):
    out = np.zeros(32, np.float32)
    r = gpusim.launch(strided_shared_read, 1, 32, (out, stride))
    assert r.metrics[SHARED_LD_WF] == math.gcd(stride, 32)


def test_stride_32_shared_read_has_31_conflicts():
    out = np.zeros(32, np.float32)
    r = gpusim.launch(strided_shared_read, 1, 32, (out, 32))
    assert r.metrics[SHARED_LD_CONF] == 31


def test_stride_shared_read_returns_the_right_words():
    out = np.zeros(32, np.float32)
    gpusim.launch(strided_shared_read, 1, 32, (out, 3))
    words = (np.arange(32) * 3) % 1024
    assert (out == (words // 32)).all()


def column_read(out):
    tile = cuda.shared.array((32, 32), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tile[ty, tx] = ty * 32 + tx
    cuda.syncthreads()
    out[ty, tx] = tile[tx, ty]


def test_32x32_tile_read_by_column_takes_32_wavefronts_per_warp():
    out = np.zeros((32, 32), np.float32)
    r = gpusim.launch(column_read, 1, (32, 32), (out,))
    assert r.metrics[SHARED_LD_WF] == 32 * 32          # 32 warps x 32 wavefronts


def test_32x32_tile_written_by_row_is_conflict_free():
    out = np.zeros((32, 32), np.float32)
    r = gpusim.launch(column_read, 1, (32, 32), (out,))
    assert r.metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] == 0


def parity_branch(a, out, n):
    t = cuda.threadIdx.x
    if t % 2 == 0:
        acc = 0.0
        for k in range(n):
            acc += a[k] * t          # line inside the branch
        out[t] = acc


def _line_of(fn, text):
    import inspect
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(src) if text in s)


def test_lane_parity_branch_runs_at_half_efficiency_inside():
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(64, np.float32)
    r = gpusim.launch(parity_branch, 1, 64, (a, out, 8))
    line = r.lines[_line_of(parity_branch, "acc += a[k] * t")]
    assert line.simt_efficiency == pytest.approx(0.5)


def test_lane_parity_branch_results():
    a = np.arange(8, dtype=np.float32)
    out = np.full(64, -1, np.float32)
    gpusim.launch(parity_branch, 1, 64, (a, out, 8))
    t = np.arange(64)
    want = np.where(t % 2 == 0, a.sum() * t, -1).astype(np.float32)
    assert (out == want).all()


def strided_global_read(a, out, stride):
    i = cuda.grid(1)
    out[i] = a[i * stride]


@pytest.mark.parametrize("stride,sectors", [(1, 4), (2, 8), (4, 16), (8, 32), (32, 32)])
def test_strided_float32_global_read_sectors_per_request(stride, sectors):
    a = np.arange(64 * 32, dtype=np.float32)
    out = np.zeros(64, np.float32)
    r = gpusim.launch(strided_global_read, 2, 32, (a, out, stride))
    assert r.metrics[GLD_SEC] / r.metrics[GLD_REQ] == sectors


def uniform_loop(out, n):
    t = cuda.threadIdx.x
    acc = 0
    for k in range(n):
        acc += k
    out[t] = acc


def test_warp_instructions_scale_with_warps_not_threads():
    out = np.zeros(64, np.int64)
    r1 = gpusim.launch(uniform_loop, 1, 32, (out[:32], 10))
    r2 = gpusim.launch(uniform_loop, 1, 64, (out, 10))
    assert r2.metrics["smsp__inst_executed.sum"] == 2 * r1.metrics["smsp__inst_executed.sum"]


def test_thread_instructions_are_32_per_warp_instruction_without_divergence():
    out = np.zeros(64, np.int64)
    r = gpusim.launch(uniform_loop, 1, 64, (out, 10))
    assert r.metrics["smsp__thread_inst_executed.sum"] == 32 * r.metrics["smsp__inst_executed.sum"]


def test_partial_warp_counts_only_launched_threads():
    out = np.zeros(40, np.int64)
    r = gpusim.launch(uniform_loop, 1, 40, (out, 10))
    assert r.metrics["smsp__thread_inst_executed.sum"] == 20 * r.metrics["smsp__inst_executed.sum"]
