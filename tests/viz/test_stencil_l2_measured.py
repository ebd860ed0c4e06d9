"""The memory chart's numbers against a real GPU: benchmarks/stencil_l2_probe.py's committed
result (benchmarks/results/stencil_l2_probe_<gpu>.json, written on an H100/H200 by the lead),
and the probe's own plumbing checked here with a stand-in for ncu."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

import gpusim
from gpusim.timing.engine import TimingOptions
from gpusim.viz import memory_chart

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import stencil_l2_probe as probe  # noqa: E402

RESULTS = sorted((ROOT / "benchmarks" / "results").glob("stencil_l2_probe_*.json"))


def model(case: dict, gpu: str):
    spec = probe.spec_of(case["program"])
    c = spec.case(case["params"])
    return gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=gpu, timing=True, shared_bytes=c.shared_bytes,
                         timing_options=TimingOptions(mode="full"))


@pytest.mark.slow
@pytest.mark.skipif(not RESULTS, reason="no GPU result committed yet (run benchmarks/stencil_l2_probe.py on a GPU)")
@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_model_against_the_measured_stencil(path):
    doc = json.loads(path.read_text())
    gpu = "h200" if "h200" in path.stem else "h100"
    for case in doc["cases"]:
        m = case["metrics"]
        assert case["check"] == "passed" and m, case["name"]
        r = model(case, gpu)
        got = r.metrics
        if case["program"] == "stencil_2d":
            assert got["dram__bytes_read.sum"] == pytest.approx(m["dram__bytes_read.sum"], rel=0.10)
            hit = 100 * m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"] / \
                m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
            assert memory_chart.memory_chart(r).l1_hit_rate == pytest.approx(hit, abs=5)
        else:                                                   # predicated-on thread instructions
            assert got["smsp__thread_inst_executed_pred_on.sum"] == pytest.approx(
                m["smsp__thread_inst_executed_pred_on.sum"], rel=0.05)


def test_the_probe_assembles_its_json_from_ncus_csv(tmp_path, monkeypatch):
    """A stand-in ncu writes the worker's record and a CSV as ncu does; the probe pairs them."""
    fake = tmp_path / "ncu"
    rows = []
    for k, (name, program, params) in enumerate(probe.CASES, 1):
        kernel = probe.spec_of(program).case(params if params is not None else "default").kernel.py_func.__name__
        for metric in probe.METRICS:
            rows.append(f'"{k}","1","app","1","0","_Z{kernel}x","1","0","(1, 1, 1)","(32, 1, 1)","0","0",'
                        f'"section","{metric}","unit","{k * 1000}"')
    record = [{"name": n, "program": p, "params": prm or {}, "kernel":
               probe.spec_of(p).case(prm if prm is not None else "default").kernel.py_func.__name__,
               "grid": [1], "block": [32], "launched": True, "check": "passed"} for n, p, prm in probe.CASES]
    header = ('"ID","Process ID","Process Name","Host Name","Ctx","Kernel Name","Stream","Device","Grid Size",'
              '"Block Size","CC","Invocations","Section Name","Metric Name","Metric Unit","Metric Value"')
    fake.write_text("#!" + sys.executable + "\nimport sys, json\na = sys.argv\n"
                    f"open(a[a.index('--log-file') + 1], 'w').write({json.dumps(header + chr(10) + chr(10).join(rows))})\n"
                    f"open(a[a.index('--worker') + 1], 'w').write({json.dumps(json.dumps(record))})\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(probe, "provenance", lambda ncu, cmd: {"gpu": "NVIDIA H200, 570.0", "command": "x"})
    assert probe.main([str(tmp_path / "out"), "--ncu", str(fake)]) == 0
    doc = json.loads((tmp_path / "out" / "stencil_l2_probe_h200.json").read_text())
    assert [c["name"] for c in doc["cases"]] == [c[0] for c in probe.CASES]
    assert doc["cases"][1]["metrics"]["dram__bytes_read.sum"] == 2000
    assert os.path.exists(tmp_path / "out")
