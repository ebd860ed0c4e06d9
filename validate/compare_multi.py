"""`python -m validate compare-multi`: gpusim's interconnect and collective predictions
against a `measure-multi` file (data/measurements/h200x4_multi.json), with summary figures.

Per record: every collective at its measured size and GPU count with NCCL's own choice
(`collectives`), all_reduce with the algorithm/protocol forced (`forced`), peer copies
(`copies`), and, where `validate.peer_kernels` is present, kernels reading or writing a
peer's memory (`kernels`). Targets (issue 8): busbw within 10% at every size >= 1 MiB and
time within 25% below 1 MiB, for every measured collective; peer copy bandwidth within
5% (copies >= 16 MiB: smaller copies are timed from the host and measure its ~4.5 us
submission cost). `choice_agreement_pct`: share of the calls in NCCL's debug log where
gpusim chose the same protocol.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

from gpusim.collectives import simulate
from gpusim.interconnect.copy_engine import peer_copies
from gpusim.specs.overrides import apply, resolve
from validate.datadir import DATA_DIR, measurement_file
from validate.figures import rel_err

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = DATA_DIR / "h200x4_multi.json"
MIB = 1 << 20
_NCCL_NAMES = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
               "Broadcast": "broadcast", "Reduce": "reduce"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=measurement_file, default=DEFAULT_DATA, help="measure-multi JSON (default %(default)s)")
    p.add_argument("--preset", default="h200", help="GPU preset or .toml (default h200: the calibrated H200)")
    p.add_argument("--table", action="store_true", help="print every record, not only the summary")
    p.add_argument("--out", type=Path, help="write the summary and the rows as JSON")
    p.add_argument("--no-kernels", action="store_true", help="leave out the peer-access kernels (slowest part)")


def nccl_choices(data: dict) -> dict[tuple[str, int, int], tuple[str, str, int]]:
    """(op, gpus, nccl-tests size) -> (algorithm, protocol, channels) from the NCCL INFO log."""
    out = {}
    for n, block in data.get("choices", {}).items():
        for line in block.get("log", "").splitlines():
            m = re.search(r"INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}",
                          line)
            if not m or m.group(1) not in _NCCL_NAMES:
                continue
            op, nbytes, gpus = _NCCL_NAMES[m.group(1)], int(m.group(2)), int(n)
            if op in ("all_gather", "reduce_scatter"):
                nbytes *= gpus                       # NCCL logs the per-rank block; nccl-tests' size is the whole
            out[(op, gpus, nbytes)] = (m.group(3).lower(), m.group(4).lower(), int(m.group(6)) - int(m.group(5)) + 1)
    return out


def _err(pred: float, meas: float) -> float:
    return 100.0 * rel_err(pred, meas)


def collective_rows(data: dict, gpu) -> list[dict]:
    rows = []
    for rec in data.get("collectives", []):
        if "time_us" not in rec:
            continue
        p = simulate(rec["op"], rec["bytes"], gpu, rec["gpus"])
        rows.append({"part": "collective", "op": rec["op"], "gpus": rec["gpus"], "bytes": rec["bytes"],
                     "measured_us": rec["time_us"], "predicted_us": p.time_us,
                     "measured_busbw": rec["busbw_GBps"], "predicted_busbw": p.busbw_GBps,
                     "time_err_pct": _err(p.time_us, rec["time_us"]),
                     "busbw_err_pct": _err(p.busbw_GBps, rec["busbw_GBps"]),
                     "algorithm": p.algorithm, "protocol": p.protocol, "channels": p.channels})
    for rec in data.get("forced", []):
        if "time_us" not in rec:
            continue
        p = simulate("all_reduce", rec["bytes"], gpu, rec["gpus"], rec["algorithm_forced"], rec["protocol_forced"])
        rows.append({"part": "forced", "op": "all_reduce", "gpus": rec["gpus"], "bytes": rec["bytes"],
                     "algorithm": p.algorithm, "protocol": p.protocol, "channels": p.channels,
                     "measured_us": rec["time_us"], "predicted_us": p.time_us,
                     "measured_busbw": rec["busbw_GBps"], "predicted_busbw": p.busbw_GBps,
                     "time_err_pct": _err(p.time_us, rec["time_us"]),
                     "busbw_err_pct": _err(p.busbw_GBps, rec["busbw_GBps"])})
    return rows


# NCCL variables of a probe setting (benchmarks/nccl_p2p_channels_probe.py) the spec can say
CHANNEL_SETTING_FIELDS = {"NCCL_MAX_P2P_NCHANNELS": "nccl.max_channels", "NCCL_P2P_NVL_CHUNKSIZE": "nccl.p2p_chunk_bytes"}


def channel_setting_rows(data: dict, gpu="h200") -> tuple[list[dict], list[str]]:
    """(rows, settings left out) for a p2p probe file (`benchmarks/nccl_p2p_channels_probe.py`):
    each setting whose NCCL variables map onto spec fields (`CHANNEL_SETTING_FIELDS`; the chunk
    as NCCL's log says it set it, which caps it at 512 KiB) simulated on `gpu` with them, against
    the median of its rounds per (op, size); the settings with other variables are left out."""
    specs, left_out = {}, []
    for name, info in data["provenance"]["settings"].items():
        env = info["env"]
        if not all(k in CHANNEL_SETTING_FIELDS for k in env):
            left_out.append(f"{name} ({', '.join(k for k in env if k not in CHANNEL_SETTING_FIELDS)})")
            continue
        values = {CHANNEL_SETTING_FIELDS[k]: int(v) for k, v in env.items()}
        for line in info["nccl_info"]:
            if "P2P Chunksize set to" in line:
                values["nccl.p2p_chunk_bytes"] = int(line.rsplit(" ", 1)[1])
        specs[name] = apply(gpu, values)
    times: dict = {}
    for r in data["records"]:
        if r["setting"] in specs:
            times.setdefault((r["setting"], r["op"], r["gpus"], r["bytes"]), []).append(r["time_us"])
    rows = []
    for (name, op, n, size), ts in sorted(times.items()):
        m = statistics.median(ts)
        p = simulate(op, size, specs[name], n)
        rows.append({"setting": name, "op": op, "gpus": n, "bytes": size, "measured_us": m, "predicted_us": p.time_us,
                     "time_err_pct": _err(p.time_us, m), "busbw_err_pct": _err(size / p.time_us, size / m),
                     "channels": p.channels, "protocol": p.protocol})
    return rows, left_out


def copy_rows(data: dict, gpu) -> list[dict]:
    rows = []
    for rec in data.get("copies", []):
        pairs = [(s, d, rec["bytes"]) for s, d in rec["pairs"]]
        p = peer_copies(gpu, pairs, gpus=max(4, max(max(s, d) for s, d, _ in pairs) + 1))
        bw = rec["bytes"] / (p["time_us"] * 1e3)
        rows.append({"part": "copy", "pattern": rec["pattern"], "bytes": rec["bytes"], "measured_us": rec["time_us"],
                     "predicted_us": p["time_us"], "measured_GBps": rec["GBps_per_copy"], "predicted_GBps": bw,
                     "time_err_pct": _err(p["time_us"], rec["time_us"]), "bw_err_pct": _err(bw, rec["GBps_per_copy"])})
    return rows


def summarize(rows: list[dict], choices: dict, gpu) -> dict:
    coll = [r for r in rows if r["part"] == "collective"]
    big = [r for r in coll if r["bytes"] >= MIB]
    small = [r for r in coll if r["bytes"] < MIB]
    forced = [r for r in rows if r["part"] == "forced"]
    copies = [r for r in rows if r["part"] == "copy" and r["bytes"] >= 16 * MIB]
    kernels = [r for r in rows if r["part"] == "kernel"]
    worst = lambda rs, k: max(rs, key=lambda r: abs(r[k])) if rs else None
    label = lambda r: f"{r['op']} x{r['gpus']} {r['bytes']}" if r else None
    s = {
        "collective_records": len(coll),
        "busbw_max_err_pct_ge_1MiB": round(max((abs(r["busbw_err_pct"]) for r in big), default=0), 2),
        "busbw_mape_pct_ge_1MiB": round(statistics.fmean(abs(r["busbw_err_pct"]) for r in big), 2) if big else None,
        "busbw_within_10pct_share_ge_1MiB": round(100 * sum(abs(r["busbw_err_pct"]) <= 10 for r in big) / len(big), 1)
        if big else None,
        "busbw_worst_ge_1MiB": label(worst(big, "busbw_err_pct")),
        "time_max_err_pct_lt_1MiB": round(max((abs(r["time_err_pct"]) for r in small), default=0), 2),
        "time_mape_pct_lt_1MiB": round(statistics.fmean(abs(r["time_err_pct"]) for r in small), 2) if small else None,
        "time_within_25pct_share_lt_1MiB": round(100 * sum(abs(r["time_err_pct"]) <= 25 for r in small) / len(small),
                                                 1) if small else None,
        "time_worst_lt_1MiB": label(worst(small, "time_err_pct")),
        "forced_records": len(forced),
        "forced_time_mape_pct": round(statistics.fmean(abs(r["time_err_pct"]) for r in forced), 2) if forced else None,
        "forced_busbw_mape_pct_ge_1MiB": round(statistics.fmean(abs(r["busbw_err_pct"]) for r in forced
                                                                if r["bytes"] >= MIB), 2) if forced else None,
        "copy_bw_max_err_pct_ge_16MiB": round(max((abs(r["bw_err_pct"]) for r in copies), default=0), 2),
        "copy_bw_mape_pct_ge_16MiB": round(statistics.fmean(abs(r["bw_err_pct"]) for r in copies), 2)
        if copies else None,
    }
    if choices:
        agree = [r["protocol"] == choices[(r["op"], r["gpus"], r["bytes"])][1]
                 for r in coll if (r["op"], r["gpus"], r["bytes"]) in choices]
        s["choice_records"] = len(agree)
        s["choice_agreement_pct"] = round(100 * sum(agree) / len(agree), 1) if agree else None
    if kernels:
        s["peer_kernel_max_err_pct"] = round(max(abs(r["error_pct"]) for r in kernels), 2)
    s["preset"] = gpu.name
    return s


def compare(data_path: Path = DEFAULT_DATA, preset="h200", kernels: bool = True) -> tuple[dict, list[dict]]:
    data = json.loads(Path(data_path).read_text())
    gpu = resolve(preset)
    rows = collective_rows(data, gpu) + copy_rows(data, gpu)
    if kernels and data.get("kernels"):
        try:
            from validate import (
                peer_kernels,  # optional: the peer kernels need numba.cuda (validate.microbench); without it, no kernel rows
            )
        except ImportError:
            peer_kernels = None
        if peer_kernels is not None:
            for r in peer_kernels.compare(data_path):
                rows.append({"part": "kernel", **r})
    return summarize(rows, nccl_choices(data), gpu), rows


def run(args) -> int:
    t = time.perf_counter()
    summary, rows = compare(args.data, args.preset, kernels=not args.no_kernels)
    if args.table:
        print(f"{'part':10s} {'op/pattern':16s} {'gpus':>4s} {'bytes':>11s} {'meas us':>10s} {'pred us':>10s} "
              f"{'time err':>9s} {'bw err':>8s}  choice")
        for r in rows:
            name = r.get("op") or r.get("pattern") or r.get("name", "")
            bw_err = r.get("busbw_err_pct", r.get("bw_err_pct"))
            t_err = r.get("time_err_pct", r.get("error_pct"))
            print(f"{r['part']:10s} {str(name):16s} {r.get('gpus', ''):>4} {r.get('bytes', ''):>11} "
                  f"{r.get('measured_us', 0):10.1f} {r.get('predicted_us', 0):10.1f} {t_err:+8.1f}% "
                  f"{'' if bw_err is None else f'{bw_err:+7.1f}%'}  {r.get('algorithm', '')}/{r.get('protocol', '')}")
    summary["wall_s"] = round(time.perf_counter() - t, 2)
    for k, v in summary.items():
        print(f"{k}: {v}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"command": "python -m validate compare-multi " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in (("data", args.data), ("preset", args.preset))),
            "summary": summary, "rows": rows}, indent=1, default=str))
    return 0
