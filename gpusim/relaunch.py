"""A Triton launch like an earlier one, made ready at once: what binding, checking and planning
gave the earlier launch of the same kernel, GPU, kinds of arguments, meta-parameters and options
(a `Recipe`), reused with this launch's arrays.

A Triton kernel in a loop (a benchmark, a training step, a notebook cell run again) is launched
again and again with arguments of the same kinds. On the general path each such launch picks its
config (`triton_autotune.autotune_configs`), finds its bound source (`triton_launch._source`),
binds it (grid, block, PTX-order arguments, shared memory: `TritonSource.bind`), checks its
options and shape (`api._launch`) and finds its plan's template (`launch_template`), each a
function of what this module's key holds: about a tenth of a small launch's time (the 64-sized
Triton matmul: ~0.15 of ~1.4 ms). A recipe keeps what they gave: the source with no arrays, the
grid, the template; a launch with the same key takes the source rebound to its arrays
(`TritonSource.rebound`), evaluates a callable grid again (a function of the arguments and
meta-parameters, as Triton calls it every launch: another grid than the recipe's takes the
general path), its PTX-order arguments (`TritonSource.arguments`) and a memory the template fills
with them (`Template.instantiate`), and runs as any launch (`api._started`).

The key: the kernel object (a `@triton.jit` function itself: autotuned and heuristics-wrapped
kernels take the general path), the spec object (`resolve_gpu`'s, which a calibrated preset's new
file replaces), the arguments' kinds (`launch_template.argument_key`: an array's dtype, shape,
layout, writability and aliasing; a scalar's type and exact value), the meta-parameters
(`triton_launch.config_key`), num_warps, num_stages, block, shared_bytes, the functional core
(`resolve_core`: GPUSIM_CORE read each launch) and the launch options that are plain values
(timing as a bool, batch_lanes, max_steps, max_warps, time_limit_s, workers). A launch with a
sanitizer tool, a progress callback, timing options, outputs=False, peer arguments, clusters or
device addresses takes the general path every time. Only launches whose plan a template keeps (see
`launch_template`) leave a recipe.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from gpusim.functional.fastpath import resolve_core
from gpusim.functional.prepared import PreparedLaunch
from gpusim import launch_template
from gpusim.launch_template import Template, argument_key
from gpusim.triton_launch import config_key

MAX_RECIPES = 64
_RECIPES: dict = {}
_LOCK = threading.Lock()
_VALUES = (int, float, bool, str, type(None))
# the launch options a recipe keys on (plain values), and those that must be None for a launch to have one
KEYED = ("timing", "batch_lanes", "max_steps", "max_warps", "time_limit_s", "workers", "outputs")
UNKEYED = ("timing_options", "peer_args", "check", "progress", "cluster", "device_addresses")


@dataclass(frozen=True)
class Recipe:
    kernel: object                 # the @triton.jit function launched
    spec: object                   # the GPUSpec it was launched on
    source: object                 # its TritonSource, holding no arrays (`TritonSource.unbound`)
    grid: tuple                    # (x, y, z) blocks, as the source's `grid` gave it
    metadata: object               # Triton's compiled metadata (scratch sizes: `TritonSource.arguments`)
    template: Template             # the plan and memory layout every launch of the key gets


def key(kernel, args, spec, block, shared_bytes, constexprs, num_warps, num_stages, options: dict) -> tuple | None:
    """The recipe key of a launch (module docstring), or None where it takes the general path."""
    if type(kernel).__name__ in ("Autotuner", "Heuristics") or any(options[o] is not None for o in UNKEYED):
        return None
    opts = tuple(options[o] for o in KEYED)
    if not all(type(v) in _VALUES for v in opts) or type(options["core"]) not in (str, type(None)) \
            or options["outputs"] is not True:
        return None
    if type(shared_bytes) is not int or type(num_warps) not in (int, type(None)) \
            or type(num_stages) not in (int, type(None)):
        return None
    if block is not None and not (type(block) is tuple and all(type(v) is int for v in block)):
        return None
    if constexprs is None:
        consts = ()
    elif type(constexprs) is dict:
        consts = config_key(constexprs)
        if consts is None:
            return None
    else:
        return None
    if type(args) is not tuple and type(args) is not list:
        return None
    a = argument_key(tuple(args))
    if a is None:
        return None
    return (id(kernel), id(spec), a, consts, num_warps, num_stages, block, shared_bytes,
            resolve_core(options["core"]), opts)


def find(k: tuple, kernel, spec, grid, args) -> tuple[PreparedLaunch, tuple] | None:
    """(the launch prepared, its PTX-order arguments) from the recipe of key `k`, or None where
    there is none or its grid differs."""
    r = _RECIPES.get(k)
    if r is None or r.kernel is not kernel or r.spec is not spec:
        return None
    source = r.source.rebound(args)
    if source.grid(grid) != r.grid:
        return None
    ptx_args = source.arguments(r.metadata, r.grid)
    plan, memory, marshalled = r.template.instantiate(ptx_args)
    return PreparedLaunch(plan, memory, marshalled, source, ptx_args), ptx_args


def keep(k: tuple, kernel, prepared: PreparedLaunch, args: tuple, core: str | None) -> None:
    """Make the recipe of key `k` from a launch of `kernel` just prepared on the general path
    (`prepared`, with PTX-order arguments `args`), where its plan is a template's."""
    source = prepared.source
    if source.fn is not kernel:
        return
    spec, geo = prepared.spec, prepared.geometry
    tkey = launch_template.key(source, spec, geo, args, prepared.shared_bytes, resolve_core(core))
    template = None if tkey is None else launch_template.kept(tkey)
    if template is None or template.plan is not prepared.plan:
        return
    recipe = Recipe(kernel, spec, source.unbound(), geo.grid, source.compiled_triton(spec.compute_capability)[1],
                    template)
    with _LOCK:
        if len(_RECIPES) >= MAX_RECIPES:
            _RECIPES.clear()
        _RECIPES[k] = recipe
