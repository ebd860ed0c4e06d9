"""The tensor-pipe microbenchmarks (validate/tensor_timing) compile with NVRTC for sm_90a,
and their output parses into the TensorSpec figures."""
import pytest

from validate.tensor_timing import kernels, parse, run


@pytest.mark.slow
def test_every_microbenchmark_kernel_compiles_for_sm_90a():
    pytest.importorskip("cuda.bindings.nvrtc")
    ptx = kernels.compile_ptx("sm_90a")
    names = {c[0] for c in run.cases(132)}
    assert all(f".entry {n}(" in ptx for n in names), sorted(n for n in names if f".entry {n}(" not in ptx)
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx and "cp.async.cg.shared.global" in ptx


def test_the_parser_turns_rates_and_chains_into_spec_figures():
    doc = {"results": [
        {"kind": "mma_latency", "type": "f16", "cycles_per_iteration": 33.2},
        {"kind": "mma_throughput", "type": "f16", "FLOP_per_cycle_per_sm": 2900.0},
        {"kind": "wgmma", "type": "bf16", "n": 256, "warpgroups_per_sm": 2, "FLOP_per_cycle_per_sm": 4000.0},
        {"kind": "wgmma", "type": "f16", "n": 128, "warpgroups_per_sm": 1, "FLOP_per_cycle_per_sm": 3000.0,
         "cycles_per_iteration": 320.0},
        {"kind": "mma_throughput", "type": "s8", "FLOP_per_cycle_per_sm": 8000.0},
        {"kind": "ldmatrix", "B_per_cycle_per_sm": 120.0},
        {"kind": "cp_async", "B_per_cycle_per_sm": 60.0}]}
    f = parse.figures(doc)
    assert f["tensor.fp16_dense_flop_per_cycle_per_sm"] == 4000.0       # the best of f16 and bf16, mma and wgmma
    assert f["tensor.mma_latency_cycles"] == 33.2
    assert f["tensor.wgmma_latency_cycles"] == pytest.approx(320.0 - 3 * 64 * 2 * 128 * 16 / 4000.0)
    assert (f["tensor.int8_dense_op_per_cycle_per_sm"], f["tensor.shared_operand_bytes_per_cycle_per_sm"],
            f["cp_async_bytes_per_cycle_per_sm"]) == (8000.0, 120.0, 60.0)
