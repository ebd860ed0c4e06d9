"""`gpusim list`, `gpusim presets`, `gpusim collective` and `gpusim sweep`: the program library,
the GPU presets, NCCL collectives over a simulated multi-GPU system as nccl-tests prints them,
and design-space sweeps (gpusim/cli/sweep.py)."""
from __future__ import annotations

import json as _json

from gpusim.cli.exits import EXIT_OK, UsageError
from gpusim.cli.program_args import FAMILY_ORDER
from gpusim.cli.progress import Ticker
from gpusim.cli.run import writing
from gpusim.collectives.conventions import check_op
from gpusim.collectives.plot import busbw_plot
from gpusim.collectives.run import parse_sizes, simulate
from gpusim.report.fmt import table
from gpusim.specs import PRESETS, calibrated, describe, presets, resolve, resolve as resolve_spec
from gpusim.sweep import check_writable


def dims(t) -> str:
    t = tuple(t) if isinstance(t, (tuple, list)) else (t,)
    return "x".join(str(int(v)) for v in t)


def cmd_list(args) -> int:
    import programs  # programs/ sits above gpusim: loaded only when a program is named
    rows = []
    for name, spec in programs.PROGRAMS.items():
        try:
            c = spec.case()
            grid, block = dims(c.grid), dims(c.block)
            if c.shared_bytes:
                block += f" +{c.shared_bytes}B"
        except Exception:                          # a broken program still gets listed
            grid = block = "?"
        rows.append([name, grid, block, spec.description])
    for line in table(["program", "grid", "block", "description"], rows, "lrrl"):
        print(line)
    names = list(programs.PROGRAMS)
    fams = [f"{f} ({sum(n.startswith(f + '_') for n in names)})" for f in FAMILY_ORDER
            if sum(n.startswith(f + "_") for n in names) > 1]
    if fams:
        print(f"\nfamilies (gpusim run FAMILY runs each member and compares them): {', '.join(fams)}")
    return EXIT_OK


def cmd_presets(args) -> int:
    if args.show:
        print(describe(resolve(args.show, [s for s in args.sets])))
        return EXIT_OK
    rows = []
    for name in presets.names():
        spec = presets.get(name)
        cal = calibrated.info(name) if name in calibrated.available() else {}
        if cal:
            what = f"calibrated: {cal.get('data', '?')} ({cal.get('gpu', '?')}, {str(cal.get('date', '?'))[:10]})"
        elif name in PRESETS:
            what = "datasheet: cited numbers only"
        else:
            what = f"datasheet (no calibration; same as {name}-datasheet)"
        rows.append([name, spec.marketing_name, "{}.{}".format(*spec.compute_capability), what])
    for line in table(["preset", "GPU", "compute capability", "numbers"], rows, "llrl"):
        print(line)
    print("\n`--gpu h200` predicts with the calibrated preset where one exists; `h200-datasheet` is the cited one.")
    return EXIT_OK


def gpu_counts(text, spec) -> list[int]:
    """`--gpus` as a list of GPU counts ('8', '2,4,8'; None: the preset's system, else 8)."""
    if text is None:
        return [spec.system.gpu_count if spec.system.gpu_count > 1 else 8]
    try:
        counts = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--gpus expects a GPU count or a comma list of them (2,4,8), got {text!r}") from None
    if not counts or min(counts) < 2:
        raise UsageError(f"--gpus must be at least 2, got {text}")
    return counts


def cmd_collective(args) -> int:

    op = check_op(args.op)
    spec = resolve_spec(args.gpu, list(args.sets))
    counts = gpu_counts(args.gpus, spec)
    sizes = parse_sizes(args.sizes)
    for n in counts:
        check_gpu_count(op, n, len(sizes), args.yes)
    if args.plot:
        check_writable(args.plot, "--plot")
    runs = {}
    with Ticker(f"{op} over {', '.join(map(str, counts))} GPUs") as tick:
        for n in counts:
            runs[n] = []
            for i, size in enumerate(sizes):
                at = f"{n} GPUs, " if len(counts) > 1 else ""
                tick.now(f"{at}size {i + 1} of {len(sizes)} ({size:,} B)")
                runs[n].append(simulate(op, size, spec, n, args.algorithm, args.protocol, in_place=args.in_place))
    several = len(counts) > 1
    if args.json:
        for results in runs.values():
            for r in results:
                print(_json.dumps({"op": r.op, "gpus": r.gpus, "bytes": r.bytes, "time_us": round(r.time_us, 3),
                                   "algbw_GBps": round(r.algbw_GBps, 3), "busbw_GBps": round(r.busbw_GBps, 3),
                                   "algorithm": r.algorithm, "protocol": r.protocol, "channels": r.channels}))
    else:
        who = ", ".join(map(str, counts)) if several else str(counts[0])
        print(f"# {op} on {who} x {spec.marketing_name} ({spec.name}), {spec.system.topology}, "
              f"{spec.nvlink.links} NVLinks x {spec.nvlink.link_bandwidth_GBps:g} GB/s per direction; "
              f"nccl-tests conventions (size: {'gathered output' if op == 'all_gather' else 'input per rank'}"
              f"{'; in place' if args.in_place else ''})")
        rows = [[str(r.gpus)] * several + [f"{r.bytes}", f"{r.time_us:.2f}", f"{r.algbw_GBps:.2f}",
                                           f"{r.busbw_GBps:.2f}",
                 r.algorithm.upper() if r.algorithm == "p2p" else r.algorithm.capitalize(),
                 {"ll": "LL", "ll128": "LL128", "simple": "Simple"}[r.protocol], str(r.channels)]
                for results in runs.values() for r in results]
        heads = ["gpus"] * several + ["size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algorithm",
                                      "protocol", "channels"]
        for line in table(heads, rows, "r" * several + "rrrrllr"):
            print(line)
        print("# predicted by gpusim's interconnect model, not measured")
    if args.plot:
        with writing("--plot", args.plot):
            if several:
                busbw_plot({f"{n} GPUs": rs for n, rs in runs.items()}, args.plot,
                           f"{op} on {', '.join(map(str, counts))} x {spec.name} (gpusim prediction)")
            else:
                busbw_plot(runs[counts[0]], args.plot, f"{op}, {counts[0]} x {spec.name} (gpusim prediction)")
        if not args.json:
            print(f"plot: {args.plot}")
    return EXIT_OK


# Simulating a collective costs about the square of its GPU count (each of a ring's 2(n-1)
# steps moves data between all n GPUs): all_reduce over 256 GPUs took 15 s for 64 KiB and
# 3 min for 1 GiB (one core), so 1,000 GPUs would take minutes to an hour per size.
MAX_GPUS = 256


def check_gpu_count(op: str, n: int, sizes: int, yes: bool) -> None:
    """UsageError before any work for more than MAX_GPUS GPUs, unless `yes`."""
    if n > MAX_GPUS and not yes:
        per = (n / 256) ** 2
        raise UsageError(f"simulating {op} over {n} GPUs takes about {15 * per / 60:,.0f} to {180 * per / 60:,.0f} "
                         f"min per size ({sizes} size{'s' if sizes != 1 else ''}): the cost grows with the square of "
                         f"the GPU count (256 GPUs: 15 s for 64 KiB, 3 min for 1 GiB); pass --yes to run it anyway "
                         f"(progress goes to stderr), or at most {MAX_GPUS} GPUs")

