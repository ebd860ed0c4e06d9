"""`gpusim check PROGRAM`: run a program (a family, or a user's .py file) under the
sanitizer tools and print their findings as compute-sanitizer does.

    gpusim check reduce_sequential                   # every tool
    gpusim check my_kernels.py --tool racecheck      # a file defining PROGRAM
    gpusim check bank_conflict_demo --set stride=33 --tool memcheck --tool initcheck

Exit status: 0 when no tool found anything, 1 when any did, 2 for errors a user can act on.
The outputs are not compared with numpy (a racy kernel may still compute the right values).
"""
from __future__ import annotations

from gpusim import api
from gpusim.cli import parse_sets
from gpusim.cli.exits import EXIT_OK, UsageError
from gpusim.cli.program_args import build_case, params_for, resolve, split_sets
from gpusim.errors import ConfigError
from gpusim.sanitizer import normalize, summary
from gpusim.specs.overrides import resolve as resolve_spec

EXIT_HAZARDS = 1


def cmd_check(args) -> int:
    try:
        tools = normalize(args.tools or "all")
    except ConfigError as e:                 # --tool is the command line's: exit 2, not a GPU spec's 4
        raise UsageError(str(e)) from None
    _, specs = resolve(args.program)
    gpu_sets, prog_sets = split_sets(args.sets, specs)
    gpu = resolve_spec(args.gpu, gpu_sets)
    sets = parse_sets(prog_sets)
    plans = [(spec, params_for(spec, args.size, sets)) for spec in specs]      # bad --size/--set: fail first
    found = []
    for spec, params in plans:
        case = build_case(spec, params, args.seed)
        print(f"========= {spec.name}: {', '.join(tools)}", flush=True)
        result = api.launch(case.kernel, case.grid, case.block, case.args, gpu=gpu,
                            shared_bytes=case.shared_bytes, check=tools)
        for h in result.hazards:
            print(h.format(), flush=True)
        print(summary(result.hazards), flush=True)
        found += result.hazards
    return EXIT_HAZARDS if found else EXIT_OK
