"""The trace of a kernel that moves its operands with the TMA and waits on mbarriers (the TMA +
wgmma GEMM): recording it gives the bulk copies as global loads and stores with their
sectors, the mbarrier operations as shared-memory events, and a Chrome trace whose every
timestamp is a finite number (a wait still pending at its issue has no completion yet)."""
from __future__ import annotations

import json
import math

import pytest

import gpusim
from gpusim.report.trace import write_chrome_trace
from gpusim.timing.engine import TimingOptions
from gpusim.timing.record import TraceWindow
from programs.hopper_kernels.tma_wgmma_gemm import PROGRAM


@pytest.fixture(scope="module")
def result():
    c = PROGRAM.case("default")
    return gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", shared_bytes=c.shared_bytes, timing=True,
                         outputs=False, timing_options=TimingOptions(record=TraceWindow()), **c.options)


def test_bulk_copies_are_recorded_with_their_sectors(result):
    rec = result.extra["recording"]
    copies = [m for m in rec.memory if rec.opcodes[m[8]].startswith("UTMALDG")]
    assert copies and all(m[3] == "load" and m[7] > 0 for m in copies)


def test_mbarrier_operations_are_shared_memory_events(result):
    rec = result.extra["recording"]
    bars = [m for m in rec.memory if rec.opcodes[m[8]].startswith("SYNCS")]
    assert bars and all(m[3] == "mbarrier" and m[6] == "shared" for m in bars)


def test_the_chrome_trace_has_only_finite_times(result, tmp_path):
    doc = json.loads(write_chrome_trace(result, tmp_path / "trace.json").read_text(), parse_constant=float)
    times = [e[k] for e in doc["traceEvents"] for k in ("ts", "dur") if k in e]
    assert times and all(math.isfinite(t) for t in times)
