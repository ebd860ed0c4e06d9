"""Peer-memory kernels (NVLink loads and stores) predicted against the measured ones.

`data/measurements/<gpu>x<n>_multi.json` (written by `python -m validate measure-multi`) holds,
under "kernels", `validate.microbench`'s bw_read / bw_write / bw_copy (1024 x 256 threads,
256 MiB int32 buffers, reps=1) launched on GPU `launch_gpu` with the buffer of the record's
case on GPU `buffer_gpu` (and, for reference, on the launching GPU):

| case             | launch                        | on the peer |
|------------------|-------------------------------|-------------|
| read             | bw_read(x, acc, 1)            | x           |
| write            | bw_write(y, 1)                | y           |
| copy_from_peer   | bw_copy(x, local, 1)          | x           |
| copy_to_peer     | bw_copy(local, y, 1)          | y           |

`predict(record, gpu)` rebuilds one record's launch and runs it through
`gpusim.launch(timing=True, peer_args=...)` (sampled timing, functional execution of the
sampled blocks only, as `validate.predict.predict` does) on `gpu` with `system.gpu_count`
raised to cover the buffer's GPU; `compare(data_path)` does it for every kernel record.

The measured times are the mean per launch of 10 back-to-back launches between two CUDA
events (median of 5 intervals), device arrays converted once, so the GPU never waits for the
host (the first method, single launches on CuPy arrays, included 80-125 us of host launch
cost; its records are kept under "kernels_first_method"). `compare` also reports each peer
case's time minus its local twin's (`peer_extra_*`): what the peer placement costs.
`python -m validate.peer_kernels [--data FILE] [--preset NAME] [--set KEY=VALUE ...]` prints the table.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import gpusim
from gpusim.specs import overrides
from gpusim.timing.engine import TimingOptions
from validate import microbench
from validate.datadir import DATA_DIR, measurement_file

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = DATA_DIR / "h200x4_multi.json"
DURATION = "gpu__time_duration.sum"
COUNTERS = ("nvltx__bytes.sum", "nvlrx__bytes.sum", "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
            "dram__bytes_read.sum", "dram__bytes_write.sum")

# case -> (kernel name, arguments from (n, threads), index of the argument that lives on buffer_gpu);
# x = arange (read), y = -1 (written), acc = zeros(threads) int64, local = arange, as measure_multi has them
CASES = {
    "read": ("bw_read", lambda n, T: (np.arange(n, dtype=np.int32), np.zeros(T, np.int64), 1), 0),
    "write": ("bw_write", lambda n, T: (np.full(n, -1, np.int32), 1), 0),
    "copy_from_peer": ("bw_copy", lambda n, T: (np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32), 1), 0),
    "copy_to_peer": ("bw_copy", lambda n, T: (np.arange(n, dtype=np.int32), np.full(n, -1, np.int32), 1), 1),
}


def record_name(record: dict) -> str:
    where = "peer" if record["buffer_gpu"] != record["launch_gpu"] else "local"
    return f"{record['kernel']}/{record['case']}@{where}"


def system_spec(gpu, record: dict):
    """`gpu` (preset name, .toml or GPUSpec) with system.gpu_count covering the record's GPUs."""
    spec = gpusim.api.resolve_gpu(gpu)
    need = max(record["buffer_gpu"], record["launch_gpu"]) + 1
    if need > 1 and spec.system.gpu_count < need:
        spec = overrides.apply(spec, {"system.gpu_count": max(need, 2)}, name=spec.name)
    return spec


def predict(record: dict, gpu="h200") -> dict:
    """Predicted time (`time_us`) and memory counters of one kernel record (see module doc)."""
    kname, build, on_buffer = CASES[record["case"]]
    if record["kernel"] != kname:
        raise ValueError(f"record {record_name(record)}: case {record['case']!r} runs {kname}, "
                         f"the record names {record['kernel']}")
    n = record["bytes"] // 4
    grid, block = tuple(record["grid"]), tuple(record["block"])
    args = build(n, int(np.prod(grid)) * int(np.prod(block)))
    # the simulated launch runs on GPU 0: relabel the (symmetric) system's GPUs 0 <-> launch_gpu
    peer = record["buffer_gpu"] if record["buffer_gpu"] != 0 else record["launch_gpu"]
    peer_args = {on_buffer: peer} if record["buffer_gpu"] != record["launch_gpu"] else None
    spec = system_spec(gpu, record)
    t = time.perf_counter()
    r = gpusim.launch(getattr(microbench, kname), grid, block, args, gpu=spec, timing=True, peer_args=peer_args,
                      timing_options=TimingOptions(mode="auto", functional="sampled"))
    m = r.metrics
    out = {"time_us": float(m[DURATION]) / 1000.0, "timing__bound": m.get("timing__bound"),
           "timing__sampling_error_pct": float(m.get("timing__sampling_error_pct", 0.0)),
           "seconds": time.perf_counter() - t}
    out.update({c: float(m.get(c, 0.0)) for c in COUNTERS})
    return out


def compare(data_path=DEFAULT_DATA, gpu="h200") -> list[dict]:
    """Every kernel record of `data_path` predicted on `gpu`: name, measured_us, predicted_us,
    error_pct (plus the case, the buffer's GPU, the bound and the NVLink and memory counters).
    A peer record whose case was also measured with the buffer local gets the paired figures
    `peer_extra_{measured,predicted}_us` (peer time minus local time) and `peer_extra_error_pct`:
    what the peer placement costs."""
    data = json.loads(Path(data_path).read_text())
    rows = []
    for rec in data.get("kernels", []):
        p = predict(rec, gpu)
        meas = float(rec["time_us"])
        rows.append({"name": record_name(rec), "case": rec["case"], "buffer_gpu": rec["buffer_gpu"],
                     "launch_gpu": rec["launch_gpu"], "bytes": rec["bytes"],
                     "measured_us": meas, "predicted_us": p["time_us"],
                     "error_pct": 100.0 * (p["time_us"] - meas) / meas,
                     "measured_GBps": rec["bytes"] / meas / 1e3, "predicted_GBps": rec["bytes"] / p["time_us"] / 1e3,
                     **{k: v for k, v in p.items() if k != "time_us"}})
    local = {r["case"]: r for r in rows if r["buffer_gpu"] == r["launch_gpu"]}
    for r in rows:
        ref = local.get(r["case"])
        if r["buffer_gpu"] == r["launch_gpu"] or ref is None:
            continue
        em = r["measured_us"] - ref["measured_us"]
        ep = r["predicted_us"] - ref["predicted_us"]
        r.update(peer_extra_measured_us=em, peer_extra_predicted_us=ep,
                 peer_extra_error_pct=100.0 * (ep - em) / em if em else float("nan"))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validate.peer_kernels", description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=measurement_file, default=DEFAULT_DATA)
    ap.add_argument("--preset", default="h200", help="GPU preset or .toml spec (default h200)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="spec override, repeatable")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    gpu = a.preset
    if a.set:
        gpu = overrides.apply(a.preset, overrides.parse_sets(a.set))
    rows = compare(a.data, gpu)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'kernel':30s} {'measured us':>11s} {'predicted':>9s} {'error %':>8s} {'GB/s meas':>9s} {'pred':>6s}  "
          f"{'peer-local meas':>15s} {'pred':>6s} {'error %':>7s}  bound")
    for r in rows:
        extra = (f"{r['peer_extra_measured_us']:15.1f} {r['peer_extra_predicted_us']:6.1f} "
                 f"{r['peer_extra_error_pct']:+7.1f}") if "peer_extra_error_pct" in r else " " * 30
        print(f"{r['name']:30s} {r['measured_us']:11.1f} {r['predicted_us']:9.1f} {r['error_pct']:+8.1f} "
              f"{r['measured_GBps']:9.1f} {r['predicted_GBps']:6.1f}  {extra}  {r['timing__bound']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
