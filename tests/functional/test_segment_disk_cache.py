"""Compiled ALU segments cached on disk (gpusim/functional/fastpath/segments.py): a variant
compiled by one process is loaded by the next from its first step, without compiling."""
from __future__ import annotations

import json

import numpy as np
import pytest

import gpusim
import programs
from gpusim import launch_plan
from gpusim.functional.fastpath import segment_ir, segments
from gpusim.functional.fastpath.segment_op import SegmentOp
from validate.datadir import DATA_DIR


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


@pytest.mark.slow
def test_segments_starting_at_one_instruction_have_their_own_entries(tmp_path, monkeypatch):
    """A chain's segment (decode.chains) may start at the same instruction as a block's own and run
    further: each has its own disk entry (one loaded for the other misread its table: a crash)."""
    pytest.importorskip("triton", reason="triton not installed (optional extra: pip install -e '.[triton]')")
    from validate import triton_compare as TC          # here: needs triton (the program's inputs)
    from validate.triton_record import load_case       # here: as above
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "ptx"))
    meta = json.loads(str(np.load(DATA_DIR / "triton_outputs_h100.npz")["meta"]))
    entry = meta["cases"]["flash_attention.masked"]
    path = entry["paths"]["sm90_ptx"]
    case = load_case(entry["program"], entry["size"])
    vals = [case.args[a[1]] if a[0] == "array" else TC._TYPES[a[1]](a[2]) for a in entry["ptx_args"]]
    vals += [np.zeros(s, np.uint8) if s else np.uint64(0) for s in path["scratch"]]
    p = gpusim.prepare(gpusim.PtxSource(path["ptx"], path["name"]), tuple(path["grid"]), (path["block"], 1, 1),
                       tuple(vals), shared_bytes=path["shared"], core="fast")
    segs = [op for b in p.decoded.blocks for op in list(b.ops) + list(b.chain_ops or ()) if isinstance(op, SegmentOp)]
    code = segs[0].code
    code._prepare()
    by_name: dict = {}
    for s in segs:
        by_name.setdefault(s.plan.name, {})[tuple(op.index for op in s.ops)] = s
    shared = [list(v.values()) for v in by_name.values() if len(v) > 1]
    assert shared                                        # (the kernel has such segments: else this tests nothing)
    for group in shared:
        paths = {code._path(s, (frozenset(), True), True) for s in group}
        assert len(paths) == len(group)
