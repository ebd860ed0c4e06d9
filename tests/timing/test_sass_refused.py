"""When ptxas refuses a kernel's PTX, timing says what ptxas said, not that the tools are
missing (they are installed here)."""
import numpy as np
import pytest

import gpusim
from gpusim.errors import ConfigError

PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry grow(.param .u64 out)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    setmaxnreg.inc.sync.aligned.u32 240;
    ret;
}
"""


def test_ptxas_refusing_the_ptx_is_named_as_such():
    with pytest.raises(ConfigError, match=r"kernel grow: .*ptxas .* failed: .*setmaxnreg.inc' not supported on .target 'sm_90'") as info:
        gpusim.launch(gpusim.PtxSource(PTX, "grow"), (1,), (128,), (np.zeros(4, np.float32),), timing=True)
    assert "\n" not in str(info.value) and "not installed" not in str(info.value)
