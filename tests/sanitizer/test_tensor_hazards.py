"""The sanitizer on tensor-core and async-copy code: a cp.async tile read before its
cp.async.wait_group is a race, ldmatrix rows are shared reads (a missing barrier before them is a
race, a row address past the shared memory a memcheck fault naming kernel, line and thread), and
the programs of programs/cuda_kernels/ are clean under every tool."""
from pathlib import Path

import numpy as np
import pytest

import gpusim
from programs import load_file

CU = Path(__file__).resolve().parent / "data" / "async_tensor_bugs.cu"
LINES = CU.read_text().splitlines()
PROGRAMS = Path(__file__).resolve().parents[2] / "programs" / "cuda_kernels"


def line_of(text: str) -> int:
    return next(i + 1 for i, s in enumerate(LINES) if text in s)


def statement_of(text: str) -> range:
    """The lines of the statement that starts on the line holding `text`: NVRTC puts a multi-line
    `asm` statement on its first line (13.5) or its last (13.0)."""
    first = line_of(text)
    last = next(i + 1 for i in range(first - 1, len(LINES)) if LINES[i].rstrip().endswith(";"))
    return range(first, last + 1)


def tile_copy(wait: int, check="racecheck"):
    x = np.arange(1024, dtype=np.float32)
    out = np.zeros(256, np.float32)
    r = gpusim.launch(gpusim.CudaSource(CU, f"tile_copy<{wait}>"), 2, 128, (x, out), check=check)
    return r, x, out


def ldsm(sync: int, rows=None, check="racecheck"):
    rows = np.arange(32, dtype=np.int32) * 16 if rows is None else rows
    out = np.zeros(128, np.uint32)
    return gpusim.launch(gpusim.CudaSource(CU, f"ldsm_tile<{sync}>"), 1, 64, (rows, out), check=check), out


@pytest.mark.slow
def test_read_before_cp_async_wait_group_is_a_raw_race_on_both_lines():
    r, _, _ = tile_copy(0)
    assert [(h.kind, h.space, h.lines[1]) for h in r.hazards] == [("RAW", "shared", line_of("the read: line 19"))]
    assert r.hazards[0].lines[0] in statement_of("cp.async.cg.shared.global")
    assert "before the cp.async.wait_group" in r.hazards[0].detail


@pytest.mark.slow
def test_read_after_wait_group_and_barrier_is_clean_and_correct():
    r, x, out = tile_copy(1, check="all")
    want = np.concatenate([x[512 * b:512 * b + 512][(np.arange(128) * 4 + 4) % 512] for b in range(2)])
    assert r.hazards == [] and np.array_equal(out, want)


@pytest.mark.slow
def test_ldmatrix_after_unsynchronised_stores_races_with_the_other_warp():
    rows = (128 + (np.arange(32) % 8) * 16).astype(np.int32)   # bytes 128-255: words 32-63, stored by warp 1
    r, _ = ldsm(0, rows)
    assert [(h.kind, h.lines[0], h.threads[0][0] // 32, h.threads[1][0] // 32, h.detail) for h in r.hazards] == [
        ("RAW", line_of("tile[threadIdx.x] = threadIdx.x;"), 1, 0, "threads of one block with no barrier between them")]
    assert r.hazards[0].lines[1] in statement_of("ldmatrix.sync.aligned")


@pytest.mark.slow
def test_ldmatrix_after_syncthreads_is_clean_and_reads_the_rows():
    r, out = ldsm(1, check="all")
    tile = np.arange(128, dtype=np.uint32)                      # word w holds w
    halves = np.stack([tile & 0xFFFF, tile >> 16], 1).ravel()   # 256 halves
    row = lambda m, i: halves[8 * (8 * m + i):8 * (8 * m + i) + 8]   # noqa: E731  matrix m, row i
    lane = 5                                                    # register j: row lane >> 2, halves 2 (lane & 3) ...
    want = [int(row(j, lane >> 2)[2 * (lane & 3)]) | int(row(j, lane >> 2)[2 * (lane & 3) + 1]) << 16
            for j in range(4)]
    assert r.hazards == [] and out[4 * lane:4 * lane + 4].tolist() == want


@pytest.mark.slow
def test_out_of_bounds_ldmatrix_row_names_kernel_line_and_thread():
    rows = np.arange(32, dtype=np.int32) * 16
    rows[5] = 512                                               # one past the 512-byte tile
    r, _ = ldsm(1, rows, check="memcheck")
    assert [(h.tool, h.kind, h.space, h.thread, h.address) for h in r.hazards] == [
        ("memcheck", "out-of-bounds", "shared", (5, 0, 0), 512)]
    assert r.hazards[0].line in statement_of("ldmatrix.sync.aligned")
    assert r.hazards[0].kernel == "ldsm_tile<1>"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wmma_gemm", "mma_gemm", "mma_gemm_single", "sgemm"])
def test_cuda_kernel_programs_are_clean_under_every_tool(name):
    case = load_file(PROGRAMS / f"{name}.py").case("default")
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, check="all")
    assert r.hazards == []
    case.check()


@pytest.mark.slow
def test_cp_async_refill_before_the_barrier_is_a_war_race():
    x, out = np.arange(1024, dtype=np.float32), np.zeros(128, np.float32)
    racy = gpusim.launch(gpusim.CudaSource(CU, "tile_refill<0>"), 1, 128, (x, out), check="racecheck")
    clean = gpusim.launch(gpusim.CudaSource(CU, "tile_refill<1>"), 1, 128, (x, out), check="racecheck")
    assert [(h.kind, h.lines[0]) for h in racy.hazards] == [("WAR", line_of("the neighbour's float"))]
    assert racy.hazards[0].lines[1] in statement_of("cp.async.cg.shared.global [%0], [%1], 16;\\n\"                // the refill")
    assert clean.hazards == []
