"""The CUDA C++ programs of programs/cuda_kernels/: outputs equal numpy's product (within the
tensor cores' truncation), bit for bit gpusim's own model of the mma instruction they issue, and
the single- and double-buffered kernels agree bit for bit."""
from pathlib import Path

import numpy as np
import pytest

import gpusim
from programs import load_file
from programs.cuda_kernels import _gemm as G

HERE = Path(__file__).resolve().parents[2] / "programs" / "cuda_kernels"
SPECS = {name: load_file(HERE / f"{name}.py") for name in ("wmma_gemm", "mma_gemm", "mma_gemm_single", "sgemm")}


def _run(name, size="default", seed=0):
    case = SPECS[name].case(size, seed)
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, shared_bytes=case.shared_bytes)
    return case, r


@pytest.mark.slow
@pytest.mark.parametrize("name,size", [("wmma_gemm", "default"), ("wmma_gemm", "bf16"), ("mma_gemm", "default"),
                                       ("sgemm", "default")])
def test_default_case_equals_numpy(name, size):
    case, _ = _run(name, size)
    case.check()


@pytest.mark.slow
@pytest.mark.parametrize("name,size,dtype", [("wmma_gemm", "default", "f16"), ("wmma_gemm", "bf16", "bf16"),
                                             ("mma_gemm", "default", "f16")])
def test_tensor_programs_are_bit_exact_to_the_mma_model(name, size, dtype):
    case, _ = _run(name, size)
    A, B, C = case.args[:3]
    assert np.array_equal(C.view(np.uint32), G.tensor_reference(A, B, dtype).view(np.uint32))


@pytest.mark.slow
def test_single_and_double_buffered_agree_bit_for_bit():
    double, r2 = _run("mma_gemm")
    single, r1 = _run("mma_gemm_single")
    assert np.array_equal(double.args[2].view(np.uint32), single.args[2].view(np.uint32))
    assert r1.metrics["smsp__inst_executed_op_ldgsts.sum"] == r2.metrics["smsp__inst_executed_op_ldgsts.sum"] == 16


@pytest.mark.slow
def test_unpadded_tiles_conflict_in_ldmatrix():
    _, padded = _run("mma_gemm")
    case = SPECS["mma_gemm"].case({"pad": 0})
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args)
    key = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"
    # 32 ldmatrix.x4, 4 wavefronts each when conflict-free; unpadded, the rows of A and of B (32 halves)
    # are 64 bytes apart, so the 8 rows of each matrix fall on 2 groups of 4 banks: 4-way, 16 per x4
    assert (padded.metrics[key], r.metrics[key]) == (128, 32 * 16)


def test_sizes_that_are_not_whole_tiles_are_refused():
    with pytest.raises(ValueError, match="mma_gemm: k=40 must be a positive multiple of 32"):
        SPECS["mma_gemm"].case({"k": 40})
