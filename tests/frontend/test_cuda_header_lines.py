"""CUDA C++ code inlined from the toolkit's headers (wmma, cuda_fp16) is reported on the .cu line
that calls it (gpusim.frontend.cudasource.user_locations)."""
import numpy as np
import pytest

import gpusim
from gpusim.frontend.cudasource import user_locations

SRC = """#include <cuda_fp16.h>
extern "C" __global__ void h(const float* x, __half* y) {
    int i = threadIdx.x;
    y[i] = __float2half(x[i]) * __float2half(2.0f);
}
"""

PTX = """.entry k()
{
\t.loc\t1 10 5
\t.loc\t2 91 5, function_name $L__info_string0, inlined_at 1 11 7
\tmov.u32 %r1, 16;
\t.loc\t2 40 1, function_name $L__info_string1, inlined_at 2 91 5
\tmov.u32 %r2, 16;
\tret;
}
\t.file\t1 "/home/me/k.cu"
\t.file\t2 "/opt/cuda/include/crt/mma.hpp"
"""


@pytest.mark.slow
def test_every_instruction_of_a_half_kernel_is_on_a_cu_line():
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float16)
    src = gpusim.CudaSource(SRC, "h")
    p = gpusim.prepare(src, 1, 32, (x, y), "h100")
    assert {(i.file, i.line) for i in p.decoded.infos} == {(src.path, n) for n in (2, 3, 4, 5)}


def test_header_loc_moves_to_its_inlined_at_or_the_last_user_line():
    out = user_locations(PTX, ["/opt/cuda/include"]).splitlines()
    assert (out[3], out[5], len(out)) == ("\t.loc\t1 11 7", "\t.loc\t1 11 7", len(PTX.splitlines()))
