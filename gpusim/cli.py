"""The `gpusim` command: run the program library (or a user's file) in the simulator
and show where each kernel's work goes, line by line.

    gpusim run vector_add                      # check against numpy, print the source view
    gpusim run transpose                       # a family: every member, then a comparison table
    gpusim run bank_conflict_demo --set stride=33
    gpusim run my_kernel.py --json             # a file defining PROGRAM = ProgramSpec(...)
    gpusim list | gpusim presets

Exit status: 0 on success; 1 when a simulated output differs from its numpy
reference; 2 for errors a user can act on (unknown program or parameter, bad launch,
a kernel fault), printed as one `error: ...` line (`--traceback` for the trace).
This is the only module of gpusim that prints.
"""
from __future__ import annotations

import argparse
import difflib
import json
import shutil
import sys
import traceback
from pathlib import Path

import numpy as np

# Teaching order of the families whose members build on each other; other prefix
# matches run in name order.
FAMILY_ORDER = {
    "reduce": ("reduce_interleaved_divergent", "reduce_interleaved_strided", "reduce_sequential",
               "reduce_first_add", "reduce_warp_shuffle"),
    "transpose": ("transpose_naive", "transpose_shared", "transpose_padded"),
    "matmul": ("matmul_naive", "matmul_tiled"),
    "histogram": ("histogram_global", "histogram_shared"),
}

EXIT_OK, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """Bad input to the command itself (unknown program, size or parameter)."""


class CheckFailed(Exception):
    """A simulated output differs from the program's numpy reference."""


# ---------------------------------------------------------------- arguments

def parse_value(text: str):
    """'4096' -> 4096, '1_000' -> 1000, '0x10' -> 16, '2.5' -> 2.5, '1e6' -> 1000000.0,
    'true'/'false' -> bool; anything else stays a string."""
    t = text.strip()
    try:
        return int(t, 0)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    return t


def parse_sets(items: list[str]) -> dict:
    """['n=4096', 'stride=33'] -> {'n': 4096, 'stride': 33}."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"--set expects key=value (e.g. --set n=4096), got {item!r}")
        out[key.strip()] = parse_value(value)
    return out


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                        help="show the Python traceback of an error")
    p = argparse.ArgumentParser(prog="gpusim", parents=[common],
                                description="Run CUDA kernels (Numba) in a GPU simulator and see where the work goes.")
    p.set_defaults(traceback=False)
    from gpusim import __version__
    p.add_argument("--version", action="version", version=f"gpusim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    r = sub.add_parser("run", parents=[common], help="run a program (or family, or .py file) and show its source view")
    r.add_argument("program", metavar="PROGRAM",
                   help="a program name (gpusim list), a family prefix (reduce, transpose, matmul, histogram) "
                        "or the path of a .py file defining PROGRAM = ProgramSpec(...)")
    r.add_argument("--gpu", default="h100", help="GPU preset (gpusim presets); default h100")
    r.add_argument("--size", default="default", help="named size: default, large or another of the program's (an unknown name lists them)")
    r.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a size parameter (--set n=4096) or, with a dotted key, a GPU spec field "
                        "(--set sm.count=64 --set hbm.bandwidth_GBps=8000); repeatable")
    r.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    r.add_argument("--json", action="store_true", help="print one JSON object (metrics and per-line stats)")
    r.add_argument("--no-check", dest="check", action="store_false", help="skip the check against numpy")
    r.add_argument("--functional", dest="timing", action="store_false",
                   help="functional simulation only: counters, no predicted time")
    r.add_argument("--timing", dest="timing", action="store_true", default=True,
                   help="predict time with the timing model (the default)")
    r.add_argument("--mode", choices=("auto", "full", "sampled"), default="auto",
                   help="timing: simulate every SM and block (full) or a sample of SMs and waves (sampled); "
                        "auto samples launches of more blocks than SMs")
    r.add_argument("--trace", metavar="FILE.json",
                   help="write a Chrome trace (open in ui.perfetto.dev) of one SM's warps, stalls and memory "
                        "requests over a window of cycles; a family writes FILE_<program>.json per member")
    r.add_argument("--plot", metavar="DIR",
                   help="write the run's figures (bank, coalescing and divergence maps of block 0, roofline, "
                        "occupancy, warp timeline) as PNG files <program>_<figure>.png into DIR; a family also "
                        "gets <family>_ladder.png, its members' predicted time and counters side by side")
    r.add_argument("--html", metavar="FILE",
                   help="write one self-contained HTML page: the source view with per-line heat, the figures "
                        "and per-line bank/coalescing maps (a family: every member on one page)")
    r.add_argument("--trace-sm", type=int, default=0, metavar="N", help="the SM traced (default 0)")
    r.add_argument("--trace-cycles", default="0:20000", metavar="START:END",
                   help="the cycles traced (default 0:20000)")
    r.set_defaults(func=cmd_run)

    sub.add_parser("list", parents=[common], help="the programs, with descriptions and launch shapes").set_defaults(
        func=cmd_list)
    pr = sub.add_parser("presets", parents=[common], help="the GPU presets")
    pr.add_argument("--show", metavar="NAME", help="print one preset (or a .toml spec) as a parts list with units")
    pr.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="with --show: apply spec overrides, e.g. --set sm.count=64")
    pr.set_defaults(func=cmd_presets)

    co = sub.add_parser("collective", parents=[common],
                        help="time an NCCL collective over N simulated GPUs, nccl-tests style")
    co.add_argument("op", metavar="OP", help="all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, "
                                             "send_recv")
    co.add_argument("--gpus", type=int, default=None, help="GPUs in the system (default: the preset's "
                                                           "system.gpu_count, else 8)")
    co.add_argument("--gpu", default="h200", help="GPU preset or .toml (default h200)")
    co.add_argument("--sizes", default="64K:1G", help="MIN:MAX[:FACTOR] (powers of FACTOR, default 2) or a comma "
                                                      "list of byte counts (default 64K:1G)")
    co.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="spec overrides, e.g. --set nvlink.links=12 --set system.topology=direct")
    co.add_argument("--algorithm", choices=("ring", "tree"), help="force NCCL_ALGO (default: NCCL's choice)")
    co.add_argument("--protocol", choices=("LL", "LL128", "Simple"), help="force NCCL_PROTO (default: NCCL's choice)")
    co.add_argument("--json", action="store_true", help="one JSON object per size")
    co.add_argument("--plot", metavar="FILE", help="write busbw against size (PNG/SVG/PDF by extension)")
    co.set_defaults(func=cmd_collective)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:                      # --help, --version, usage errors: argparse printed them
        return int(e.code or 0) if not isinstance(e.code, str) else EXIT_ERROR
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if not is_user_error(e):
            raise
        return report_error(e, args.traceback)


def is_user_error(e: BaseException) -> bool:
    from gpusim.errors import GpusimError
    if isinstance(e, (UsageError, GpusimError)):
        return True
    try:
        from numba.core.errors import NumbaError
    except ImportError:                          # pragma: no cover - numba is a dependency
        return False
    return isinstance(e, NumbaError)


def report_error(e: BaseException, show_traceback: bool, prefix: str = "") -> int:
    if show_traceback:
        traceback.print_exception(e, file=sys.stderr)
    msg = str(e).strip() or type(e).__name__
    print(f"error: {prefix}{msg}", file=sys.stderr)
    return EXIT_MISMATCH if isinstance(e, CheckFailed) else EXIT_ERROR


# ---------------------------------------------------------------- resolving programs

def resolve(name: str):
    """PROGRAM argument -> (family name or None, [ProgramSpec, ...])."""
    import programs
    if name.endswith(".py") or "/" in name or Path(name).is_file():
        try:
            return None, [programs.load_file(name)]
        except (FileNotFoundError, ImportError, TypeError) as e:
            raise UsageError(str(e)) from e
        except Exception as e:                   # the user's file itself raised (SyntaxError, NameError, ...)
            raise UsageError(f"cannot load {name}: {type(e).__name__}: {e}") from e
    if name in programs.PROGRAMS:
        return None, [programs.PROGRAMS[name]]
    members = [n for n in programs.PROGRAMS if n.startswith(name)]
    if members:
        order = FAMILY_ORDER.get(name.rstrip("_"), ())
        members.sort(key=lambda n: (order.index(n) if n in order else len(order), n))
        family = name.rstrip("_") if len(members) > 1 else None
        return family, [programs.PROGRAMS[n] for n in members]
    raise UsageError(unknown_program_message(name, list(programs.PROGRAMS)))


def unknown_program_message(name: str, names: list[str]) -> str:
    families = sorted({n.split("_")[0] for n in names if sum(m.startswith(n.split("_")[0] + "_") for m in names) > 1})
    close = difflib.get_close_matches(name, names + families, n=5, cutoff=0.5)
    close += [n for n in names if name.lower() in n and n not in close]
    hint = f"; did you mean: {', '.join(close[:5])}?" if close else ""
    return f"no program named {name!r}{hint} (`gpusim list` shows them all)"


def params_for(spec, size: str, sets: dict) -> dict:
    """The size parameters of `spec` at `size` with `sets` applied; UsageError naming
    the valid sizes or parameters otherwise."""
    if size not in spec.sizes:
        raise UsageError(f"{spec.name} has no size {size!r}; its sizes: {', '.join(spec.sizes)}")
    known = spec.sizes[size]
    unknown = [k for k in sets if k not in known]
    if unknown:
        raise UsageError(f"{spec.name} has no parameter {unknown[0]!r}; its parameters: "
                         + ", ".join(f"{k}={v}" for k, v in known.items()))
    params = dict(known)
    for k, v in sets.items():
        params[k] = coerce(spec.name, k, v, known[k])
    return params


def coerce(program: str, key: str, value, default):
    """`value` in the type of the parameter's default (1e6 -> 1000000 for an int)."""
    if isinstance(default, bool) or default is None or isinstance(default, str):
        return value
    if isinstance(default, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise UsageError(f"{program}: parameter {key} is an integer (default {default}), got {value!r}")
    if isinstance(default, float) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(default, float):
        raise UsageError(f"{program}: parameter {key} is a number (default {default}), got {value!r}")
    return value


def build_case(spec, params: dict, seed: int):
    try:
        return spec.case(params, seed=seed)
    except Exception as e:
        raise UsageError(f"{spec.name}: cannot build inputs for {fmt_params(params)}: {type(e).__name__}: {e}") from e


def fmt_params(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


# ---------------------------------------------------------------- run

def run_one(spec, params: dict, args):
    """(case, result, check status, subject) for one program; subject: the launch with
    copies of its initial arguments when --plot or --html will draw it, else None."""
    import gpusim
    case = build_case(spec, params, args.seed)
    subject = None
    if wants_pictures(args):
        from gpusim.viz import Subject
        initial = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in case.args)
        subject = Subject(case.kernel, case.grid, case.block, initial, args.gpu_spec, case.shared_bytes, spec.name)
    try:
        options = None
        if args.timing:
            from gpusim.timing.engine import TimingOptions
            options = TimingOptions(mode=args.mode, record=getattr(args, "trace_window", None),
                                    progress=progress_printer(case.name) if sys.stderr.isatty() else None)
        result = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=args.gpu_spec, timing=args.timing,
                               shared_bytes=case.shared_bytes, timing_options=options)
    finally:
        if args.timing and sys.stderr.isatty():
            sys.stderr.write("\r\033[K")
    status = "skipped"
    if args.check:
        try:
            case.check()
        except AssertionError as e:
            raise CheckFailed(f"{e} (on {args.gpu}; rerun with --no-check to see the source view)") from e
        status = "passed"
    return case, result, status, subject


def wants_pictures(args) -> bool:
    return bool(getattr(args, "plot", None) or getattr(args, "html", None))


def progress_printer(name: str):
    """A progress callback writing 'name: blocks done/total' to stderr (a terminal only)."""
    state = {"last": -1}

    def show(done: int, total: int) -> None:
        pct = 100 * done // max(total, 1)
        if pct != state["last"]:
            state["last"] = pct
            sys.stderr.write(f"\r{name}: timing {done}/{total} blocks ({pct}%)")
            sys.stderr.flush()
    return show


def cmd_run(args) -> int:
    from gpusim import report
    from gpusim.specs.overrides import resolve as resolve_spec
    gpu_sets = [s for s in args.sets if "." in s.partition("=")[0]]
    args.sets = [s for s in args.sets if "." not in s.partition("=")[0]]
    args.gpu_spec = resolve_spec(args.gpu, gpu_sets)       # unknown preset or bad override: fail before any work
    sets = parse_sets(args.sets)
    family, members = resolve(args.program)
    plans = [(spec, params_for(spec, args.size, sets)) for spec in members]     # bad --size/--set: fail first
    args.trace_window = trace_window(args)
    if wants_pictures(args) and args.timing and args.trace_window is None:
        from gpusim.timing.record import TraceWindow
        args.trace_window = TraceWindow()         # the warp timeline figure, from the run itself (numbers unchanged)
    out = sys.stdout
    color = report.want_color(out) and not args.json
    width = shutil.get_terminal_size().columns if out.isatty() else None
    code, done, records, sections, plotted = EXIT_OK, [], [], [], []
    renderer = None
    if wants_pictures(args):
        from gpusim.report.pictures import Renderer
        renderer = Renderer()            # figures drawn in a worker while the next program runs
    try:
        for spec, params in plans:
            record = {"program": spec.name}
            try:
                case, result, status, subject = run_one(spec, params, args)
            except Exception as e:
                if not is_user_error(e) and not isinstance(e, CheckFailed):
                    raise
                prefix = "" if len(members) == 1 or str(e).startswith(spec.name) else f"{spec.name}: "
                code = max(code, report_error(e, args.traceback, prefix))
                records.append({**record, "error": str(e)})
                continue
            label = f"{spec.name} [{fmt_params(case.params)}]"
            if args.trace:
                from gpusim.report.trace import write_chrome_trace
                path = Path(args.trace)
                write_chrome_trace(result, path if len(members) == 1 else
                                   path.with_name(f"{path.stem}_{spec.name}{path.suffix}"))
            done.append((spec.name, result))
            if subject is not None:
                from gpusim.report.pictures import pictures
                pics = pictures(subject, result, line_maps=bool(args.html), renderer=renderer)   # drawn while the next runs
                sections.append((label, result, pics))
            if args.json:
                records.append(result_record(spec.name, case, result, status))
                if subject is not None:
                    plotted.append((records[-1], spec.name, pics))
            else:
                print(report.render_source_view(result, case_name=label, width=width, color=color), file=out)
                if subject is not None:
                    plotted.append((None, spec.name, pics))
        ladder = family_ladder(done, family, args, renderer)        # drawn with the members' figures
        for record, name, pics in plotted:
            pics.wait()
            written = write_plots(pics, name, Path(args.plot)) if args.plot else []
            if written and record is not None:
                record["plots"] = written
            elif not args.json:
                for path in written:
                    print(f"plot: {path}", file=out)
    finally:
        if renderer is not None:
            renderer.close()
    ladder_png, ladder_path = write_ladder(ladder, family, args)
    if ladder_path and not args.json:
        print(f"plot: {ladder_path}", file=out)
    if args.html and sections:
        from gpusim.report.html import Section, render_html
        comparison = (report.render_comparison(done, title=f"comparison: {family} on {args.gpu}")
                      if family and len(done) > 1 else None)
        page = Path(args.html)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(render_html([Section(*s) for s in sections], title=f"gpusim run {args.program} on {args.gpu}",
                                    comparison=comparison, ladder=ladder_png), encoding="utf-8")
        if not args.json:
            print(f"html: {page}", file=out)
    if args.json:
        doc = {"gpu": args.gpu, "size": args.size, "seed": args.seed, "family": family, "programs": records,
               **({"ladder_plot": ladder_path} if ladder_path else {})}
        json.dump(doc, out, indent=1, default=to_json)
        out.write("\n")
    elif family and len(done) > 1:
        print(report.render_comparison(done, title=f"comparison: {family} on {args.gpu}", color=color), file=out)
    return code


def family_ladder(done: list, family: str | None, args, renderer):
    """The pending PNG (a Future) of a family's ladder figure (`gpusim.viz.ladder`): its
    members' predicted time and counters side by side; None unless several members ran
    with --plot or --html."""
    if not (family and len(done) > 1 and renderer is not None):
        return None
    from gpusim.viz import ladder
    return renderer.submit({"ladder": ladder.ladder(dict(done), family=family, gpu=args.gpu)})["ladder"]


def write_ladder(pending, family: str | None, args) -> tuple[bytes | None, str | None]:
    """(PNG bytes, path) of the ladder, written as DIR/<family>_ladder.png under --plot."""
    if pending is None:
        return None, None
    data = pending.result()
    if not args.plot:
        return data, None
    path = Path(args.plot) / f"{family}_ladder.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data, str(path)


def write_plots(pics, program: str, folder: Path) -> list[str]:
    """Write each figure of `pics` as folder/<program>_<figure>.png; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in pics.figures.items():
        path = folder / f"{program}_{name}.png"
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def trace_window(args):
    """The TraceWindow of `--trace`, `--trace-sm` and `--trace-cycles START:END` (None without --trace)."""
    if not getattr(args, "trace", None):
        return None
    if not args.timing:
        raise UsageError("--trace needs the timing model; drop --functional")
    from gpusim.errors import ConfigError
    from gpusim.timing.record import TraceWindow
    try:
        start, end = (int(parse_value(x)) for x in args.trace_cycles.split(":"))
        return TraceWindow(sms=args.trace_sm, start_cycle=start, end_cycle=end)
    except (ValueError, TypeError, ConfigError) as e:
        raise UsageError(f"--trace-sm {args.trace_sm} --trace-cycles {args.trace_cycles}: expected an SM index "
                         f">= 0 and START:END cycles with START < END ({e})") from e


def result_record(name: str, case, result, status: str) -> dict:
    lines = []
    for ls in result.lines.values():
        lines.append({"line": ls.line, "source": ls.text, "warp_instructions": ls.warp_instructions,
                      "simt_efficiency": ls.simt_efficiency, "shared_wavefronts": ls.shared_wavefronts,
                      "bank_conflicts": ls.bank_conflicts, "global_requests": ls.global_requests,
                      "global_sectors": ls.global_sectors, "sectors_per_request": ls.sectors_per_request,
                      "metrics": ls.metrics})
    from gpusim.report import line_issues
    return {"program": name, "params": case.params, "check": status, "kernel": result.kernel, "gpu": result.gpu,
            "grid": list(result.grid), "block": list(result.block), "shared_bytes": result.shared_bytes,
            "source_file": result.source_file, "metrics": result.metrics, "lines": lines,
            "verdict": [{"line": i.line, "kind": i.kind, "score": i.score, "text": i.sentence}
                        for i in line_issues(result)[:3]]}


def to_json(v):
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, (np.ndarray, tuple, set)):
        return list(np.asarray(v).tolist()) if isinstance(v, np.ndarray) else list(v)
    return str(v)


# ---------------------------------------------------------------- list, presets

def dims(t) -> str:
    t = tuple(t) if isinstance(t, (tuple, list)) else (t,)
    return "x".join(str(int(v)) for v in t)


def cmd_list(args) -> int:
    import programs
    from gpusim.report.fmt import table
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
    from gpusim.report.fmt import table
    from gpusim.specs import PRESETS, describe, resolve
    if args.show:
        print(describe(resolve(args.show, [s for s in args.sets])))
        return EXIT_OK
    from gpusim.specs import calibrated, presets
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


def cmd_collective(args) -> int:
    import json as _json

    from gpusim.collectives.conventions import check_op
    from gpusim.collectives.run import parse_sizes, simulate
    from gpusim.report.fmt import table
    from gpusim.specs import resolve as resolve_spec
    op = check_op(args.op)
    spec = resolve_spec(args.gpu, list(args.sets))
    n = args.gpus if args.gpus is not None else (spec.system.gpu_count if spec.system.gpu_count > 1 else 8)
    if n < 2:
        raise UsageError(f"--gpus must be at least 2, got {n}")
    results = [simulate(op, size, spec, n, args.algorithm, args.protocol) for size in parse_sizes(args.sizes)]
    if args.json:
        for r in results:
            print(_json.dumps({"op": r.op, "gpus": r.gpus, "bytes": r.bytes, "time_us": round(r.time_us, 3),
                               "algbw_GBps": round(r.algbw_GBps, 3), "busbw_GBps": round(r.busbw_GBps, 3),
                               "algorithm": r.algorithm, "protocol": r.protocol, "channels": r.channels}))
    else:
        print(f"# {op} on {n} x {spec.marketing_name} ({spec.name}), {spec.system.topology}, "
              f"{spec.nvlink.links} NVLinks x {spec.nvlink.link_bandwidth_GBps:g} GB/s per direction; "
              f"nccl-tests conventions (size: {'gathered output' if op == 'all_gather' else 'input per rank'})")
        rows = [[f"{r.bytes}", f"{r.time_us:.2f}", f"{r.algbw_GBps:.2f}", f"{r.busbw_GBps:.2f}",
                 r.algorithm.upper() if r.algorithm == "p2p" else r.algorithm.capitalize(),
                 {"ll": "LL", "ll128": "LL128", "simple": "Simple"}[r.protocol], str(r.channels)] for r in results]
        for line in table(["size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algorithm", "protocol",
                           "channels"], rows, "rrrrllr"):
            print(line)
        print("# predicted by gpusim's interconnect model, not measured")
    if args.plot:
        from gpusim.collectives.plot import busbw_plot
        busbw_plot(results, args.plot, f"{op}, {n} x {spec.name} (gpusim prediction)")
        if not args.json:
            print(f"plot: {args.plot}")
    return EXIT_OK


if __name__ == "__main__":                         # python -m gpusim.cli
    sys.exit(main())
