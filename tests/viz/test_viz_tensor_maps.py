"""Teaching maps of tensor-core code (programs/cuda_kernels/mma_gemm.py): the bank map of an
ldmatrix counts its 8-row phases one after another (padded rows conflict-free, unpadded 4-way),
adding up to the ldmatrix wavefront counter; the coalescing map of a cp.async is its global read."""
from pathlib import Path

import pytest

import gpusim
from gpusim.report.svgmap import bank_svg, caption
from gpusim.viz import bank_map, coalescing_map
from gpusim.viz.capture import capture
from programs import load_file

MMA_GEMM = load_file(Path(__file__).resolve().parents[2] / "programs" / "cuda_kernels" / "mma_gemm.py")
LDSM_A, CP_A = 68, 45                 # LDMATRIX_X4(a[i], &As[...]), CP_ASYNC16(&As[s][r][k], &A[...])
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def caps():
    return {pad: capture(MMA_GEMM.case({"pad": pad})) for pad in (0, 8)}


def test_unpadded_ldmatrix_is_four_phases_of_4_way_conflicts(caps):
    m = bank_map.bank_map(caps[0], LDSM_A)
    assert (m.mnemonic.startswith("ldmatrix"), m.lanes_per_phase, m.phase_wavefronts, m.wavefronts,
            m.conflict_text()) == (True, 8, (4, 4, 4, 4), 16, "4-way conflict")


def test_padded_ldmatrix_is_conflict_free(caps):
    m = bank_map.bank_map(caps[8], LDSM_A)
    assert (m.phase_wavefronts, m.wavefronts, m.conflict_text()) == ((1, 1, 1, 1), 4, "conflict-free")


def test_ldmatrix_maps_add_up_to_the_ldsm_wavefront_counter(caps):
    case = MMA_GEMM.case({"pad": 0})
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args)          # one block: all of it captured
    maps = [bank_map.from_access(a) for a in caps[0].accesses
            if a.space == "shared" and a.mnemonic.startswith("ldmatrix")]
    assert sum(m.wavefronts for m in maps) == r.metrics["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"]


def test_cp_async_coalescing_map_is_its_16_byte_global_read(caps):
    c = coalescing_map.coalescing_map(caps[8], CP_A)
    assert (c.mnemonic.split(".")[0:2], c.access_bytes, c.n_sectors, c.n_lines, c.efficiency) == (
        ["cp", "async"], 16, 16, 8, 1.0)


def test_html_map_of_ldmatrix_draws_the_phases(caps):
    m = bank_map.bank_map(caps[0], LDSM_A)
    svg = bank_svg(m)
    assert svg.count("<line ") == 3 and "phase 1: lanes 8-15" in svg
    assert "16 wavefronts: 4 + 4 + 4 + 4, one 8 x 8 matrix per phase (4-way bank conflict)" in caption(m)
