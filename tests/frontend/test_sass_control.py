"""ptxas' control bits (gpusim/frontend/sass/control.py), decoded from the cubin: one property per test.

The kernel is a chain of dependent FMAs on a loaded value, assembled with ptxas 13 for sm_90
and sm_80: no hardware interlock protects a fixed-latency result, so ptxas must space each FFMA
from the next by stall counts covering the FMA latency (4 cycles on Ampere and Hopper: Jia et al.
2018/2019, the H100 preset's fma pipe); the load's result is variable-latency, so it is tracked
by a write barrier the first FFMA waits on.
"""
from __future__ import annotations

import pytest

from gpusim.frontend import sass
from gpusim.frontend.sass import ptxas_info, sass_entry
from gpusim.frontend.sass.control import Control, control_bits, decode

needs_tools = pytest.mark.skipif(not (sass.have_ptxas() and sass.have_nvdisasm()),
                                 reason=f"ptxas/nvdisasm not installed: {sass.INSTALL_HINT}")

PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry fma_chain(.param .u64 p)
{
    .reg .f32 %f<10>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.f32 %f1, [%rd2];
    fma.rn.f32 %f2, %f1, %f1, %f1;
    fma.rn.f32 %f3, %f2, %f2, %f1;
    fma.rn.f32 %f4, %f3, %f3, %f2;
    fma.rn.f32 %f5, %f4, %f4, %f3;
    fma.rn.f32 %f6, %f5, %f5, %f4;
    st.global.f32 [%rd2], %f6;
    ret;
}
"""
FMA_LATENCY = 4


def _listing(cc):
    ptx = PTX if cc == (9, 0) else PTX.replace("sm_90", "sm_80").replace(".version 8.0", ".version 7.0")
    return sass_entry(ptxas_info(ptx, "fma_chain", cc).cubin, "fma_chain").instructions


def test_decode_reads_the_fields_of_a_known_word():
    # second word of an sm_90 'LDC R8, c[0x0][0x230]' (ptxas 13): W1, yield, stall 1
    c = decode(0x000E620000000800)
    assert (c.stall_cycles, c.yield_bit, c.write_barrier, c.read_barrier, c.wait_mask, c.reuse) == (1, 1, 1, None, 0, 0)
    assert c.text == "[B------:R-:W1:-:S01]"


def test_text_names_the_wait_mask_from_barrier_zero_up():
    assert Control(4, 0, None, 2, 0b000101, 0).text == "[B0-2---:R2:W-:Y:S04]"


@needs_tools
@pytest.mark.parametrize("cc", [(9, 0), (8, 0)])
def test_dependent_ffma_is_spaced_by_at_least_the_fma_latency(cc):
    ins = _listing(cc)
    ffma = [k for k, x in enumerate(ins) if x.base == "FFMA"]
    assert len(ffma) == 5
    for k in ffma[:-1]:
        # stall counts up to the next FFMA (which reads this one's result)
        nxt = next(q for q in ffma if q > k)
        assert sum(x.control.stall_cycles for x in ins[k:nxt]) >= FMA_LATENCY, [x.control.text for x in ins]


@needs_tools
def test_the_first_ffma_waits_on_the_load_s_write_barrier():
    ins = _listing((9, 0))
    ldg = next(x for x in ins if x.base == "LDG")
    first = next(x for x in ins if x.base == "FFMA")
    assert ldg.control.write_barrier is not None
    assert ldg.control.write_barrier in first.control.waits_on


@needs_tools
def test_every_instruction_of_the_entry_has_its_control_bits():
    info = ptxas_info(PTX, "fma_chain", (9, 0))
    ins = sass_entry(info.cubin, "fma_chain").instructions
    assert all(x.control is not None for x in ins)
    assert len(control_bits(info.cubin, "fma_chain")) * 16 >= ins[-1].offset + 16
