"""The latency of a TMA copy on the H100/H200 (issue 29, `tensor.tma_latency_cycles`): one thread
issues a bulk copy (`cp.async.bulk`, SASS UBLKCP) or a 2-D tensor copy (`cp.async.bulk.tensor`,
UTMALDG) into shared memory, waits on its mbarrier and reads %clock64 around the pair, for sizes
from 16 B to 16 KB, from bytes the L2 holds and from bytes it does not; beside it the
`ld.global.cg` chase the presets' L2 hit latency comes from (tma_latency.cu, host side
tma_latency_main.cu).

    python -m validate.tensor_timing.tma_latency --out $OUT/tma_latency_<gpu>.json   # seconds, on the GPU machine

Needs nvcc (sm_90a) and the driver's libcuda (cuTensorMapEncodeTiled).
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import tempfile
from pathlib import Path

from validate import ncu

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    args = ap.parse_args(argv)
    exe = Path(tempfile.mkdtemp()) / "tma_latency"
    subprocess.run([args.nvcc, "-O3", "-arch=sm_90a", "-I", str(HERE), "-o", str(exe), str(HERE / "tma_latency_main.cu"),
                    "-lcuda"], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    ident = ncu.gpu_identity()
    nvcc = subprocess.run([args.nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    doc = {"provenance": {"gpu": ident, "nvcc": nvcc, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                          "clocks": "not locked (as found); latencies in SM cycles (%clock64)",
                          "command": "python -m validate.tensor_timing.tma_latency --out $OUT/tma_latency_<gpu>.json",
                          "method": __doc__.split("\n\n")[0]},
           "runs": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))
    for r in rows:
        print(f"{r['kind']:7s} {r['where']:5s} {r['bytes']:6d} B: median {r['median']} cycles")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
