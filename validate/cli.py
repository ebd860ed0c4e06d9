"""`python -m validate SUBCOMMAND ...`: the subcommands of the validation package.

Each subcommand is a module with `add_arguments(parser)` and `run(args) -> int`, named
in `COMMANDS` (name -> (module, one-line help)) and imported only when chosen, so a
subcommand that needs a GPU costs nothing to the others.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from gpusim.errors import GpusimError

COMMANDS: dict[str, tuple[str, str]] = {
    "measure": ("validate.measure", "run programs and microbenchmarks on this machine's GPU; write data/measurements/<gpu>.json"),
    "compare": ("validate.compare", "predictions vs a measurement file, per kernel and metric, with summary figures"),
    "measure-multi": ("validate.measure_multi", "NCCL collectives, peer copies and peer-memory kernels on this "
                      "machine's GPUs; write data/measurements/<gpu>x<n>_multi.json"),
    "compare-multi": ("validate.compare_multi", "collective, peer-copy and peer-kernel predictions vs a "
                      "measure-multi file"),
    "calibrate-multi": ("validate.calibrate_multi", "fit the NCCL numbers (nccl.*) to a measure-multi file; write "
                        "them into the calibrated preset"),
    "calibrate": ("validate.calibrate", "fit spec numbers to the microbenchmarks; write a <gpu>-calibrated preset"),
    "orderings": ("validate.orderings", "the second held-out suite's textbook orderings in a measurement file "
                  "(and in `compare --out` predictions)"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m validate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(p)
    args = parser.parse_args(argv)
    try:
        return importlib.import_module(COMMANDS[args.command][0]).run(args)
    except GpusimError as e:                 # a refusal the user can act on: one line, not a traceback
        print(f"python -m validate {args.command}: {e}", file=sys.stderr)
        return 2
