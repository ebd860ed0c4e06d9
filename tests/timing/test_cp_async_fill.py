"""A cp.async's fill of shared memory on the SM's shared-memory data path (gpusim/timing/sm.py,
`payloads.CpAsyncPayload`): its wavefronts (`gpusim.functional.copy_counts.fill_wavefronts`, the
rule Nsight's sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts follows on the H100)
each hold the path `tensor.cp_async_fill_wavefront_cycles`. Kernels: tests/timing/cp_async_fill.cu."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.functional.copy_counts import copy_pieces, fill_wavefronts
from gpusim.specs.presets import H100
from validate.tensor_timing import crossbar_probe as X

SOURCE = (Path(__file__).parent / "cp_async_fill.cu").read_text()
WARPS, ITERS = 8, 16
FILLS = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"


def _rows(row_bytes: int, pitch: int, rows: int, line_offset: int = 0):
    """One warp's 16-byte lanes: `rows` global rows of `row_bytes` (at line_offset in 4096-byte
    rows, as a GEMM's K tile) into shared rows `pitch` bytes apart; (source, destination) bytes."""
    per_row = row_bytes // 16
    lane = np.arange(32)
    r, c = lane // per_row, (lane % per_row) * 16
    return r * 4096 + line_offset + c, r * pitch + c


@pytest.mark.parametrize("row_bytes, pitch, rows, line_offset, want", [
    (128, 128, 4, 0, 4),          # aligned 128-byte rows: a wavefront a line (Nsight: 4.00, Triton's tiles)
    (64, 80, 8, 0, 15),           # mma_gemm's A tile: 64-byte rows, 80 bytes apart (Nsight: 15 a LDGSTS)
    (64, 80, 8, 64, 15),          # ... its odd K tiles, the second half of each line
    (128, 144, 4, 0, 10),         # mma_gemm's B tile, rows 144 bytes apart (Nsight: 10.5, with the
])                                # other warps' rows starting 64 bytes into a window: 11)
def test_fill_wavefronts_of_a_warps_copy(row_bytes, pitch, rows, line_offset, want):
    src, dst = _rows(row_bytes, pitch, rows, line_offset)
    assert fill_wavefronts(np.zeros(32, np.int64), src, dst, 1).tolist() == [want]


@pytest.mark.parametrize("row_bytes, pitch, want", [
    (32, 32, 16), (32, 48, 24), (64, 64, 16), (64, 80, 24), (64, 96, 16), (64, 112, 24),
    (128, 128, 16), (128, 144, 24), (128, 160, 16), (128, 176, 24),
])                                # Nsight's sectors a LDGSTS.BYPASS, data/measurements/fill_rule_h100.json
def test_a_sector_is_read_once_for_each_shared_sector_it_fills(row_bytes, pitch, want):
    src, dst = _rows(row_bytes, pitch, 32 * 16 // row_bytes)
    assert copy_pieces(np.zeros(32, np.int64), src, dst, 1).tolist() == [want]


def _fill(name: str, fill_cycles: float = 1.0):
    gpu = dataclasses.replace(H100, tensor=dataclasses.replace(H100.tensor, cp_async_fill_wavefront_cycles=fill_cycles))
    src = np.zeros(WARPS * 32 * ITERS * 4, np.float32)
    return gpusim.launch(gpusim.CudaSource(SOURCE, name), (1,), (WARPS * 32,), (src, np.int32(ITERS)),
                         gpu=gpu, timing=True).metrics


@pytest.mark.slow
def test_padded_rows_take_more_fill_wavefronts_than_contiguous_ones():
    # 64-byte rows 80 bytes apart from 512 contiguous global bytes: each line's two rows take three
    # (the first row's window; the second's pieces a sector apart, and those half a sector apart)
    per_copy = {name: _fill(name)[FILLS] / (WARPS * ITERS) for name in ("fill_contiguous", "fill_padded")}
    assert per_copy == {"fill_contiguous": 4.0, "fill_padded": 12.0}


@pytest.mark.slow
def test_each_fill_wavefront_holds_the_shared_data_path_its_cycles():
    # every warp's copies issue back to back: the one data path of the SM is what they wait for
    slow, fast = _fill("fill_padded", 32.0), _fill("fill_padded", 16.0)
    added = slow["sm__cycles_elapsed.max"] - fast["sm__cycles_elapsed.max"]
    assert 0.9 * 16 * fast[FILLS] < added < 1.1 * 16 * fast[FILLS]


@pytest.mark.slow
def test_fills_that_take_no_cycles_leave_the_copy_to_its_memory_trip():
    # cp_async_fill_wavefront_cycles = 0: the model before fills were timed
    assert _fill("fill_padded", 0.0)["sm__cycles_elapsed.max"] < _fill("fill_padded", 16.0)["sm__cycles_elapsed.max"]


def _pull(kind: str):
    args = (np.ones(3 * X.REGION_INT4 * 4, np.int32), np.int32(4), np.zeros(2 * 33, np.uint64), np.zeros(1, np.int32))
    return gpusim.launch(gpusim.CudaSource(X.SOURCE, f"pull_{kind}"), 2, 256, args, gpu=H100, timing=True,
                         shared_bytes=X.SHARED_BYTES).metrics


def test_copies_into_rows_16_bytes_off_bring_half_again_the_bytes_over_the_crossbar():
    """The crossbar probe's pitch-80 copies (rows of 64 B, every other one 16 B off a 32-B
    boundary) against the same copies into contiguous shared memory: 1.5 times the bytes, as on
    the H100 (l1tex__m_xbar2l1tex_read_bytes, data/measurements/crossbar_probe_h100_run3.json)."""
    own, pitch80 = _pull("own"), _pull("pitch80")
    x = "l1tex__m_xbar2l1tex_read_bytes.sum"
    assert pitch80[x] / own[x] == pytest.approx(1.5)
