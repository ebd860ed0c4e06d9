"""Do L2 reads that several SMs make of the same sectors at the same time count (and cost) once?
(issue 29)

Why: on the tensor set Nsight counts fewer L2 read sectors than the L1s receive from the
crossbar wherever many SMs stream the same tiles at the same time (H100 data, triton_matmul_f16:
`lts__t_sectors_srcunit_tex_op_read` / (`l1tex__m_xbar2l1tex_read_bytes` / 32) = 0.61 at n1024
(8 blocks read each tile together), 0.70 n2048, 0.85 n4096, 0.93 n8192; cuda_tma_wgmma n2048 0.50),
while the model counts every SM's sectors at the L2 (and books their slice bandwidth). A request
coalescer in front of the L2 slices that merges concurrent reads of one sector would explain it,
and would make L2-bandwidth-bound GEMMs faster than the model says (n2048: +17% at the kernel's
clock, l2_bandwidth-bound).

The probe: one block per SM (grid = the SM count, 256 threads), each block reads a 256 KiB
region once, one sector per thread (a 32 B stride), into a sum; `share` blocks read the same
region (consecutive blocks), in step (`skew` 0) or each starting at another eighth of the
region (`skew` 1: the same sectors, not at the same time). Each launch runs twice (cold, then
warm under `--cache-control none`) under ncu; the metrics include every `lrc__` metric the
chip lists (`ncu --query-metrics`), if any. Results: one JSON (`$OUT/l2_coalescing_<gpu>.json`).

python benchmarks/l2_coalescing_probe.py --out $OUT     (on a GPU machine; about 2 minutes)
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys

REGION_BYTES = 256 << 10
SHARES = (1, 2, 4, 8, 33, 132)
BASE = ["lts__t_sectors_op_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_requests_srcunit_tex_op_read.sum",
        "l1tex__m_xbar2l1tex_read_bytes.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "gpu__time_duration.sum", "sm__cycles_elapsed.max"]


def app(share: int, skew: int) -> None:
    """The profiled process: two launches of the probe kernel (cold, warm)."""
    import numpy as np  # GPU side: imported in the process that runs under ncu
    from numba import cuda  # GPU side: imported in the process that runs under ncu

    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    words = REGION_BYTES // 4
    regions = -(-sms // share)

    @cuda.jit
    def probe(x, out, share, skew, words):
        b = cuda.blockIdx.x
        base = (b // share) * words
        start = ((b % share) * (words // 8) * skew) % words
        acc = np.float32(0)
        i = cuda.threadIdx.x * 8                      # one 32 B sector per thread
        while i < words:
            acc += x[base + (start + i) % words]
            i += cuda.blockDim.x * 8
        out[b * cuda.blockDim.x + cuda.threadIdx.x] = acc

    x = cuda.to_device(np.ones(regions * words, np.float32))
    out = cuda.device_array(sms * 256, np.float32)
    for _ in range(2):
        probe[sms, 256](x, out, share, skew, words)
    cuda.synchronize()


def lrc_metrics() -> list[str]:
    """The chip's lrc__ metrics (the L2 request coalescer's, where Nsight lists such a unit)."""
    r = subprocess.run(["ncu", "--query-metrics", "--csv"], capture_output=True, text=True)
    names = [line.split(",")[0].strip('"') for line in r.stdout.splitlines()]
    return sorted({n for n in names if n.startswith("lrc__")})


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--app", nargs=2, type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.app:
        app(*a.app)
        return 0
    lrc = lrc_metrics()
    metrics = BASE + [f"{m}.sum" for m in lrc if not m.endswith((".sum", ".avg", ".max", ".min", ".pct"))] + \
        [m for m in lrc if m.endswith((".sum", ".pct"))]
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip()
    rows = []
    for share in SHARES:
        for skew in (0, 1):
            cmd = ["ncu", "--csv", "--page", "raw", "--cache-control", "none", "--metrics", ",".join(metrics),
                   sys.executable, os.path.abspath(__file__), "--app", str(share), str(skew)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            text = r.stdout[r.stdout.find('"ID"'):] if '"ID"' in r.stdout else ""
            launches = list(csv.DictReader(io.StringIO(text)))[1:] if text else []    # row 0: units
            rows.append({"share": share, "skew": skew, "rc": r.returncode, "stderr_tail": r.stderr[-800:],
                         "launches": [{k: v for k, v in row.items() if k in metrics or k == "ID"}
                                      for row in launches]})
    path = os.path.join(a.out, f"l2_coalescing_{gpu.split()[-1].lower() if gpu else 'gpu'}.json")
    os.makedirs(a.out, exist_ok=True)
    with open(path, "w") as f:
        json.dump({"gpu": gpu, "lrc_metrics": lrc, "metrics": metrics, "region_bytes": REGION_BYTES,
                   "rows": rows}, f, indent=1)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
