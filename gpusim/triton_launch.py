"""`gpusim.launch` of a Triton kernel (`gpusim/frontend/tritonsource.py`): the launch's arguments
bound to a `TritonSource` (grid, block of num_warps * 32 threads, shared memory from Triton's
metadata, PTX-order arguments) and launched as any other source.

A `triton.autotune` kernel's configs run one by one, each on its own copy of the array
arguments (so every config sees the same inputs, as Triton's `reset_to_zero`/`restore_value`
arrange on a GPU). The config kept is, with `timing=True`, the one with the least predicted
`gpu__time_duration.sum` (what Triton's benchmark picks on the GPU), else the first; its outputs
are copied into the caller's arrays and its `Result` returned, with `Result.extra["autotune"]`
listing every config (meta-parameters, num_warps, num_stages, predicted ns or None) and the
index chosen.
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import LaunchError
from gpusim.frontend.triton_autotune import autotune_configs, prune
from gpusim.frontend.tritonsource import TritonSource, is_triton
from gpusim.launch_template import argument_key

TIME = "gpu__time_duration.sum"
MAX_SOURCES = 64
_SOURCES: dict = {}          # (kernel, config, argument kinds) -> its first launch's TritonSource, unbound


def triton_launch(kernel, grid, block, args, spec, shared_bytes, constexprs, num_warps, num_stages, again):
    """Launch Triton kernel `kernel` through `again(source, grid, block, args, shared_bytes=...)`."""
    if not is_triton(kernel):
        raise LaunchError(f"constexprs=, num_warps= and num_stages= are for Triton kernels; {kernel!r:.60} is not one")
    if constexprs is not None and not isinstance(constexprs, dict):
        raise LaunchError(f"constexprs must be a dict of meta-parameter name -> value, got {constexprs!r:.60}")
    for what, v in (("num_warps", num_warps), ("num_stages", num_stages)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise LaunchError(f"{what} must be a positive integer, got {v!r}")
    if not isinstance(args, (tuple, list)):
        raise LaunchError(f"args must be a tuple or list of the kernel's arguments, got {type(args).__name__}")
    fn, configs, heuristics, tuning = autotune_configs(kernel, constexprs, num_warps, num_stages)
    if tuning is None:
        return _one(fn, configs[0], heuristics, grid, block, args, spec, shared_bytes, again)
    configs = prune(fn, configs, tuning, args, constexprs)
    zero = _reset_positions(fn, tuning, args)
    runs = []
    for config in configs:
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        for k in zero:                      # reset_to_zero: as Triton's autotuner zeroes them before each run
            mine[k][...] = 0
        result = _one(fn, config, heuristics, grid, block, mine, spec, shared_bytes, again)
        runs.append((config, mine, result))
    times = [r.metrics.get(TIME) for _, _, r in runs]
    best = int(np.argmin(times)) if all(t is not None for t in times) else 0
    for a, b in zip(args, runs[best][1]):
        if isinstance(a, np.ndarray) and a.flags.writeable:
            a[...] = b
    result = runs[best][2]
    result.extra["autotune"] = {"configs": [{"constexprs": c.constexprs, "num_warps": c.num_warps,
                                             "num_stages": c.num_stages, "time_ns": t}
                                            for (c, _, _), t in zip(runs, times)],
                                "chosen": best, "by": TIME if times[best] is not None else "first config"}
    return result


def _reset_positions(fn, tuning, args) -> list[int]:
    """Positions in `args` of the array arguments `reset_to_zero` names."""
    if not tuning.reset_to_zero:
        return []
    runtime = [p.name for p in fn.params if not p.is_constexpr]
    names = runtime if len(args) == len(runtime) else list(fn.arg_names)
    unknown = [n for n in tuning.reset_to_zero if n not in names]
    if unknown:
        raise LaunchError(f"kernel {fn.__name__}: autotune reset_to_zero names {', '.join(unknown)}, which is not "
                          f"an argument of the launch ({', '.join(names)})")
    return [names.index(n) for n in tuning.reset_to_zero if isinstance(args[names.index(n)], np.ndarray)]


def _one(fn, config, heuristics, grid, block, args, spec, shared_bytes, again):
    source = _source(fn, config, heuristics, args)
    g, b, ptx_args, shared = source.bind(spec, grid, block, shared_bytes)
    return again(source, g, b, ptx_args, shared_bytes=shared)


def _source(fn, config, heuristics, args) -> TritonSource:
    """The `TritonSource` of a launch: made once per kernel, config and arguments' kinds
    (`launch_template.argument_key`: every scalar's exact value, each array's dtype, shape and
    layout: what Triton's specialisation reads), and for a later launch with the same ones a copy
    holding its own arrays (`TritonSource.rebound`; what binding the arguments again, about a
    tenth of a small launch's time, would give). Heuristics (functions of the arguments) and
    meta-parameters that are not plain values are bound every time."""
    k = None
    if not heuristics:
        a = argument_key(tuple(args))
        consts = config_key(config.constexprs)
        if a is not None and consts is not None:
            k = (id(fn), consts, config.num_warps, config.num_stages, config.maxnreg, a)
    hit = None if k is None else _SOURCES.get(k)
    if hit is not None and hit.fn is fn:
        return hit.rebound(args)
    source = TritonSource(fn, args, config, heuristics)
    if k is not None:
        if len(_SOURCES) >= MAX_SOURCES:
            _SOURCES.clear()
        _SOURCES[k] = source.unbound()
    return source


def config_key(constexprs: dict) -> tuple | None:
    """Meta-parameters as a key (a value's type with it: 1 and True are two keys), or None where one
    is not an int, bool, str, None or float."""
    out = []
    for name, v in constexprs.items():
        t = type(v)
        if t is float:
            v = v.hex()
        elif t not in (int, bool, str) and v is not None:
            return None
        out.append((name, t, v))
    return tuple(sorted(out))
