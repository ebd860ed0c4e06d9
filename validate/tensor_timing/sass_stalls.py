"""Where the GPU's warps wait, per SASS instruction, in a few tensor-set kernels (issue 29):
Nsight Compute's source counters (warp-state samples and executed instructions per SASS
instruction) of the cases whose predicted cycles are short of the measured ones, to set
beside gpusim's per-instruction stall table (`gpusim.launch(...).instructions_frame()`).

    python -m validate.tensor_timing.sass_stalls [OUT_DIR] [CASE ...]   # about 3 minutes on an H100

CASEs (tensor-set launch names) replace the default list.

For each case: `ncu --section SourceCounters --section WarpStateStats` over the tensor set's own
launch worker (`validate measure --worker ncu --suite tensor --only CASE`, which launches the
case once as `validate measure` does), the report kept as CASE.ncu-rep, and its SASS source
page exported as CASE_sass.csv (per instruction: address, SASS text, warp-state samples by
reason, instructions executed). Clocks as found and caches flushed, as `validate measure`
profiles. A case that fails leaves its ncu log (CASE.log) and the run goes on.

What it answers: the mma.sync GEMMs' `wait` samples (31% of mma_double/n1024's, 4% in the
model) and `short_scoreboard` (24% against 13%): which instructions (HMMA after HMMA, the
LDSM -> HMMA dependency, address arithmetic) carry them; the Triton matmul's and attention's
`barrier` samples (40% against 20%): which BAR and which wait before it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from validate import ncu

CASES = ("cuda_mma_double/n1024", "cuda_mma_single/n512", "cuda_wmma_f16/n1024", "triton_matmul_f16/n1024",
         "triton_matmul_fp8/n1024", "triton_attention/s1k")
TIMEOUT_S = 240


def profile(exe: str, case: str, out: Path) -> dict:
    """One case's report and SASS page into `out`; a summary of what came back."""
    stem = case.replace("/", "_")
    rep, log = out / f"{stem}.ncu-rep", out / f"{stem}.log"
    worker = [sys.executable, "-m", "validate", "measure", "--worker", "ncu", "--worker-out",
              str(out / f"{stem}_worker.json"), "--suite", "tensor", "--only", f"^{case}$"]
    cmd = [exe, "--section", "SourceCounters", "--section", "WarpStateStats", "--clock-control", "none",
           "--cache-control", "all", "--replay-mode", "kernel", "--target-processes", "all",
           "--import-source", "no", "-f", "-o", str(rep.with_suffix("")), *worker]
    t = time.time()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=TIMEOUT_S).returncode
    got = {"case": case, "rc": rc, "seconds": round(time.time() - t, 1), "report": rep.exists()}
    if rep.exists():
        csv = out / f"{stem}_sass.csv"
        with open(csv, "w") as f:
            r = subprocess.run([exe, "--import", str(rep), "--page", "source", "--print-source", "sass", "--csv"],
                               stdout=f, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
        got["sass_csv_rc"] = r.returncode
        got["sass_csv_lines"] = sum(1 for _ in open(csv))
        if r.returncode:
            got["sass_csv_error"] = r.stderr[-500:]
    return got


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    exe = ncu.find_ncu()
    results = []
    for case in argv[1:] or CASES:
        try:
            results.append(profile(exe, case, out))
        except subprocess.TimeoutExpired:
            results.append({"case": case, "error": f"over {TIMEOUT_S} s"})
        print(json.dumps(results[-1]), flush=True)
    (out / "sass_stalls.json").write_text(json.dumps({"ncu": exe, "cases": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
