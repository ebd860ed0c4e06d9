"""A load coherent at GPU or system scope (ld.global.cg, volatile: SASS LDG.E.STRONG.GPU / .SYS) is
answered by the L2, never by the SM's L1, which is not kept coherent with other SMs' writes: one
warp reading the same 32 lines twice over hits its L1 the second time with a plain load, and never
with `__ldcg` or `volatile`, whose every sector is looked up in the L2 again, each round at the L2's
latency (data/measurements/loaded_latency_h200.json: an `ld.global.cg` chase through a block's own
256 L2-resident lines, 32 KB, takes 288 cycles a hop on the H200, not the L1's 33)."""
import numpy as np
import pytest

import gpusim
from gpusim.timing.engine import TimingOptions

SOURCE = r'''
#define LOAD(p) %s
extern "C" __global__ void reread(const float* a, float* out, int rounds) {
  __shared__ volatile int zero;
  zero = 0;
  float acc = 0.f;
  for (int r = 0; r < rounds; r++) {
    const float* q = a + zero;           // the same pointer, which the compiler cannot know: every round loads
    for (int l = 0; l < 32; l++)
      acc += LOAD(q + l * 32 + threadIdx.x);
  }
  out[threadIdx.x] = acc;
}
'''
LOADS = {"plain": "(*(p))", "cg": "__ldcg(p)", "volatile": "(*(const volatile float*)(p))"}


def _run(kind: str) -> dict:
    a = np.arange(32 * 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    r = gpusim.launch(gpusim.CudaSource(SOURCE % LOADS[kind], "reread"), 1, 32, (a, out, np.int32(2)),
                      gpu="h200", timing=True, timing_options=TimingOptions(mode="full"))
    np.testing.assert_allclose(out, 2 * a.reshape(32, 32).sum(axis=0))
    return r.metrics


def test_a_plain_reload_hits_the_l1():
    m = _run("plain")
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] == 128        # the second round's
    assert m["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"] + \
        m["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"] == 128


@pytest.mark.parametrize("kind", ["cg", "volatile"])
def test_a_coherent_reload_goes_to_the_l2_every_time(kind):
    m = _run(kind)
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 256
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] == 0
    assert m["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"] + \
        m["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"] == 256
    assert m["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"] >= 128                # the second round hits L2
