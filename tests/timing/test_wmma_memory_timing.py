"""`wmma.load` / `wmma.store` move their bytes in the timing too, on the SASS ptxas makes of them
(gpusim/frontend/sass/payloads.py `is_wmma_access`): a 16-bit fragment from shared memory is one
LDSM, an f32 accumulator to global memory four STG.E.64 a lane. Before, their accesses had no
SASS to land on (`gpusim__sass_unplaced_accesses.sum`): the GEMM's C never reached the L2 (an
H200 counts 789,302 L2 write sectors for cuda_wmma_f16/n2048, 1.505 for each of the 524,288
sectors the kernel stores; the model had 181) and its LDSMs never used the shared-memory path."""
import pytest

import gpusim
from gpusim.timing.engine import TimingOptions
from programs.cuda_kernels.wmma_gemm import PROGRAM as WMMA


def _metrics(timing: bool) -> dict:
    case = WMMA.case("medium", seed=0)         # 128^3 in 64 x 64 tiles: 4 blocks of 4 warps
    return gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu="h200", shared_bytes=case.shared_bytes,
                         timing=timing, outputs=False,
                         timing_options=TimingOptions(mode="full") if timing else None).metrics


@pytest.fixture(scope="module")
def medium():
    return _metrics(True)


def test_every_wmma_access_lands_on_its_sass(medium):
    assert medium["gpusim__sass_unplaced_accesses.sum"] == 0


def test_the_stored_accumulators_reach_the_timed_l2(medium):
    # C: 128 x 128 f32 = 2048 sectors stored; the L2 counts 1.5 writes for each, as the H200 does
    # and as the counters without timing say
    assert medium["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 128 * 128 * 4 // 32
    assert medium["lts__t_sectors_op_write.sum"] == 3072
    assert _metrics(False)["lts__t_sectors_op_write.sum"] == 3072
