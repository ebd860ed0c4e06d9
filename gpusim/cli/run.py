"""`gpusim run PROGRAM`: run one program (or a family) in the simulator, check it against
its numpy reference, print the source view and verdict, and on request write the pictures
(`--plot`, `--html`: drawn by `gpusim.report.pictures`' worker processes while this and
the next programs run), a Chrome trace (`--trace`) or JSON (`--json`)."""
from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np

from gpusim import api, report
from gpusim.cli import parse_sets, parse_value
from gpusim.cli.exits import EXIT_OK, CheckFailed, UsageError, is_user_error, report_error
from gpusim.cli.program_args import build_case, fmt_params, params_for, resolve, split_sets
from gpusim.cli.progress import ProgressLine
from gpusim.errors import ConfigError, OutputError
from gpusim.report import line_issues
from gpusim.report.html import Section, render_html
from gpusim.report.pictures import Renderer, add_timed, pictures
from gpusim.report.trace import write_chrome_trace
from gpusim.specs.overrides import resolve as resolve_spec
from gpusim.timing.engine import TimingOptions
from gpusim.timing.record import TraceWindow
from gpusim.viz import Subject, ladder


def run_one(spec, params: dict, args, renderer=None, before_timed=None):
    """(case, result, check status, pictures) for one program; pictures (`gpusim.report.
    pictures`) when --plot or --html will draw it, else None: the figures that need no
    timing are handed to `renderer` before the launch, so they are drawn while it runs,
    and the timed ones (roofline, warp timeline) after it, once `before_timed(result)`
    (if given) has run."""
    case = build_case(spec, params, args.seed)
    subject = pics = None
    if wants_pictures(args):
        initial = tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in case.args)
        subject = Subject(case.kernel, case.grid, case.block, initial, args.gpu_spec, case.shared_bytes, spec.name)
        check_map_choice(args, case)
        try:
            pics = pictures(subject, line_maps=bool(args.html), renderer=renderer, **map_choice(args))
        except Exception:
            pics = None                  # drawn after the launch, so a faulting kernel reports the launch's error
    line = ProgressLine(case.name) if ProgressLine.wanted() else None
    try:
        options = None
        predict_only = getattr(args, "predict_only", False)
        if predict_only:
            args.timing = True
        if args.timing:
            options = TimingOptions(mode=args.mode, record=getattr(args, "trace_window", None),
                                    unknown_sass=getattr(args, "unknown_sass", "error"))
        result = api.launch(case.kernel, case.grid, case.block, case.args, gpu=args.gpu_spec, timing=args.timing,
                            shared_bytes=case.shared_bytes, timing_options=options, progress=line,
                            max_steps=getattr(args, "max_steps", None),
                            time_limit_s=getattr(args, "time_limit", None), core=getattr(args, "core", None),
                            workers=getattr(args, "workers", None), outputs=not predict_only)
    finally:
        if line is not None:
            line.clear()
    status = "skipped"
    if args.check and not getattr(args, "predict_only", False):
        tol = tolerance(getattr(args, "tolerance", None))
        if tol is not None:
            case.atol, case.rtol = tol
        try:
            case.check()
        except AssertionError as e:
            hint = ("a float output that differs in its last bits (FMA contraction) passes with --tolerance ATOL or "
                    "Case(..., atol=, rtol=); --no-check shows the source view" if not (case.atol or case.rtol)
                    else "rerun with --no-check to see the source view")
            raise CheckFailed(f"{e} (on {args.gpu}; {hint})") from e
        status = "passed"
    if before_timed is not None:
        before_timed(result)
    if pics is not None:
        add_timed(pics, subject, result, renderer=renderer)
    elif subject is not None:
        pics = pictures(subject, result, line_maps=bool(args.html), renderer=renderer, **map_choice(args))
    return case, result, status, pics


def map_choice(args) -> dict:
    return {"block": getattr(args, "map_block", None), "warp": getattr(args, "map_warp", None)}


def check_map_choice(args, case) -> None:
    """--map-block / --map-warp within the launch, or a UsageError naming its range."""
    blocks = int(np.prod(case.grid))
    warps = -(-int(np.prod(case.block)) // 32)
    b, w = map_choice(args).values()
    if b is not None and not 0 <= b < blocks:
        raise UsageError(f"--map-block {b}: {case.name} launches blocks 0..{blocks - 1}")
    if w is not None and not 0 <= w < warps:
        raise UsageError(f"--map-warp {w}: {case.name}'s blocks have warps 0..{warps - 1}")


def tolerance(text) -> tuple[float, float] | None:
    """`--tolerance ATOL[,RTOL]` as (atol, rtol); None when not given."""
    if text is None:
        return None
    try:
        parts = [float(x) for x in str(text).split(",")]
    except ValueError:
        parts = []
    if not 1 <= len(parts) <= 2 or min(parts) < 0:
        raise UsageError(f"--tolerance expects ATOL or ATOL,RTOL (non-negative numbers, e.g. 1e-6), got {text!r}")
    return parts[0], parts[1] if len(parts) == 2 else 0.0


def wants_pictures(args) -> bool:
    return bool(getattr(args, "plot", None) or getattr(args, "html", None))


@contextlib.contextmanager
def writing(option: str, path):
    """An OSError writing the file of `option` (a full disk, a directory in the way) as one
    OutputError line naming the option and the path."""
    try:
        yield
    except OSError as e:
        raise OutputError(f"{option} {path}: cannot write {e.filename or path}: {e.strerror or e}") from None


def check_outputs(args) -> None:
    """Before any work: --trace and --html name files (not directories), --plot a folder (not a
    file), and where the folder exists it is writable."""
    for option, value, want_dir in (("--trace", getattr(args, "trace", None), False),
                                    ("--html", getattr(args, "html", None), False),
                                    ("--plot", getattr(args, "plot", None), True)):
        if not value:
            continue
        p = Path(value)
        if want_dir and p.exists() and not p.is_dir():
            raise OutputError(f"{option} {p}: names a file; --plot takes a folder for the figures")
        if not want_dir and p.is_dir():
            raise OutputError(f"{option} {p}: is a directory; {option} takes a file name")
        folder = p if want_dir and p.is_dir() else p.parent
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise OutputError(f"{option} {p}: the folder {folder} is not writable")


def cmd_run(args) -> int:
    check_outputs(args)
    if not wants_pictures(args):
        return run_programs(args, None)
    with Renderer() as renderer:         # first: its workers load matplotlib while this process loads the programs
        return run_programs(args, renderer)


def run_programs(args, renderer) -> int:
    """cmd_run's body: the programs run here, their figures drawn by `renderer` (None: no pictures)."""
    family, members = resolve(args.program)
    gpu_sets, args.sets = split_sets(args.sets, members)
    args.gpu_spec = resolve_spec(args.gpu, gpu_sets)       # unknown preset or bad override: fail before any work
    sets = parse_sets(args.sets)
    plans = [(spec, params_for(spec, args.size, sets)) for spec in members]     # bad --size/--set: fail first
    args.trace_window = trace_window(args)
    if wants_pictures(args) and args.timing and args.trace_window is None:
        args.trace_window = TraceWindow()         # the warp timeline figure, from the run itself (numbers unchanged)
    out = sys.stdout
    color = report.want_color(out) and not args.json
    width = shutil.get_terminal_size().columns if out.isatty() else None
    code, done, records, sections, plotted = EXIT_OK, [], [], [], []
    ladder = None

    def ladder_first(name, result):
        """The last program's hook: its family's ladder, the slowest figure, goes to the
        workers before that program's roofline and warp timeline (so the two workers end
        together: ~30 ms less waiting for the last figure)."""
        nonlocal ladder
        ladder = family_ladder(done + [(name, result)], family, args, renderer)
    for k, (spec, params) in enumerate(plans):
        record = {"program": spec.name}
        try:
            case, result, status, pics = run_one(spec, params, args, renderer, before_timed=(
                functools.partial(ladder_first, spec.name) if k == len(plans) - 1 else None))
        except Exception as e:
            if not is_user_error(e) and not isinstance(e, CheckFailed):
                raise
            prefix = "" if len(members) == 1 or str(e).startswith(spec.name) else f"{spec.name}: "
            code = max(code, report_error(e, args.traceback, prefix))
            records.append({**record, "error": str(e)})
            continue
        label = f"{spec.name} [{fmt_params(case.params)}]"
        if args.trace:
            path = Path(args.trace)
            path = path if len(members) == 1 else path.with_name(f"{path.stem}_{spec.name}{path.suffix}")
            with writing("--trace", path):
                write_chrome_trace(result, path)
        done.append((spec.name, result))
        if pics is not None:
            sections.append((label, result, pics))
        if args.json:
            records.append(result_record(spec.name, case, result, status))
            if pics is not None:
                plotted.append((records[-1], spec.name, pics))
        else:
            print(report.render_source_view(result, case_name=label, width=width, color=color), file=out)
            if pics is not None:
                plotted.append((None, spec.name, pics))
    if ladder is None:                          # the last program failed before its hook
        ladder = family_ladder(done, family, args, renderer)
    for record, name, pics in plotted:
        pics.wait()
        with writing("--plot", args.plot):
            written = write_plots(pics, name, Path(args.plot)) if args.plot else []
        if written and record is not None:
            record["plots"] = written
        elif not args.json:
            for path in written:
                print(f"plot: {path}", file=out)
    with writing("--plot", args.plot):
        ladder_png, ladder_path = write_ladder(ladder, family, args)
    if ladder_path and not args.json:
        print(f"plot: {ladder_path}", file=out)
    if args.html and sections:
        comparison = (report.render_comparison(done, title=f"comparison: {family} on {args.gpu}")
                      if family and len(done) > 1 else None)
        page = Path(args.html)
        html = render_html([Section(*s) for s in sections], title=f"gpusim run {args.program} on {args.gpu}",
                           comparison=comparison, ladder=ladder_png)
        with writing("--html", page):
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(html, encoding="utf-8")
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

