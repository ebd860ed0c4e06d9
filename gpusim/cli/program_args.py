"""The PROGRAM argument of the `gpusim` command: a program of the library, a family of them
(a name prefix, in teaching order), or a user's file defining `PROGRAM`; its size and the
`--set` parameters (split from GPU spec overrides), checked against the program's sizes, and
its inputs built. A bad name, size or parameter is a `UsageError` naming the valid ones.
"""
from __future__ import annotations

import difflib
from pathlib import Path

from gpusim.cli.exits import UsageError
from gpusim.specs.describe import schema
from gpusim.specs.overrides import ALIASES

# Teaching order of the families whose members build on each other; other prefix
# matches run in name order.
FAMILY_ORDER = {
    "reduce": ("reduce_interleaved_divergent", "reduce_interleaved_strided", "reduce_sequential",
               "reduce_first_add", "reduce_warp_shuffle"),
    "transpose": ("transpose_naive", "transpose_shared", "transpose_padded"),
    "matmul": ("matmul_naive", "matmul_tiled"),
    "histogram": ("histogram_global", "histogram_shared"),
}


def split_sets(items: list[str], members=()) -> tuple[list[str], list[str]]:
    """`--set` items -> (GPU spec overrides, program parameters). A dotted key is a spec
    field; so is a bare one that names a spec field or alias (`sm_count`, the name `gpusim
    presets --show` prints) unless a program of `members` has a parameter of that name."""
    params = {k for m in members for sizes in m.sizes.values() for k in sizes}
    gpu, prog = [], []
    for item in items or []:
        key = item.partition("=")[0].strip()
        spec_key = "." in key or ((key in schema() or key in ALIASES) and key not in params)
        (gpu if spec_key else prog).append(item)
    return gpu, prog


def resolve(name: str):
    """PROGRAM argument -> (family name or None, [ProgramSpec, ...])."""
    import programs  # programs/ sits above gpusim: loaded only when a program is named
    if not name.strip():
        raise UsageError("an empty program name; `gpusim list` shows the programs")
    if name.endswith((".py", ".cu")) or "/" in name or Path(name).is_file():
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
        close = difflib.get_close_matches(unknown[0], list(schema()) + list(ALIASES), n=2, cutoff=0.75)
        hint = f"; or a GPU spec field? did you mean {' or '.join(close)}?" if close else ""
        raise UsageError(f"{spec.name} has no parameter {unknown[0]!r}; its parameters: "
                         + ", ".join(f"{k}={v}" for k, v in known.items()) + hint)
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
