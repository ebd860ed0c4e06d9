"""PTX written for an arch-specific target (`.target sm_90a`: wgmma, setmaxnreg) is assembled
by ptxas for that target, which plain sm_90 refuses."""
from gpusim.frontend.sass.tools import ptxas_info

PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry fence_only()
{
    wgmma.fence.sync.aligned;
    ret;
}
"""


def test_sm_90a_ptx_is_assembled_for_sm_90a():
    assert ptxas_info(PTX, "fence_only", (9, 0)).arch == "sm_90a"


def test_plain_ptx_keeps_the_preset_s_arch():
    assert ptxas_info(PTX.replace("sm_90a", "sm_90").replace("    wgmma.fence.sync.aligned;\n", ""),
                      "fence_only", (9, 0)).arch == "sm_90"
