"""Sustained SM clock, power and clock-event reasons of the tensor set's largest launches, on
this machine's GPU (issue 29: the 8192^3 GEMMs ran at 1522-1700 MHz under Nsight against the
1830 MHz tensor clock the model times them at; is that the power limit?).

Each case (`CASES`, tensor-set names, built as `validate measure --suite tensor` builds them,
not checked against the reference) is launched back to back for `--seconds` while
`nvidia-smi --query-gpu=... -lms 50` samples the GPU; the samples after the first
`WARMUP_S` of the window are kept. Per case: the launches and their mean time (wall clock over
the window, synchronised every `SYNC_EVERY` launches), and the samples' median SM and memory
clock, median and largest power draw, the enforced power limit, the largest temperature, and
how many samples carried each clock-event reason (nvidia-smi's bit mask, decoded by
`REASONS`). Clocks are not locked. The GPU idles `REST_S` between cases.

    python -m validate.tensor_set.power_probe OUT.json [--seconds 3] [--only REGEX]

The GPU side imports the tensor set and its launcher only (CuPy, torch and Triton there).
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
import subprocess
import sys
import threading
import time

from validate.tensor_set.launch import launcher
from validate.tensor_set.suite import BY_NAME, spec

CASES = ("cuda_tma_wgmma/n8192", "cuda_tma_wgmma/n4096", "cuda_mma_double/n8192", "cuda_mma_single/n8192",
         "cuda_wmma_f16/n8192", "triton_matmul_f16/n8192", "triton_matmul_bf16/n8192", "triton_matmul_fp8/n8192",
         "cuda_sgemm/n8192", "triton_attention/s16k")
FIELDS = ("clocks.sm", "clocks.mem", "power.draw", "enforced.power.limit", "temperature.gpu")
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")    # newer, older drivers
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
           0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
           0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
WARMUP_S = 0.5
REST_S = 2.0
SYNC_EVERY = 4


def _reason_field() -> str:
    for f in REASON_FIELDS:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={f}", "--format=csv,noheader,nounits", "-i", "0"],
                           capture_output=True, text=True)
        if r.returncode == 0 and "Field" not in r.stdout:
            return f
    return ""


class Sampler:
    """nvidia-smi's samples of GPU 0 every 50 ms, each with the monotonic time it arrived."""

    def __init__(self, reason_field: str):
        self.fields = FIELDS + ((reason_field,) if reason_field else ())
        self.samples: list[tuple[float, list[str]]] = []
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={','.join(self.fields)}",
                                      "--format=csv,noheader,nounits", "-i", "0", "-lms", "50"],
                                     stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.samples.append((time.monotonic(), [x.strip() for x in line.split(",")]))

    def between(self, t0: float, t1: float) -> list[dict]:
        return [dict(zip(self.fields, v)) for t, v in list(self.samples) if t0 <= t <= t1]

    def stop(self) -> None:
        self.proc.terminate()


def _number(x: str) -> float | None:
    try:
        return float(x)
    except ValueError:
        return None


def summarise(samples: list[dict], reason_field: str) -> dict:
    def col(f):
        return [v for v in (_number(s.get(f, "")) for s in samples) if v is not None]
    out = {"samples": len(samples)}
    for f, how in (("clocks.sm", "median"), ("clocks.mem", "median"), ("power.draw", "median"),
                   ("enforced.power.limit", "median"), ("temperature.gpu", "max")):
        v = col(f)
        out[f"{f}_{how}"] = (statistics.median(v) if how == "median" else max(v)) if v else None
    p = col("power.draw")
    out["power.draw_max"] = max(p) if p else None
    if reason_field:
        counts: dict[str, int] = {}
        for s in samples:
            try:
                mask = int(s.get(reason_field, ""), 16)
            except ValueError:
                continue
            for bit, name in REASONS.items():
                if mask & bit:
                    counts[name] = counts.get(name, 0) + 1
        out["reasons_samples"] = counts
    return out


def run_case(name: str, seconds: float, sampler: Sampler, reason_field: str) -> dict:
    group, size = name.split("/")
    rec = {"name": name, "module": BY_NAME[group].module}
    try:
        case = spec(group).case(size)
        rec["params"] = dict(case.params)
        launch, _host, _event, sync = launcher(case, BY_NAME[group].module)
        launch()
        sync()
        n = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            for _ in range(SYNC_EVERY):
                launch()
            sync()
            n += SYNC_EVERY
        t1 = time.monotonic()
        rec.update(launches=n, mean_launch_us=(t1 - t0) / n * 1e6, window_s=t1 - t0)
        rec.update(summarise(sampler.between(t0 + WARMUP_S, t1), reason_field))
        del case
    except Exception as e:                          # noqa: BLE001 - recorded, the probe goes on
        rec["error"] = f"{type(e).__name__}: {e}"
    return rec


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--only", default=None, help="a regex on the case names")
    a = p.parse_args(argv)
    reason_field = _reason_field()
    names = [n for n in CASES if a.only is None or re.search(a.only, n)]
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.default_limit",
                          "--format=csv,noheader", "-i", "0"], capture_output=True, text=True).stdout.strip()
    sampler = Sampler(reason_field)
    rows = []
    try:
        for n in names:
            time.sleep(REST_S)
            rows.append(run_case(n, a.seconds, sampler, reason_field))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        sampler.stop()
    out = {"provenance": {"gpu": gpu, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                          "command": "python -m validate.tensor_set.power_probe " + " ".join(argv),
                          "clocks": "not locked (as found)", "reason_field": reason_field,
                          "sampling": f"nvidia-smi every 50 ms, the first {WARMUP_S} s of each window left out"},
           "cases": rows}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
