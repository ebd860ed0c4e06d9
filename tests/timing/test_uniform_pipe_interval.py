"""Uniform-datapath instructions (UIADD3, ULOP3, USHF, ...) issue on their SMSP's uniform pipe
one every `PipesSpec.uniform.issue_interval_cycles` (2 on Hopper: the calibration set's
matmul_naive/large stalls on math_pipe_throttle with only the uniform pipe near its limit,
data/measurements/specs_ubench/ubench_uniform.cu measures it): a loop of warp-uniform integer
chains takes twice the cycles per uniform instruction at interval 2 as at 1."""
import dataclasses

import numpy as np
import pytest

import gpusim
from gpusim import specs
from gpusim.timing.engine import TimingOptions

H100 = specs.get("h100")

# Eight chains on kernel parameters only; their result as an address keeps them in uniform
# registers (ptxas, sm_90: 7 of the 8 chains are USHF.R.U32.HI, ULOP3.LUT, UIADD3).
SOURCE = r'''
#define S(a) a = (a ^ (a >> 7)) + m;
extern "C" __global__ void uchains(unsigned x, unsigned m, int iters, unsigned* out) {
  unsigned a0 = x, a1 = x ^ 1, a2 = x ^ 2, a3 = x ^ 3, a4 = x ^ 4, a5 = x ^ 5, a6 = x ^ 6, a7 = x ^ 7;
  for (int i = 0; i < iters; i++) {
    S(a0) S(a1) S(a2) S(a3) S(a4) S(a5) S(a6) S(a7)
  }
  out[((a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7) & 255) + threadIdx.x] = 1;
}
'''


def _spec(interval):
    pipes = H100.sm.pipes
    return dataclasses.replace(H100, sm=dataclasses.replace(H100.sm, pipes=dataclasses.replace(
        pipes, uniform=dataclasses.replace(pipes.uniform, issue_interval_cycles=interval))))


def _run(interval):
    out = np.zeros(256 + 512, np.uint32)
    r = gpusim.launch(gpusim.CudaSource(SOURCE, "uchains"), 1, 512,
                      (np.uint32(5), np.uint32(0x9E3779B9), np.int32(64), out), gpu=_spec(interval),
                      timing=True, timing_options=TimingOptions(mode="full"))
    return r.metrics


def test_hopper_presets_issue_a_uniform_instruction_every_two_cycles():
    assert specs.get("h100").sm.pipes.uniform.issue_interval_cycles == 2.0
    assert specs.get("h200").sm.pipes.uniform.issue_interval_cycles == 2.0


@pytest.mark.slow
def test_a_uniform_bound_loop_takes_the_uniform_interval_per_uniform_instruction():
    slow, fast = _run(2.0), _run(1.0)
    uniform = slow["sm__inst_executed_pipe_uniform.sum"]
    assert uniform == fast["sm__inst_executed_pipe_uniform.sum"]
    assert uniform > 0.9 * slow["smsp__inst_executed.sum"]           # the loop is the uniform datapath's
    per_smsp = uniform / 4                                            # 16 warps, 4 an SMSP
    # 1 cycle more per uniform instruction on each SMSP, the launch and the tail aside
    assert slow["sm__cycles_elapsed.max"] - fast["sm__cycles_elapsed.max"] > 0.85 * per_smsp
