"""The `gpusim` command: run the program library (or a user's file) in the simulator
and show where each kernel's work goes, line by line.

    gpusim run vector_add                      # check against numpy, print the source view
    gpusim run transpose                       # a family: every member, then a comparison table
    gpusim run bank_conflict_demo --set stride=33
    gpusim run my_kernel.py --json             # a file defining PROGRAM = ProgramSpec(...)
    gpusim list | gpusim presets

Exit status (`EXIT_CODES`, printed by `gpusim --help`): 0 on success; 1 when a simulated
output differs from its numpy reference (`gpusim check`: hazards found); 2 for a bad
command line (unknown program, size or parameter); 3-10 for each class of
`gpusim.errors.GpusimError` (a GPU spec, a launch, an unsupported kernel, a fault, a
kernel that does not finish, a file that cannot be written, a sweep worker that died; see
gpusim/errors.py); 130 when interrupted, 143 on SIGTERM. Every error is
printed as one `error: ...` line (`--traceback` for the trace).
This package is the only part of gpusim that prints: `run.py` (the run command: source
views, pictures, traces), `commands.py` (list, presets, collective), `check.py`, `sweep.py`;
`exits.py`: the exit statuses and the one-line error report; `program_args.py`: the PROGRAM
argument resolved to programs, their sizes and parameters; this module parses the command
line and dispatches.
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

from gpusim import __version__
from gpusim.cli.exits import (EXIT_CODES, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED, UsageError, is_user_error,
                              report_error)
from gpusim.errors import Terminated


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


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors stay one line, whatever the arguments hold (an
    argument with a newline is quoted in the message)."""

    def error(self, message: str):
        super().error(" ".join(message.split()))


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                        help="show the Python traceback of an error")
    p = _Parser(prog="gpusim", parents=[common],
                                description="Run CUDA kernels (Numba) in a GPU simulator and see where the work goes.",
                                epilog="exit status:\n" + "\n".join(f"  {c:<4} {m}" for c, m in EXIT_CODES),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(traceback=False)
    p.add_argument("--version", action="version", version=f"gpusim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    r = sub.add_parser("run", parents=[common], help="run a program (or family, or .py file) and show its source view")
    r.add_argument("program", metavar="PROGRAM",
                   help="a program name (gpusim list), a family prefix (reduce, transpose, matmul, histogram) "
                        "or the path of a .py file defining PROGRAM = ProgramSpec(...) (or of a .cu file with such a "
                        ".py beside it)")
    r.add_argument("--gpu", default="h100", help="GPU preset (gpusim presets); default h100")
    r.add_argument("--size", default="default", help="named size: default, large or another of the program's (an unknown name lists them)")
    r.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a size parameter (--set n=4096) or, with a dotted key, a GPU spec field "
                        "(--set sm.count=64 --set hbm.bandwidth_GBps=8000); repeatable")
    r.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    r.add_argument("--json", action="store_true", help="print one JSON object (metrics and per-line stats)")
    r.add_argument("--no-check", dest="check", action="store_false", help="skip the check against numpy")
    r.add_argument("--tolerance", metavar="ATOL[,RTOL]", default=None,
                   help="accept float outputs within ATOL (+ RTOL x |expected|) of numpy's, e.g. 1e-6 for FMA "
                        "contraction; default: the program's own (Case.atol, Case.rtol; 0 = exact)")
    r.add_argument("--functional", dest="timing", action="store_false",
                   help="functional simulation only: counters, no predicted time")
    r.add_argument("--timing", dest="timing", action="store_true", default=True,
                   help="predict time with the timing model (the default)")
    r.add_argument("--mode", choices=("auto", "full", "sampled"), default="auto",
                   help="timing: simulate every SM and block (full) or a sample of SMs and waves (sampled); "
                        "auto samples launches of more blocks than SMs")
    r.add_argument("--unknown-sass", choices=("error", "warn"), default="error",
                   help="timing: a SASS opcode gpusim's table lacks refuses the kernel (error) or is timed as a "
                        "generic ALU instruction with a warning and a count, gpusim__sass_estimated_inst.sum (warn)")
    r.add_argument("--trace", metavar="FILE.json",
                   help="write a Chrome trace (open in ui.perfetto.dev) of one SM's warps, stalls and memory "
                        "requests over a window of cycles; a family writes FILE_<program>.json per member")
    r.add_argument("--plot", metavar="DIR",
                   help="write the run's figures (bank, coalescing and divergence maps, roofline, "
                        "occupancy, warp timeline) as PNG files <program>_<figure>.png into DIR; a family also "
                        "gets <family>_ladder.png, its members' predicted time and counters side by side")
    r.add_argument("--html", metavar="FILE",
                   help="write one self-contained HTML page: the source view with per-line heat, the figures "
                        "and per-line bank/coalescing maps (a family: every member on one page)")
    r.add_argument("--map-block", type=int, default=None, metavar="N",
                   help="draw the bank, coalescing and divergence maps of thread block N (linear id; default: "
                        "block 0 for the access maps, the most divergent of 8 sampled blocks for the divergence map)")
    r.add_argument("--map-warp", type=int, default=None, metavar="W",
                   help="draw the access maps of warp W of that block (default: each access's worst execution)")
    r.add_argument("--max-steps", type=int, default=None, metavar="N",
                   help="steps (basic blocks of a group of warps) one batch of blocks may take before the kernel "
                        "is reported as not finishing (exit 10); default: no limit, a kernel runs until it "
                        "finishes or can make no more progress (gpusim/functional/budget.py)")
    r.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop a launch still running after this many seconds (exit 10); default: no limit")
    r.add_argument("--predict-only", action="store_true",
                   help="predict time without computing the outputs: execute only the blocks the sampled timing "
                        "model times (refused, with the reason, for kernels whose blocks depend on each other)")
    r.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes for the functional run's batches of blocks (default: GPUSIM_WORKERS, else "
                        "every CPU; kernels whose blocks may communicate, and timing, run on one)")
    r.add_argument("--core", choices=("fast", "reference"), default=None,
                   help="functional core: compiled ops (fast, the default) or the numpy reference interpreter; "
                        "results are identical")
    r.add_argument("--trace-sm", type=int, default=0, metavar="N", help="the SM traced (default 0)")
    r.add_argument("--trace-cycles", default="0:20000", metavar="START:END",
                   help="the cycles traced (default 0:20000)")
    r.set_defaults(func=_command("run", "cmd_run"))

    ck = sub.add_parser("check", parents=[common], help="run a program under the sanitizer tools (memcheck, "
                        "racecheck, initcheck, synccheck); exit status 1 when they find anything")
    ck.add_argument("program", metavar="PROGRAM_OR_FILE", help="a program name, family prefix or .py file, as for run")
    ck.add_argument("--tool", dest="tools", action="append", default=[], metavar="TOOL",
                    help="memcheck, racecheck, initcheck, synccheck or all (the default); repeatable")
    ck.add_argument("--gpu", default="h100", help="GPU preset (gpusim presets); default h100")
    ck.add_argument("--size", default="default", help="named size of the program (default: default)")
    ck.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="override a size parameter (--set n=4096) or a dotted GPU spec field; repeatable")
    ck.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    ck.set_defaults(func=_command("check", "cmd_check"))

    sub.add_parser("list", parents=[common], help="the programs, with descriptions and launch shapes").set_defaults(
        func=_command("commands", "cmd_list"))
    pr = sub.add_parser("presets", parents=[common], help="the GPU presets")
    pr.add_argument("--show", metavar="NAME", help="print one preset (or a .toml spec) as a parts list with units")
    pr.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="with --show: apply spec overrides, e.g. --set sm.count=64")
    pr.set_defaults(func=_command("commands", "cmd_presets"))

    co = sub.add_parser("collective", parents=[common],
                        help="time an NCCL collective over N simulated GPUs, nccl-tests style")
    co.add_argument("op", metavar="OP", help="all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, "
                                             "send_recv")
    co.add_argument("--gpus", default=None, help="GPUs in the system, or a comma list (2,4,8: one table and one "
                                                 "plot over them; default: the preset's system.gpu_count, else 8)")
    co.add_argument("--gpu", default="h200", help="GPU preset or .toml (default h200)")
    co.add_argument("--sizes", default="64K:1G", help="MIN:MAX[:FACTOR] (powers of FACTOR, default 2) or a comma "
                                                      "list of byte counts (default 64K:1G)")
    co.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="spec overrides, e.g. --set nvlink.links=12 --set system.topology=direct")
    co.add_argument("--algorithm", choices=("ring", "tree"), help="force NCCL_ALGO (default: NCCL's choice)")
    co.add_argument("--protocol", choices=("LL", "LL128", "Simple"), help="force NCCL_PROTO (default: NCCL's choice)")
    co.add_argument("--in-place", action="store_true",
                    help="NCCL's in-place call (one buffer per rank; default out of place, as nccl-tests "
                         "measures): a broadcast root then sends without copying into its own output")
    co.add_argument("--yes", action="store_true",
                    help="simulate more than 256 GPUs (minutes per size: refused otherwise, with an estimate)")
    co.add_argument("--json", action="store_true", help="one JSON object per size")
    co.add_argument("--plot", metavar="FILE", help="write busbw against size (PNG/SVG/PDF by extension)")
    co.set_defaults(func=_command("commands", "cmd_collective"))
    from gpusim.cli.sweep import add_parser as add_sweep  # a cycle: gpusim.cli.sweep imports this package's helpers
    add_sweep(sub, common)                       # gpusim sweep (gpusim/cli/sweep.py)
    return p


def _command(module: str, name: str):
    """The command function `name` of gpusim.cli.<module>, imported when it runs."""
    def run(args):
        return getattr(importlib.import_module(f"gpusim.cli.{module}"), name)(args)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:                      # --help, --version, usage errors: argparse printed them
        return int(e.code or 0) if not isinstance(e.code, str) else EXIT_ERROR
    previous = _on_sigterm()
    try:
        return args.func(args)
    except KeyboardInterrupt as e:              # Ctrl-C, or SIGTERM (errors.Terminated): one line
        terminated = isinstance(e, Terminated)
        sys.stderr.write("\n" + (" ".join(str(e).split()) or ("terminated" if terminated else "interrupted")) + "\n")
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except Exception as e:
        if not is_user_error(e):
            raise
        return report_error(e, args.traceback)
    finally:
        _restore_sigterm(previous)


def _on_sigterm():
    """While a command runs, SIGTERM raises errors.Terminated in the main thread (a
    KeyboardInterrupt: a sweep stops as on Ctrl-C, keeping its points). The previous handler,
    to restore; None where signals cannot be set (not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise Terminated()
    return signal.signal(signal.SIGTERM, handler)


def _restore_sigterm(previous) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


