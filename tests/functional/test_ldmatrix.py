"""ldmatrix / stmatrix executed over a warp (gpusim.functional.tensor_ops) against the lane
mapping the H200 recorded (ldsm:* in data/measurements/tensor_wgmma_h200.npz), with bank counts."""

import numpy as np
import pytest

from gpusim.errors import MemoryAccessError
from gpusim.functional.fastpath.lsu_kernels import group_wavefronts
from gpusim.functional.shared_banks import shared_wavefronts
from mma_kernels import ldsm_kernel
from ptx_harness import metrics, run_ptx
from validate.datadir import DATA_DIR

DATA = np.load(DATA_DIR / "tensor_wgmma_h200.npz")
VARIANTS = [str(v) for v in DATA["ldsm:variant"]]
SETS = [s for s, v in enumerate(VARIANTS) if not v.startswith("movmatrix")]


def ptx_op(variant: str) -> str:
    kind, x = variant.split("_")[:2]
    trans = ".trans" if variant.endswith("_t") else ""
    return f"{'ldmatrix' if kind == 'ld' else 'stmatrix'}.sync.aligned.m8n8.{x}{trans}.shared.b16"


def run_set(s: int):
    v = VARIANTS[s]
    n = int(v.split("_")[1][1])
    store = v.startswith("st")
    lane = np.arange(32, dtype=np.uint32)[:, None]
    r = np.arange(4, dtype=np.uint32)[None, :]
    vals = ((0x8000 | lane << 3 | r << 1) | ((0x8000 | lane << 3 | r << 1 | 1) << 16)).astype(np.uint32)[:, :n]
    io = vals.copy() if store else np.zeros((32, n), np.uint32)
    sm = np.arange(8192, dtype=np.uint16)
    (_, io, sm), x = run_ptx(ldsm_kernel(ptx_op(v), n, store), "ldsm_k", (1, 1, 1), (32, 1, 1),
                             [DATA["ldsm:addr"][s].astype(np.uint32), io, sm])
    return v, n, io, sm, x


@pytest.mark.parametrize("s", SETS, ids=lambda s: f"{VARIANTS[s]}#{s % 2}")
def test_matches_the_recorded_registers_and_shared_memory(s):
    v, n, io, sm, _ = run_set(s)
    if v.startswith("ld"):
        assert np.array_equal(io, DATA["ldsm:regs"][s][:, :n])
    else:
        assert np.array_equal(sm, DATA["ldsm:smem"][s])


def _ldsm_run(addr):
    _, x = run_ptx(ldsm_kernel("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 4, False), "ldsm_k", (1, 1, 1),
                   (32, 1, 1), [addr.astype(np.uint32), np.zeros((32, 4), np.uint32), np.zeros(8192, np.uint16)])
    return metrics(x)


def _ldsm_metrics(addr):
    m = _ldsm_run(addr)
    return m["smsp__inst_executed_op_ldsm.sum"], m["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"]


def _shared_load_metrics(addr):
    """The shared loads' wavefronts and bank conflicts, less the kernel's copy back of shared
    memory (8192 u16 by one warp: 256 conflict-free loads of a wavefront each)."""
    m = _ldsm_run(addr)
    return (m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] - 256,
            m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"])


def test_contiguous_x4_is_four_wavefronts():
    assert _ldsm_metrics(np.arange(32) * 16) == (1, 4)      # each matrix: 8 rows of 16 B in one 128 B line


def test_rows_64_bytes_apart_conflict_four_ways():
    # the probe's canonical addresses: rows r and r + 2 of a matrix share banks (128 B apart)
    assert _ldsm_metrics((np.arange(32) % 8) * 64 + (np.arange(32) // 8) * 16) == (1, 16)


def test_nsight_counts_ldmatrix_wavefronts_among_the_shared_loads_without_conflicts_when_each_matrix_takes_one():
    # measured: an mma.sync GEMM with no other shared loads has as many shared-load wavefronts as
    # ldmatrix wavefronts and no bank conflicts (data/measurements/h100_tensor.json, cuda_mma_single/n1024)
    assert _shared_load_metrics(np.arange(32) * 16) == (4, 0)


def test_ldmatrix_conflicts_among_the_shared_loads_are_the_wavefronts_beyond_one_a_matrix():
    assert _shared_load_metrics((np.arange(32) % 8) * 64 + (np.arange(32) // 8) * 16) == (16, 12)


def test_misaligned_row_address_is_an_error():
    addr = np.arange(32, dtype=np.uint32) * 16 + 8
    with pytest.raises(MemoryAccessError, match="misaligned.*ldmatrix"):
        run_ptx(ldsm_kernel("ldmatrix.sync.aligned.m8n8.x1.shared.b16", 1, False), "ldsm_k", (1, 1, 1), (32, 1, 1),
                [addr, np.zeros((32, 1), np.uint32), np.zeros(8192, np.uint16)])


def test_compiled_matrix_wavefronts_equal_the_reference_count_per_matrix():
    """ldmatrix's wavefronts over all warps at once (lsu_kernels.group_wavefronts) equal
    shared_banks.shared_wavefronts applied matrix by matrix, for 4- and 8-byte banks, 32 and 64 of them."""
    rng = np.random.default_rng(5)
    for banks, width in ((32, 4), (64, 4), (32, 8)):
        for _ in range(50):
            nmat, nw = int(rng.integers(1, 5)), int(rng.integers(1, 6))
            rows = (rng.integers(0, 64, (nw, 8 * nmat)) * rng.choice([16, 32, 48, 128, 144])).astype(np.uint64)
            ref = sum(int(shared_wavefronts(np.repeat(np.arange(nmat), 8), r, 16, nmat, banks, width).sum())
                      for r in rows)
            words = rows.ravel() >> np.uint64(width.bit_length() - 1)
            assert int(group_wavefronts(words, 8, max(1, 16 // width), banks)) == ref


def test_stmatrix_of_two_warps_to_the_same_rows_leaves_the_later_warps_values():
    s = VARIANTS.index("st_x4")
    v = VARIANTS[s]
    addr = DATA["ldsm:addr"][s].astype(np.uint32)
    vals = np.random.default_rng(0).integers(0, 1 << 32, (64, 4), dtype=np.uint32)
    kernel = ldsm_kernel(ptx_op(v), 4, True)
    (_, _, both), _ = run_ptx(kernel, "ldsm_k", (1, 1, 1), (64, 1, 1),
                              [np.concatenate([addr, addr]), vals.copy(), np.arange(8192, dtype=np.uint16)])
    (_, _, later), _ = run_ptx(kernel, "ldsm_k", (1, 1, 1), (32, 1, 1),
                               [addr, vals[32:].copy(), np.arange(8192, dtype=np.uint16)])
    (_, _, first), _ = run_ptx(kernel, "ldsm_k", (1, 1, 1), (32, 1, 1),
                               [addr, vals[:32].copy(), np.arange(8192, dtype=np.uint16)])
    assert not np.array_equal(first, later)
    assert np.array_equal(both, later)
