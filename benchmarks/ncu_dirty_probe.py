"""Where do the DRAM writes of kernels that store almost nothing come from? (issue 7)

Nsight's `dram__bytes_write.sum` shows 2-4 MB of DRAM writes in H200 kernels that read a
large array and store a few KB (reductions, pointer chases, `bandwidth/read_hbm`), and about
2 MB more than the model in kernels with large outputs. This probe runs one read-only kernel
(a grid-stride sum of `mib` MiB of float32 into 1 KiB per block) under ncu in several set-ups
and records the DRAM bytes of each:

  h2d          the input copied host-to-device just before (as `validate measure` does)
  device_fill  the input written by a kernel (not the copy engine) just before
  evicted      as h2d, then a 256 MiB read of another array before the profiled launch

and, with `--background`, one thread that only spins on %clock64 for 1-100 ms (storing one
word) under `many_pass`: the DRAM and L2 writes that arrive while a long kernel runs, from
outside it.

Run with each ncu set-up as its own process (the driver script `--ncu` does it):
  one_pass     --metrics dram__bytes_read.sum,dram__bytes_write.sum (one pass: no save/restore)
  many_pass    those plus enough metrics to need several passes (kernel replay saves and restores memory)
  no_flush     one pass, --cache-control none

python benchmarks/ncu_dirty_probe.py --ncu --out benchmarks/results/ncu_dirty_probe.json  (on a GPU machine)
python benchmarks/ncu_dirty_probe.py --ncu --background --out benchmarks/results/ncu_background_<gpu>.json
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import time

MIB = 1 << 20
ONE = "dram__bytes_read.sum,dram__bytes_write.sum"
MANY = ONE + ",lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,smsp__inst_executed.sum," \
             "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active," \
             "smsp__thread_inst_executed.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum"
SETUPS = {"one_pass": ["--metrics", ONE, "--cache-control", "all"],
          "many_pass": ["--metrics", MANY, "--cache-control", "all"],
          "no_flush": ["--metrics", ONE, "--cache-control", "none"]}


SPIN_MS = (1, 5, 10, 25, 50, 100)


def spin_app(ms: int) -> None:
    """One thread spinning for `ms` milliseconds at the SM clock nvidia-smi reports."""
    import numpy as np  # GPU side: imported in the process that launches under ncu, not when the script is read
    from numba import cuda  # GPU side: imported in the process that launches under ncu, not when the script is read
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from validate.microbench_kernels import clock64  # GPU side: needs the sys.path entry set just above

    @cuda.jit
    def spin(out, cycles):
        t0 = clock64()
        while clock64() - t0 < cycles:
            pass
        out[0] = 1

    mhz = float(subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True).stdout.split()[0])
    out = cuda.device_array(1, np.int64)
    cuda.synchronize()
    spin[1, 1](out, int(ms * 1e3 * mhz))
    cuda.synchronize()


def app(case: str, mib: int) -> None:
    import numpy as np  # GPU side: imported in the process that launches under ncu, not when the script is read
    from numba import cuda  # GPU side: imported in the process that launches under ncu, not when the script is read

    @cuda.jit
    def probe_sum(x, out):
        i = cuda.grid(1)
        acc = 0.0
        for j in range(i, x.size, cuda.gridsize(1)):
            acc += x[j]
        out[i] = acc

    @cuda.jit
    def fill(x):
        for j in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            x[j] = 1.0

    n = mib * MIB // 4
    out = cuda.device_array(264 * 256, np.float32)
    if case == "device_fill":
        x = cuda.device_array(n, np.float32)
        fill[264, 256](x)
    else:
        x = cuda.to_device(np.ones(n, np.float32))
    if case == "evicted":
        y = cuda.to_device(np.ones(256 * MIB // 4, np.float32))
        out2 = cuda.device_array(264 * 256, np.float32)
        probe_sum[264, 256](y, out2)
    cuda.synchronize()
    probe_sum[264, 256](x, out)
    cuda.synchronize()


def _profile(ncu: str, kernel: str, flags: list, app_args: list) -> tuple[dict, int, int, str]:
    """ncu on this script as the app: (the last profiled launch's metrics, launches, rc, stderr tail)."""
    cmd = [ncu, "--csv", "--print-units", "base", "--clock-control", "none", "--replay-mode", "kernel",
           "--kernel-name", f"regex:{kernel}", *flags, sys.executable, __file__, *app_args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    got = {}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith('"')]
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        got.setdefault(r["ID"], {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    last = got[max(got, key=int)] if got else {}
    return last, len(got), p.returncode, p.stderr[-300:] if p.returncode else ""


def run_ncu(out_path: str, background: bool = False) -> None:
    ncu = "/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else "ncu"
    rows = []
    if background:
        for repeat in range(2):
            for ms in SPIN_MS:
                last, n, rc, err = _profile(ncu, "spin", SETUPS["many_pass"], ["--spin", str(ms)])
                rows.append({"setup": "many_pass", "case": "spin", "ms": ms, "repeat": repeat, "launches_profiled": n,
                             "duration_ms": last.get("gpu__time_duration.sum", float("nan")) / 1e6,
                             "dram_write_MB": last.get("dram__bytes_write.sum", float("nan")) / 1e6,
                             "lts_write_sectors": last.get("lts__t_sectors_op_write.sum", float("nan")),
                             "rc": rc, "stderr_tail": err})
                print(json.dumps(rows[-1]), flush=True)
    for setup, flags in ({} if background else SETUPS).items():
        for case in ("h2d", "device_fill", "evicted"):
            for mib in (64, 256):
                last, n, rc, err = _profile(ncu, "probe_sum", flags, ["--app", case, str(mib)])
                rows.append({"setup": setup, "case": case, "mib": mib, "launches_profiled": n,
                             "dram_read_MB": last.get("dram__bytes_read.sum", float("nan")) / 1e6,
                             "dram_write_MB": last.get("dram__bytes_write.sum", float("nan")) / 1e6,
                             "rc": rc, "stderr_tail": err})
                print(json.dumps(rows[-1]), flush=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    ver = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    import numba  # GPU side: imported in the process that launches under ncu, not when the script is read
    import numpy  # GPU side: imported in the process that launches under ncu, not when the script is read
    command = "python benchmarks/ncu_dirty_probe.py --ncu" + (" --background" if background else "") + f" --out {out_path}"
    json.dump({"command": command,
               "gpu": smi, "ncu": ver, "numba": numba.__version__, "numpy": numpy.__version__,
               "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d"), "rows": rows},
              open(out_path, "w"), indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", nargs=2)
    ap.add_argument("--spin", type=int)
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--background", action="store_true")
    ap.add_argument("--out", default="ncu_dirty_probe.json")
    a = ap.parse_args()
    if a.app:
        app(a.app[0], int(a.app[1]))
    elif a.spin:
        spin_app(a.spin)
    elif a.ncu:
        run_ncu(a.out, a.background)
