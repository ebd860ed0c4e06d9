"""memcheck: a fault becomes a record (and ends the launch) instead of an exception."""
import numpy as np
import pytest

import gpusim
from gpusim.errors import ConfigError, MemoryAccessError
from buggy_kernels import line_of
import buggy_kernels as B


def test_out_of_bounds_store_is_a_record_with_thread_line_and_address():
    a = np.zeros(100, np.float32)
    r = gpusim.launch(B.past_the_end, 1, 128, (a,), check="memcheck")
    assert [(h.tool, h.kind, h.space, h.line, h.thread) for h in r.hazards] == [
        ("memcheck", "out-of-bounds", "global", line_of("oob"), (100, 0, 0))]
    assert (r.hazards[0].address - 400) % 256 == 0        # one past the 400-byte array (allocations: 256-aligned)


def test_misaligned_store_is_a_record():
    r = gpusim.launch(B.misaligned, 1, 16, (np.zeros(80, np.uint8),), check="memcheck")
    assert [(h.kind, h.line, h.address % 4) for h in r.hazards] == [("misaligned", line_of("misaligned"), 1)]


def test_without_memcheck_the_fault_still_raises():
    with pytest.raises(MemoryAccessError):
        gpusim.launch(B.past_the_end, 1, 128, (np.zeros(100, np.float32),), check="racecheck")


def test_unknown_tool_is_a_config_error_naming_the_tools():
    with pytest.raises(ConfigError, match="racecheck"):
        gpusim.launch(B.past_the_end, 1, 128, (np.zeros(128, np.float32),), check="racechek")
