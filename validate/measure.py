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

Reproduce, on the GPU machine, from the repository root (numba, numba-cuda, numpy < 2.5,
Nsight Compute's `ncu`, and simpy: the CLI imports gpusim's error types, though the workers
time nothing of gpusim; on this project's lent GPU machine, whose image has numpy 2.5, run
`bash benchmarks/device_setup.sh && . /opt/gpusim-kit/env.sh` first):

    python -m validate measure [--gpu-name h100] [--out data/measurements/h100.json] [--suite heldout|heldout2]

Method, per kernel (a program case or a microbenchmark size), in two worker processes
(`validate.measure_worker`):
1. events pass (no profiler): build the case (seed 0), copy inputs to the device, write
   a 256 MiB scratch buffer (pushes earlier data out of L2), launch once and check every
   output against the numpy reference ("check"), and record each array argument's device
   address ("arg_addresses": `validate compare` places gpusim's arrays there, modulo 2 MiB;
   `validate.address_merge` adds them to files measured before); then time with CUDA events: the median
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

import argparse
import datetime
import json
import platform
import sys
import tempfile
import types
from pathlib import Path

from validate.datadir import DATA_DIR, measurement_file
from validate.datafile import clock_mhz, merge, relative, short_name, summary, write_data
from validate.measure_worker import worker
from validate.passes import call, run_ncu, smi, worker_cmd
from validate.suites import SUITES
from validate.tensor_set.suite import available


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu-name", help="short name for the data file (default from the device: h100, h200, ...)")
    p.add_argument("--out", type=measurement_file, help="output JSON (default data/measurements/<gpu-name>.json)")
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


def _simpy_placeholder() -> None:
    """The tensor set's programs build `gpusim.CudaSource`s, so gpusim must import; on a GPU
    machine without simpy (GPU_NOTES.md) its simulator is not run, and an empty module stands
    in for simpy (any use of it fails loudly)."""
    try:
        import simpy  # noqa: F401   # inside: whether this machine has simpy is the question asked
    except ImportError:
        sys.modules["simpy"] = types.ModuleType("simpy", "placeholder: validate measure --suite tensor runs no "
                                                "simulation; install simpy to simulate")


def _tensor_left_out() -> dict:
    """{entry: why} of the tensor-set entries whose programs do not import here."""
    return available()[1]


def run(args) -> int:
    if args.suite == "tensor":
        _simpy_placeholder()
    if getattr(args, "dry_run", False):
        if args.suite != "tensor":
            raise SystemExit("validate measure: --dry-run is for --suite tensor")
        from validate.tensor_set import dryrun  # lazy: imports gpusim, after _simpy_placeholder
        return dryrun.run(argparse.Namespace(all_sizes=False, gpu=args.gpu_name or "h100", time_limit=300.0,
                                             predict=False, out=args.out))
    if args.worker:
        return worker(args)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="validate_measure_"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    smi_before = smi()
    events, device, notes, pairs = [], {}, {}, []
    if not args.no_events:
        ev_out = workdir / "events.json"
        call(worker_cmd(args, "events", ev_out), args.timeout)
        if ev_out.exists():
            data = json.loads(ev_out.read_text())
            events, device = data["records"], data["device"]
    smi_mid = smi()
    if not args.no_ncu:
        pairs, notes = run_ncu(args, workdir)
        device = device or notes.get("device", {})
    smi_after = smi()
    kernels = merge(events, pairs, device.get("sm_count") or 132)
    gpu = args.gpu_name or short_name(device.get("gpu_name", "gpu"))
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
        "sm_clock_mhz_observed": clock_mhz(kernels),
        "sm_clock_mhz_observed_how": "median of sm__cycles_elapsed.max / gpu__time_duration.sum over kernels >= 20 us",
        "cache_policy": "ncu --cache-control all: L1/L2 flushed before every replay pass (cold caches); "
                        "events pass: back-to-back launches (warm)",
        "nvidia_smi": {"before": smi_before, "between_passes": smi_mid, "after": smi_after},
        "date": started.isoformat(timespec="seconds"),
        "command": "python -m validate measure" + (f" --gpu-name {args.gpu_name}" if args.gpu_name else "")
                   + (f" --suite {args.suite}" if args.suite != "programs" else "")
                   + (f" --only '{args.only}'" if args.only else "") + (f" --skip '{args.skip}'" if args.skip else "")
                   + (" --no-stalls" if args.no_stalls else "") + " --out " + relative(out),
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
