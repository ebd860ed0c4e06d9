"""`python -m validate measure`: run every program of `programs/` (at all its sizes) and
every microbenchmark of `validate.microbench` on this machine's NVIDIA GPU through Numba,
and write `data/measurements/<gpu>.json` (provenance + one record per kernel). `--suite heldout`
runs the held-out suite of `validate.heldout` instead (records keyed "heldout"; write it to
its own file, e.g. `--out data/measurements/h200_heldout.json`), `--suite heldout2` the second
held-out suite of `validate.heldout2` (records keyed "heldout2"; its measured sizes, not its
'default'), `--suite all` all three.
`--suite mechanisms` runs issue 24's mechanism microbenchmarks (`validate.mechanisms`,
records keyed "mechanism", e.g. `--out data/measurements/h200_mechanisms.json`) with the extra
Nsight counters of `validate.ncu.MECHANISM_METRICS`.

Reproduce, on the GPU machine, from the repository root (numba, numba-cuda, numpy < 2.5
and Nsight Compute's `ncu`; nothing of gpusim is imported):

    python -m validate measure [--gpu-name h100] [--out data/measurements/h100.json] [--suite heldout|heldout2]

Method, per kernel (a program case or a microbenchmark size), in two worker processes
(`validate.measure_worker`):
1. events pass (no profiler): build the case (seed 0), copy inputs to the device, write
   a 256 MiB scratch buffer (pushes earlier data out of L2), launch once and check every
   output against the numpy reference ("check"); then time with CUDA events: the median
   of 3 isolated launches (event, launch, event, synchronize: "event_single_us", launch
   latency included) and the median interval between events recorded after each of N
   back-to-back launches ("event_time_us", N in 5..100 so that about 0.1 s is spent:
   "event_launches"). A kernel shorter than Numba's host-side launch cost (~10-20 us)
   measures that cost here, not the kernel.
2. ncu pass: the same worker launches every case exactly once under
   `ncu --clock-control none --cache-control all` (see `validate.ncu`), which replays each
   kernel once per counter pass; the outputs are checked again ("check_ncu").
   `gpu__time_duration.sum` (ns, launch overhead excluded, caches cold) is the primary
   time. Warp-stall PC samples (`smsp__pcsamp_warps_issue_stalled_*`) come from the same
   run (`--no-stalls` leaves them out).
nvidia-smi reads the clocks before and after; the SM clock the kernels ran at is the
median of sm__cycles_elapsed.max / gpu__time_duration.sum over kernels of >= 20 us.
"""
from __future__ import annotations

import signal
import types
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from validate.datadir import DATA_DIR

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("programs", "heldout", "heldout2", "all", "mechanisms", "tensor")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu-name", help="short name for the data file (default from the device: h100, h200, ...)")
    p.add_argument("--out", type=Path, help="output JSON (default data/measurements/<gpu-name>.json)")
    p.add_argument("--suite", choices=SUITES, default="programs", help="programs: the programs and the "
                   "microbenchmarks (default); heldout: the held-out suite (validate.heldout); heldout2: the second "
                   "held-out suite's measured sizes (validate.heldout2); all: all three; "
                   "mechanisms: issue 24's mechanism microbenchmarks (validate.mechanisms); tensor: the tensor set "
                   "(validate.tensor_set: CUDA C++ through CuPy, Triton through torch)")
    p.add_argument("--only", default=None, help="regex on 'group/size' (e.g. 'vector_add|pointer_chase/fp_4KiB')")
    p.add_argument("--skip", default=None, help="regex on 'group/size' of kernels to leave out")
    p.add_argument("--no-ncu", action="store_true", help="events pass only (no Nsight Compute counters)")
    p.add_argument("--no-events", action="store_true", help="ncu pass only")
    p.add_argument("--no-stalls", action="store_true", help="leave out the PC-sampling warp-stall metrics")
    p.add_argument("--ncu", help="path of the ncu executable (default: found on PATH)")
    p.add_argument("--ncu-chunks", type=int, default=2, help="profile the kernels in this many ncu runs (a run "
                   "that fails or times out loses only its own kernels)")
    p.add_argument("--timeout", type=float, default=None, help="seconds allowed to the events pass (it keeps "
                   "what it finished)")
    p.add_argument("--ncu-timeout", type=float, default=None, help="seconds allowed to each ncu chunk")
    p.add_argument("--workdir", type=Path, help="folder for the workers' files and ncu's log (default: a temp folder)")
    p.add_argument("--dry-run", action="store_true", help="--suite tensor only: build and predict every entry "
                   "with gpusim instead of measuring (no GPU; validate.tensor_set.dryrun)")
    p.add_argument("--worker", choices=("events", "ncu"), help=argparse.SUPPRESS)
    p.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--cases", type=Path, help=argparse.SUPPRESS)      # JSON list of "group/size" to run


# ---- what to run -------------------------------------------------------------------

def selected(only: str | None, skip: str | None, suite: str = "programs") -> list[tuple[str, str, str]]:
    """(kind, group, size) for every size of every kernel of `suite`, in run order: program
    and microbenchmark sizes ("programs"), held-out sizes ("heldout"), the second held-out suite's
    measured sizes ("heldout2": all but 'default'), all three ("all"), or the mechanism
    microbenchmarks' measured sizes ("mechanisms": their 'default' sizes are for the simulator only)."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose one of {', '.join(SUITES)}")
    out = []
    if suite in ("programs", "all"):
        import programs
        from validate.microbench import MICROBENCHMARKS
        out += [("program", name, size) for name, spec in programs.PROGRAMS.items() for size in spec.sizes]
        out += [("microbenchmark", name, size) for name, spec in MICROBENCHMARKS.items() for size in spec.sizes]
    if suite in ("heldout", "all"):
        from validate.heldout import HELDOUT
        out += [("heldout", name, size) for name, spec in HELDOUT.items() for size in spec.sizes]
    if suite in ("heldout2", "all"):
        from validate.heldout2 import HELDOUT2, measured_sizes     # lazy, as the other suites: numba kernels
        out += [("heldout2", name, size) for name in HELDOUT2 for size in measured_sizes(name)]
    if suite == "mechanisms":
        from validate.mechanisms import MECHANISMS
        out += [("mechanism", name, size) for name, spec in MECHANISMS.items() for size in spec.sizes
                if size != "default"]
    if suite == "tensor":
        from validate.tensor_set.suite import cases     # the entries whose programs exist here
        out += [("tensor", name, size) for name, size in cases()]
    keep = lambda g, s: (only is None or re.search(only, f"{g}/{s}")) and not (skip and re.search(skip, f"{g}/{s}"))
    return [(k, g, s) for k, g, s in out if keep(g, s)]


def spec_of(kind: str, group: str):
    if kind == "program":
        import programs
        return programs.get(group)
    if kind == "heldout":
        from validate.heldout import HELDOUT
        return HELDOUT[group]
    if kind == "heldout2":
        from validate.heldout2 import HELDOUT2
        return HELDOUT2[group]
    if kind == "mechanism":
        from validate.mechanisms import MECHANISMS
        return MECHANISMS[group]
    if kind == "tensor":
        from validate.tensor_set.suite import spec
        return spec(group)
    from validate.microbench import MICROBENCHMARKS
    return MICROBENCHMARKS[group]


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    return v


# ---- orchestrator --------------------------------------------------------------------

def _smi() -> dict:
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,pstate"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30, check=True)
        vals = [v.strip() for v in r.stdout.splitlines()[0].split(",")]
        head = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
        m = re.search(r"CUDA Version:\s*([\d.]+)", head)
        return {**dict(zip(q.split(","), vals)), "cuda_version": m.group(1) if m else None}
    except Exception as e:                               # noqa: BLE001 - informational only
        return {"error": f"{type(e).__name__}: {e}"}


def _worker_cmd(args, mode: str, out: Path, only: str | None = None, cases: Path | None = None,
                suite: str | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "validate", "measure", "--worker", mode, "--worker-out", str(out),
           "--suite", suite or args.suite]
    only = only if only is not None else args.only
    if only:
        cmd += ["--only", only]
    if args.skip:
        cmd += ["--skip", args.skip]
    if cases:
        cmd += ["--cases", str(cases)]
    return cmd


def _call(cmd: list[str], timeout: float | None, stdout=None) -> int:
    """Run `cmd` in its own process group; on timeout kill the whole group (ncu and the
    worker it started) and return 124."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=stdout, start_new_session=True)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return 124


def _run_ncu(args, workdir: Path) -> tuple[list, dict]:
    """Profile the worker under ncu, in chunks; ([(launch record, ncu kernel or None)], notes)."""
    from validate import ncu
    exe = args.ncu or ncu.find_ncu()
    stalls = [] if args.no_stalls else [ncu.STALL_REGEX, ncu.SAMPLE_COUNT]
    mech = list(ncu.MECHANISM_METRICS) if args.suite == "mechanisms" else \
        list(ncu.TENSOR_METRICS) if args.suite == "tensor" else []
    notes = {"ncu": exe, "dropped_metrics": []}
    if mech:                               # drop the counters this ncu does not list for the device, up front
        try:
            q = subprocess.run([exe, "--query-metrics"], capture_output=True, text=True, timeout=120)
            notes["dropped_metrics"] = ncu.not_listed(mech, ncu.listed_metrics(q.stdout))
        except Exception:                                # noqa: BLE001 - the preflight below still drops them
            pass
        mech = [m for m in mech if m not in notes["dropped_metrics"]]
    metrics = list(ncu.METRICS) + list(ncu.EXTRA) + mech + stalls
    try:
        notes["ncu_version"] = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                              timeout=60).stdout.strip().splitlines()[-1]
    except Exception:                                    # noqa: BLE001
        notes["ncu_version"] = "unknown"
    # Preflight on the smallest kernel: drop what this ncu/chip refuses -- the names it
    # reports (one a try), else the mechanism counters, else the optional pipe counters, else
    # PC sampling, else all but the core list.
    for _ in range(5 + len(mech)):
        log = workdir / "ncu_preflight.csv"
        r = subprocess.run(ncu.command(exe, metrics, str(log), _worker_cmd(args, "ncu", workdir / "pre.json",
                                                                          "^launch_overhead/default$",
                                                                          suite="programs")),
                           capture_output=True, text=True, cwd=ROOT)
        text = (log.read_text() if log.exists() else "") + r.stdout + r.stderr
        bad = ncu.unknown_metrics(text)
        if r.returncode == 0 and ncu.parse_csv(text) and not bad:
            break
        drop = [m for m in metrics if any(b in m for b in bad)]
        for group in (mech, ncu.EXTRA, stalls, [m for m in metrics if m not in ncu.CORE]):
            if not drop:
                drop = [m for m in metrics if m in group]
        if not drop:
            raise RuntimeError(f"ncu preflight failed (rc {r.returncode}):\n{text[-3000:]}")
        notes["dropped_metrics"] += drop
        metrics = [m for m in metrics if m not in drop]
        (workdir / f"ncu_preflight_failed{len(notes['dropped_metrics'])}.log").write_text(text[-20000:])
    notes["metrics_requested"] = metrics
    names = [f"{g}/{z}" for _, g, z in selected(args.only, args.skip, args.suite)]
    k = max(1, min(args.ncu_chunks, len(names)))
    pairs, notes["ncu_returncodes"] = [], []
    for c in range(k):
        part = names[c * len(names) // k:(c + 1) * len(names) // k]
        cases, log, manifest = (workdir / f"ncu_cases{c}.json", workdir / f"ncu{c}.csv", workdir / f"ncu_worker{c}.json")
        cases.write_text(json.dumps(part))
        with open(workdir / f"ncu{c}.stdout", "w") as so:
            rc = _call(ncu.command(exe, metrics, str(log), _worker_cmd(args, "ncu", manifest, cases=cases)),
                       args.ncu_timeout, stdout=so)
        notes["ncu_returncodes"].append(rc)
        got = json.loads(manifest.read_text())["records"] if manifest.exists() else []
        text = (log.read_text() if log.exists() else "") + (workdir / f"ncu{c}.stdout").read_text()
        try:
            pairs += ncu.match(got, ncu.parse_csv(text))
        except ValueError as e:                          # out of step: keep the checks, not the counters
            notes.setdefault("errors", []).append(str(e))
            pairs += [(r, None) for r in got]
        if manifest.exists():
            notes.setdefault("device", json.loads(manifest.read_text())["device"])
    return pairs, notes


def _short_name(gpu_name: str) -> str:
    m = re.search(r"\b([A-Z]+\d+[A-Z]*)\b", gpu_name.replace("NVIDIA", ""))
    return (m.group(1) if m else gpu_name.split()[-1]).lower()


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def summary(kernels: list[dict]) -> str:
    """A short table: each kernel's time (ncu and events), check, and derived figures."""
    lines = [f"{'kernel':34} {'ncu_us':>10} {'event_us':>9}  check  derived"]
    for k in kernels:
        ns = k.get("metrics", {}).get("gpu__time_duration.sum")
        ev = k.get("event_time_us")
        ok = "ok" if k.get("check") == "passed" and k.get("check_ncu", "passed") == "passed" else "FAIL"
        d = " ".join(f"{a}={b:.4g}" for a, b in k.get("derived", {}).items())
        lines.append(f"{k['name'][:34]:34} {ns / 1e3 if ns else float('nan'):10.2f} "
                     f"{ev if ev is not None else float('nan'):9.2f}  {ok:5}  {d}")
    return "\n".join(lines)


def _clock_mhz(records: list[dict]) -> float | None:
    r = [k["metrics"]["sm__cycles_elapsed.max"] / k["metrics"]["gpu__time_duration.sum"] * 1e3
         for k in records if k.get("metrics", {}).get("gpu__time_duration.sum", 0) >= 20_000
         and "sm__cycles_elapsed.max" in k["metrics"]]
    return round(statistics.median(r), 1) if r else None


def merge(events: list[dict], pairs: list[tuple[dict, dict | None]], sms: int) -> list[dict]:
    """One record per kernel: the events pass's check, times and outputs, the ncu pass's
    metrics, check and outputs, and a microbenchmark's derived figures."""
    from validate.microbench import derive
    by_name: dict[str, dict] = {}
    for rec in events:
        r = dict(rec)
        r["outputs_events"] = r.pop("outputs", {})
        by_name[r["name"]] = r
    for rec, prof in pairs:
        r = by_name.setdefault(rec["name"], {k: v for k, v in rec.items() if k not in ("check", "outputs")})
        r.setdefault("check", rec.get("check", "not run"))
        r["check_ncu"] = rec.get("check", "not run")
        r["outputs"] = rec.get("outputs", {})
        if prof is not None:
            r["metrics"] = prof["metrics"]
            if prof["unavailable"]:
                r["metrics_unavailable"] = prof["unavailable"]
    out = []
    for r in by_name.values():
        r.pop("launched", None)
        r.pop("host_seconds", None)
        if not r.get("outputs"):
            r.pop("outputs", None)
        if not r.get("outputs_events"):
            r.pop("outputs_events", None)
        if "microbenchmark" in r and "grid" in r:
            r["derived"] = derive(r, sms)
        out.append(r)
    return out


def write_data(path: Path, provenance: dict, kernels: list[dict]) -> None:
    """The data file: provenance indented, then one line per kernel record (diffs stay readable)."""
    body = ",\n".join("  " + json.dumps(_jsonable(k), separators=(", ", ": ")) for k in kernels)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"provenance": ' + json.dumps(_jsonable(provenance), indent=1).replace("\n", "\n ")
                    + ',\n "kernels": [\n' + body + "\n ]\n}\n")


def _simpy_placeholder() -> None:
    """The tensor set's programs build `gpusim.CudaSource`s, so gpusim must import; on a GPU
    machine without simpy (GPU_NOTES.md) its simulator is not run, and an empty module stands
    in for simpy (any use of it fails loudly)."""
    try:
        import simpy  # noqa: F401
    except ImportError:
        sys.modules["simpy"] = types.ModuleType("simpy", "placeholder: validate measure --suite tensor runs no "
                                                "simulation; install simpy to simulate")


def _tensor_left_out() -> dict:
    """{entry: why} of the tensor-set entries whose programs do not import here."""
    from validate.tensor_set.suite import available
    return available()[1]


def run(args) -> int:
    if args.suite == "tensor":
        _simpy_placeholder()
    if getattr(args, "dry_run", False):
        if args.suite != "tensor":
            raise SystemExit("validate measure: --dry-run is for --suite tensor")
        from validate.tensor_set import dryrun
        return dryrun.run(argparse.Namespace(all_sizes=False, gpu=args.gpu_name or "h100", time_limit=300.0,
                                             predict=False, out=args.out))
    if args.worker:
        from validate.measure_worker import worker
        return worker(args)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="validate_measure_"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    smi_before = _smi()
    events, device, notes, pairs = [], {}, {}, []
    if not args.no_events:
        ev_out = workdir / "events.json"
        _call(_worker_cmd(args, "events", ev_out), args.timeout)
        if ev_out.exists():
            data = json.loads(ev_out.read_text())
            events, device = data["records"], data["device"]
    smi_mid = _smi()
    if not args.no_ncu:
        pairs, notes = _run_ncu(args, workdir)
        device = device or notes.get("device", {})
    smi_after = _smi()
    kernels = merge(events, pairs, device.get("sm_count") or 132)
    gpu = args.gpu_name or _short_name(device.get("gpu_name", "gpu"))
    out = args.out or DATA_DIR / f"{gpu}.json"
    prov = {
        "gpu_name": device.get("gpu_name"), "gpu_short_name": gpu,
        "driver": smi_before.get("driver_version"), "cuda_version": smi_before.get("cuda_version"),
        **{k: device.get(k) for k in ("cuda_driver_api", "cuda_runtime", "numba", "numba_cuda", "numpy", "python",
                                      "compute_capability", "sm_count", "l2_bytes")},
        "ncu": notes.get("ncu_version"), "ncu_metrics_dropped": notes.get("dropped_metrics", []),
        "sm_clock_policy": "--clock-control none: clocks as found, not locked; SM clock read by nvidia-smi "
                           f"before: {smi_before.get('clocks.sm')}, between passes: {smi_mid.get('clocks.sm')}, "
                           f"after: {smi_after.get('clocks.sm')} (max {smi_before.get('clocks.max.sm')})",
        "sm_clock_mhz_observed": _clock_mhz(kernels),
        "sm_clock_mhz_observed_how": "median of sm__cycles_elapsed.max / gpu__time_duration.sum over kernels >= 20 us",
        "cache_policy": "ncu --cache-control all: L1/L2 flushed before every replay pass (cold caches); "
                        "events pass: back-to-back launches (warm)",
        "nvidia_smi": {"before": smi_before, "between_passes": smi_mid, "after": smi_after},
        "date": started.isoformat(timespec="seconds"),
        "command": "python -m validate measure" + (f" --gpu-name {args.gpu_name}" if args.gpu_name else "")
                   + (f" --suite {args.suite}" if args.suite != "programs" else "")
                   + (f" --only '{args.only}'" if args.only else "") + (f" --skip '{args.skip}'" if args.skip else "")
                   + (" --no-stalls" if args.no_stalls else "") + " --out " + _relative(out),
        **({"tensor_set_left_out": _tensor_left_out(), "tensor_stack": device.get("tensor_stack")}
           if args.suite == "tensor" else {}),
        "host": platform.node(),
        "seed": 0,
        "method": __doc__.split("Method, per kernel", 1)[1].strip() if "Method, per kernel" in __doc__ else "",
    }
    write_data(out, prov, kernels)
    failed = [k["name"] for k in kernels if k.get("check") != "passed" or k.get("check_ncu", "passed") != "passed"]
    no_metrics = [k["name"] for k in kernels if not k.get("metrics")] if not args.no_ncu else []
    print(summary(kernels))
    print(f"wrote {out}: {len(kernels)} kernels; {len(failed)} failed checks {failed[:10]}; "
          f"{len(no_metrics)} without ncu metrics {no_metrics[:10]}")
    return 0 if not failed and not no_metrics else 1
