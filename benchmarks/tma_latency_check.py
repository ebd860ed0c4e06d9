"""One TMA copy's latency on the H100/H200 (validate/tensor_timing/tma_latency.cu, measured:
data/measurements/tma_latency_<gpu>.json) predicted by gpusim, cycles per copy side by side.

    python benchmarks/tma_latency_check.py [--gpu h100] [--data data/measurements/tma_latency_<gpu>.json]
        [--kinds bulk_load,tensor_load] [--out benchmarks/results/tma_latency_check_<gpu>.json]

The same kernels, compiled by NVRTC: one thread issues a copy (`cp.async.bulk`, 16 B to 16 KB
contiguous; or a 2-D `cp.async.bulk.tensor` box of 1 to 128 rows of 128 B from an f16
8192 x 8192 tensor, rows 16 KB apart), waits on its mbarrier, and goes on to the next: from
bytes the L2 holds (the same bytes again) or from bytes not read before (DRAM; a new MB, or a
new 2 MB for the boxes). The GPU times each copy with %clock64 around issue and wait (median of
60-63); the model's figure is the launch's cycles per copy, differenced over two repetition
counts (so the launch and the first, cold copy cancel): it includes the loop's few instructions
outside the GPU's timed region (the store of the cycle count, the phase flip), tens of cycles.
The run2 measurements add `tensor_pitch` rows: boxes of 8 to 128 rows at row pitches of 128 B
to 64 KB from a fresh GB, each copy two boxes below the last, from 1, 16 or 132 blocks at once
(`per_copy_pitch`); the presets' tRFC is fitted to them (the wait for a refresh in progress,
`timing/memory/hbm.py`). The run3 measurements add 8 KB copies from 1 to 132 blocks at once
(`bulk_load`: contiguous; `tensor_load`: 64 rows 1 KB apart), from DRAM and from the L2: how the
latency grows with the bytes in flight.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gpusim  # noqa: E402
from validate.datadir import DATA_DIR  # noqa: E402

CU = ROOT / "validate" / "tensor_timing" / "tma_latency.cu"
REPS = (8, 24)


def per_copy(kernel, head: tuple, gpu: str, blocks: int = 1) -> float:
    """Cycles per copy: elapsed cycles of REPS[1] copies less REPS[0], over the difference
    (`head`: the kernel's arguments before the repetition count and the cycles array; `blocks`
    blocks at once, each with its own cycles)."""
    cyc = []
    for reps in REPS:
        args = head + (np.int32(reps), np.zeros(blocks * reps, np.uint64))
        r = gpusim.launch(kernel, blocks, 32, args, gpu=gpu, timing=True, outputs=False)
        cyc.append(r.metrics["sm__cycles_elapsed.max"])
    return (cyc[1] - cyc[0]) / (REPS[1] - REPS[0])


def per_copy_pitch(kernel, m: dict, gpu: str) -> float:
    """Cycles per copy of a `tensor_pitch` or `tensor_load` run (2-D boxes of `rows` 128-B rows
    `pitch` bytes apart from `blocks` blocks at once, each in its own band of rows; from DRAM
    each two boxes below the last, from the L2 the same box): `per_copy` over a tensor just tall
    enough for REPS[1] copies a band (the GPU's bands are 1 GB / pitch / blocks rows; the
    channels a band starts at differ)."""
    pitch, n = m["pitch"], m["rows"]
    dy = 2 * n if m["where"] == "dram" else 0
    band = REPS[1] * 2 * n + n
    tm = gpusim.TensorMap(np.zeros((band * m["blocks"], pitch // 2), np.float16), (64, n))
    head = (tm, np.uint32(128 * n), np.int32(0), np.int32(0), np.int32(dy), np.int32(band))
    return per_copy(kernel, head, gpu, m["blocks"])


def per_copy_bulk_blocks(kernel, m: dict, gpu: str) -> float:
    """Cycles per copy of a `bulk_load` run (contiguous copies of `bytes` from `blocks` blocks at
    once, each block in its own band; from DRAM a new 64 KB each copy, from the L2 the same bytes):
    `per_copy` with bands just long enough for REPS[1] copies (the GPU's: 1 GB / 132)."""
    stride = 65536 if m["where"] == "dram" else 0
    band = REPS[1] * 65536
    src = np.zeros(band * m["blocks"], np.uint8)
    head = (src, np.uint32(m["bytes"]), np.uint64(stride), np.uint64(band))
    return per_copy(kernel, head, gpu, m["blocks"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h100", choices=("h100", "h200"))
    ap.add_argument("--data", type=Path, help="the measurements (default: data/measurements/tma_latency_<gpu>.json)")
    ap.add_argument("--kinds", help="only these kinds of rows, comma-separated (bulk, tensor, tensor_pitch, bulk_load, "
                                    "tensor_load)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    data = (a.data if a.data else DATA_DIR / f"tma_latency_{a.gpu}.json").resolve()
    doc = json.loads(data.read_text())
    bulk, tensor = gpusim.CudaSource(CU, "bulk_latency"), gpusim.CudaSource(CU, "tensor_latency")
    blocks_kernel = gpusim.CudaSource(CU, "tensor_latency_blocks")
    bulk_blocks = gpusim.CudaSource(CU, "bulk_latency_blocks")
    src = np.ones(48 << 20, np.uint8)
    f16 = np.ones((8192, 8192), np.float16)
    rows = []
    kinds = set(a.kinds.split(",")) if a.kinds else None
    for m in doc["runs"]:
        kind, where, nbytes = m["kind"], m["where"], m["bytes"]
        if kinds and kind not in kinds:
            continue
        if kind == "bulk":
            stride = 0 if where == "l2" else 1 << 20
            pred = per_copy(bulk, (src, np.uint32(nbytes), np.uint64(stride)), a.gpu)
        elif kind == "tensor":
            n = nbytes // 128
            tm = gpusim.TensorMap(f16, (64, n))
            y, dy = (0, 0) if where == "l2" else (128 + 128 * (n // 64), 128)
            pred = per_copy(tensor, (tm, np.uint32(nbytes), np.int32(0), np.int32(y), np.int32(dy)), a.gpu)
        elif kind in ("tensor_pitch", "tensor_load"):
            pred = per_copy_pitch(blocks_kernel, m, a.gpu)
        elif kind == "bulk_load":
            pred = per_copy_bulk_blocks(bulk_blocks, m, a.gpu)
        else:
            continue                                   # the ld.global.cg chase: the presets' L2 latency
        shape = {k: m[k] for k in ("pitch", "rows", "blocks") if k in m}
        rows.append({"kind": kind, "where": where, "bytes": nbytes, **shape, "measured_cycles": m["median"],
                     "predicted_cycles": round(pred, 1), "difference_cycles": round(pred - m["median"], 1)})
        print(f"{kind:6s} {where:4s} {nbytes:6d} B {shape or ''}  measured {m['median']:6.0f}  predicted {pred:7.1f}  "
              f"({pred - m['median']:+.0f})", flush=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    out = a.out or ROOT / "benchmarks" / "results" / f"tma_latency_check_{a.gpu}.json"
    out.write_text(json.dumps({"what": __doc__.split("\n\n")[0], "command": "python " + " ".join(sys.argv),
                               "data": str(data.relative_to(ROOT)) if data.is_relative_to(ROOT) else str(data), "measured_on": doc["provenance"].get("gpu"),
                               "commit": head.stdout.strip(), "date": time.strftime("%Y-%m-%d"),
                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
