"""Compiled ALU segments cached on disk (gpusim/functional/fastpath/segments.py): a variant
compiled by one process is loaded by the next from its first step, without compiling."""
from __future__ import annotations

import numpy as np

import gpusim
import programs
from gpusim import launch_plan
from gpusim.functional.fastpath import segment_ir, segments
from gpusim.functional.fastpath.segment_op import SegmentOp


def run_transpose():
    c = programs.get("transpose_shared").case("default", seed=2)
    p = gpusim.prepare(c.kernel, c.grid, c.block, c.args, core="fast")
    p.run_all(1 << 15)
    segs = [op for b in p.decoded.blocks for op in b.ops if isinstance(op, SegmentOp)]
    return segs, [np.array(a, copy=True) for a in c.args if isinstance(a, np.ndarray)]


def test_variants_compiled_once_load_from_disk_without_compiling(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "ptx"))
    monkeypatch.setattr(segments, "COMPILE_AFTER", 0)
    monkeypatch.setattr(launch_plan, "_DECODED", {})
    segs, out0 = run_transpose()
    nvar = sum(len(s.variants) for s in segs)
    assert nvar >= 10 and len(list((tmp_path / "segments").glob("*.o"))) == nvar

    def never(*a, **k):
        raise AssertionError("compiled although cached")
    monkeypatch.setattr(launch_plan, "_DECODED", {})                   # a new process: nothing in memory
    monkeypatch.setattr(segments, "COMPILE_AFTER", 1 << 62)              # would never compile
    monkeypatch.setattr(segment_ir.Segment, "define", never)
    segs, out1 = run_transpose()
    assert sum(len(s.variants) for s in segs) == nvar and not any(s.failed for s in segs)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(out0, out1))
