"""The integer address code ptxas files under a load's PTX line is not a copy of the load:
counting it made a 4-loads-per-iteration read loop (validate's bandwidth/read_hbm) look
unrolled twice and halved its predicted time (-48% against the H200)."""
import pytest

import gpusim
from gpusim.frontend import sass
from validate.microbench import MICROBENCHMARKS

pytestmark = pytest.mark.skipif(not (sass.have_ptxas() and sass.have_nvdisasm()),
                                reason=f"ptxas/nvdisasm not installed: {sass.INSTALL_HINT}")


def test_the_read_loop_is_not_taken_for_an_unrolled_one():
    case = MICROBENCHMARKS["bandwidth"].case("read_hbm")
    m = gpusim.prepare(case.kernel, case.grid, case.block, case.args, gpu="h200").sass
    assert m.unrolled == {}
