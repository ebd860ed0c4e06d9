"""A loop of several PTX blocks that ptxas unrolls is not issued as unrolled (gpusim/frontend/sass/mapping.py:
only one-block loops are walked pass by pass); the launch says so instead of timing it silently. A
barrier inside a loop splits its PTX into blocks; ptxas still unrolls the SASS (here eight rounds a
pass of a runtime count), and gpusim would issue those eight rounds once a round: 132 instructions a
warp a round where the SASS has about 19 (validate/shared_mix_probe.py's `rt1`: 269 us predicted, 50
measured on an H100; docs/mechanisms_24.md section 31)."""
import warnings

import numpy as np

import gpusim
from gpusim.timing import TimingOptions

SOURCE = r"""
extern "C" __global__ void barrier_rounds(float *out, int rounds) {
    __shared__ float t[256];
    volatile float *v = t;
    float acc = 0.0f;
    for (int r = 0; r < rounds; r++) {
        v[threadIdx.x] = acc + r;
        __syncthreads();
        acc += v[threadIdx.x ^ 1];
        __syncthreads();
    }
    out[threadIdx.x] = acc;
}
extern "C" __global__ void plain_rounds(float *out, int rounds) {
    __shared__ float t[256];
    volatile float *v = t;
    v[threadIdx.x] = threadIdx.x;
    __syncthreads();
    float acc = 0.0f;
    for (int r = 0; r < rounds; r++) acc += v[threadIdx.x ^ (r & 31)];
    out[threadIdx.x] = acc;
}
"""


def _warnings(name: str) -> list[str]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        gpusim.launch(gpusim.CudaSource(SOURCE, name), 1, 256, (np.zeros(256, np.float32), np.int32(16)),
                      gpu="h100", timing=TimingOptions(mode="full"), outputs=False)
    return [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]


def test_a_barrier_loop_that_ptxas_unrolled_is_reported_with_its_line():
    said = [m for m in _warnings("barrier_rounds") if "unrolled a loop of several PTX blocks" in m]
    assert len(said) == 1
    body = SOURCE.splitlines().index("        v[threadIdx.x] = acc + r;") + 1      # the loop's first line
    assert said[0].startswith("kernel barrier_rounds: ") and f"line {body} " in said[0]


def test_a_one_block_loop_that_ptxas_unrolled_is_walked_without_a_warning():
    assert not [m for m in _warnings("plain_rounds") if "unrolled" in m]
