"""`gpusim sweep`: the command line of gpusim.sweep.

    gpusim sweep transpose_shared matmul_tiled --vary hbm.bandwidth_GBps=2000:8000:4 \\
        --vary sm.count=66,132 --workers 2 --out sweep.csv --plot sweep.png
    gpusim sweep --file my_sweep.toml --dask tcp://scheduler:8786 --out sweep.parquet

Prints a table of the varied fields, predicted time and bound per point (the full table,
every metric and spec field, goes to --out); the progress bar goes to stderr.
"""
from __future__ import annotations

import argparse
import os

from gpusim import sweep as sweeps
from gpusim.cli import _command, parse_value
from gpusim.cli.exits import EXIT_OK, UsageError
from gpusim.cli.program_args import resolve
from gpusim.cli.run import writing
from gpusim.errors import ConfigError
from gpusim.report.fmt import table
from gpusim.specs.overrides import parse_sets
from gpusim.sweep.space import ASK_POINTS, field_key, load_sweep_toml, parse_vary
from gpusim.viz.sweep import plot_sweep


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        n = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def parse_size(text: str):
    """'default' -> 'default'; 'rows=1024,cols=1024' -> {'rows': 1024, 'cols': 1024}."""
    if "=" not in text:
        return text.strip()
    out = {}
    for item in text.split(","):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise ConfigError(f"--size expects a name or KEY=VALUE,KEY=VALUE, got {text!r}")
        out[k.strip()] = parse_value(v)
    return out


def add_parser(sub, common) -> None:
    s = sub.add_parser("sweep", parents=[common],
                       help="time programs over a grid of GPU spec values (a table, a plot)")
    s.add_argument("programs", nargs="*", metavar="PROGRAM",
                   help="program names, families (gpusim list) or .py files defining PROGRAM; or give --file")
    s.add_argument("--file", metavar="SWEEP.toml", help="a sweep file: gpu, programs, sizes, [set], [vary]")
    s.add_argument("--gpu", default=None, help="base GPU preset or .toml spec (default h100)")
    s.add_argument("--size", dest="sizes", action="append", default=[], metavar="SIZE",
                   help="a size name or KEY=VALUE,KEY=VALUE of program parameters; repeatable (default: default)")
    s.add_argument("--vary", action="append", default=[], metavar="FIELD=VALUES",
                   help="a spec field and its values: a list (sm.count=66,132), START:STOP:N evenly spaced "
                        "(hbm.bandwidth_GBps=2000:8000:4) or START:STOP:xF geometric; repeatable (a grid)")
    s.add_argument("--set", dest="sets", action="append", default=[], metavar="FIELD=VALUE",
                   help="a spec override applied to every point; repeatable")
    s.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="local worker processes, at least 1 (default: the CPU count, at most the points)")
    s.add_argument("--dask", metavar="ADDRESS", help="run the points on a dask.distributed scheduler "
                                                     "(tcp://host:8786), or 'local' for a LocalCluster")
    s.add_argument("--out", metavar="FILE",
                   help="write the whole table: .csv, or .parquet (needs pyarrow); every finished point is kept in "
                        "FILE.points as it finishes, until the table is written")
    s.add_argument("--resume", action="store_true",
                   help="keep the points an interrupted sweep with the same --out kept in FILE.points and run only "
                        "the missing ones")
    s.add_argument("--yes", action="store_true",
                   help=f"run a sweep of more than {ASK_POINTS:,} points (refused otherwise, with its count)")
    s.add_argument("--plot", metavar="FILE.png",
                   help="plot time against the varied field, one line per program; with two or more varied "
                        "fields a heatmap over the first two, one panel per program")
    s.add_argument("--seed", type=int, default=0, help="seed of the programs' random inputs")
    s.add_argument("--no-replay", dest="replay", action="store_false",
                   help="execute the functional run at every point (results are identical; slower)")
    s.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    s.set_defaults(func=_command("sweep", "cmd_sweep"))


def cmd_sweep(args) -> int:

    kw = load_sweep_toml(args.file) if args.file else {}
    names = []                                    # ProgramSpecs: names, families or .py files
    for p in args.programs or kw.pop("programs", []):
        if not p.strip():
            raise UsageError("gpusim sweep: an empty program name (gpusim list shows them)")
        names += resolve(p)[1]
    kw.pop("programs", None)
    if not names:
        raise UsageError("gpusim sweep: name at least one program (gpusim list) or give --file")
    vary, origin = {}, {}
    for k, vals in kw.pop("vary", {}).items():
        key = field_key(k)
        if key in vary:
            raise UsageError(f"{args.file}: {key} is varied twice (as {origin[key]} and as {k})")
        vary[key], origin[key] = vals, f"{k} in {args.file}"
    for v in args.vary:
        key, vals = parse_vary(v)
        if key in vary:
            raise UsageError(f"--vary {v}: {key} is already varied ({origin[key]}); give each field's values once")
        vary[key], origin[key] = vals, f"--vary {v}"
    sets = dict(kw.pop("sets", {}))
    sets.update(parse_sets(args.sets))
    sizes = [parse_size(s) for s in args.sizes] or kw.pop("sizes", ["default"])
    kw.pop("sizes", None)
    gpu = args.gpu or kw.pop("gpu", "h100")
    kw.pop("gpu", None)
    seed = kw.pop("seed", args.seed)
    workers = args.workers
    if workers is None and not args.dask:
        workers = os.cpu_count() or 1
    if args.plot:
        _check_plot(args.plot)
    if args.out:
        sweeps.check_out(args.out)
    elif args.resume:
        raise UsageError("--resume continues the sweep that writes --out FILE: give the same --out")
    df = sweeps.sweep(names, sizes, vary, gpu=gpu, sets=sets, workers=workers, dask=args.dask, seed=seed,
                      replay=args.replay, progress=args.progress, out=args.out, resume=args.resume,
                      max_points=None if args.yes else ASK_POINTS)
    varied = list(vary)
    cols = ["program", "size", *varied, "gpu__time_duration.sum", "timing__bound", "functional_run"]
    rows = []
    for r in df[cols].itertuples(index=False):
        r = list(r)
        rows.append([str(x) if not isinstance(x, float) else f"{x:g}" for x in r[:-3]]
                    + [f"{r[-3] / 1000:.2f}", str(r[-2]), str(r[-1])])
    for line in table(["program", "size", *varied, "time (us)", "bound", "functional run"], rows,
                      "ll" + "r" * len(varied) + "rll"):
        print(line)
    if args.out:
        print(f"table: {args.out} ({len(df)} rows, {len(df.columns)} columns)")
    if args.plot:
        with writing("--plot", args.plot):
            plot_sweep(df, varied, path=args.plot)
        print(f"plot: {args.plot}")
    return EXIT_OK


def _check_plot(path: str) -> None:
    if not str(path).lower().endswith((".png", ".svg", ".pdf")):
        raise UsageError(f"--plot writes .png, .svg or .pdf, got {path!r}")
    sweeps.check_writable(path, "--plot")
