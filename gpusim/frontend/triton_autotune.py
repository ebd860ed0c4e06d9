"""`triton.autotune` / `triton.heuristics` wrappers of a Triton kernel (`tritonsource.py`): the
configs a launch runs one by one (`autotune_configs`; `gpusim/triton_launch.py` runs them), after
`prune_configs_by` (`prune`), with `reset_to_zero` arguments zeroed for each config; a config's
`maxnreg` is passed to Triton's compiler. Hooks (user code on torch tensors), clusters
(`num_ctas` > 1) and `ir_override` are refused in one line naming the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.errors import LaunchError, UnsupportedKernel


@dataclass(frozen=True)
class Config:
    """One way to launch the kernel: its meta-parameters and launch options."""
    constexprs: dict
    num_warps: int
    num_stages: int
    maxnreg: int | None = None          # Triton's `.maxnreg` for the kernel (None: ptxas decides)


@dataclass(frozen=True)
class Tuning:
    """What an `@triton.autotune` wrapper asks besides its configs: arguments zeroed before each
    config runs (`reset_to_zero`), and the pruning of `prune_configs_by`."""
    reset_to_zero: tuple = ()
    early_config_prune: object = None
    perf_model: object = None
    top_k: object = 1.0


def autotune_configs(kernel, constexprs: dict | None, num_warps: int | None,
                     num_stages: int | None) -> tuple[object, list[Config], list, Tuning | None]:
    """(the `@triton.jit` function, its launch configs, heuristics to apply, the autotuner's
    other requests or None). An autotuned kernel has one config per `triton.Config` (its kwargs
    over `constexprs`); any other one. What gpusim cannot do as Triton does is refused in one
    line naming the kernel: a config's or the autotuner's pre/post hook (user code run on torch
    tensors), num_ctas > 1 (clusters), an ir_override."""
    heuristics = []
    configs = tuner = None
    while type(kernel).__name__ in ("Autotuner", "Heuristics"):     # triton.runtime.autotuner's wrappers
        if type(kernel).__name__ == "Autotuner":
            if configs is not None:
                raise UnsupportedKernel(f"kernel {_name(kernel)}: nested triton.autotune is not supported")
            configs, tuner = kernel.configs, kernel
        else:
            heuristics.append(kernel.values)
        kernel = kernel.fn
    if not hasattr(kernel, "arg_names"):
        raise UnsupportedKernel(f"{kernel!r:.60} is not a @triton.jit function gpusim can launch")
    base = dict(constexprs or {})
    if configs is None:
        return kernel, [Config(base, num_warps or 4, num_stages or 3)], heuristics, None
    name = kernel.__name__
    for hook in ("pre_hook", "post_hook"):
        if getattr(tuner, f"user_defined_{hook}", False):
            raise UnsupportedKernel(f"kernel {name}: triton.autotune(..., {hook}=...) runs user code on torch "
                                    "tensors, which gpusim does not do (zero or restore arguments with "
                                    "reset_to_zero= / restore_value=, which gpusim honours)")
    out = []
    for c in configs:
        if c.pre_hook is not None:
            raise UnsupportedKernel(f"kernel {name}: autotune config {c} has a pre_hook, which gpusim does not run")
        if getattr(c, "num_ctas", 1) not in (1, None):
            raise UnsupportedKernel(f"kernel {name}: autotune config {c} asks num_ctas={c.num_ctas} (a thread-block "
                                    "cluster per program), which gpusim does not launch")
        if getattr(c, "ir_override", None) is not None:
            raise UnsupportedKernel(f"kernel {name}: autotune config {c} has an ir_override, which gpusim does not use")
        out.append(Config({**base, **c.kwargs}, num_warps or c.num_warps, num_stages or c.num_stages,
                          getattr(c, "maxnreg", None)))
    prune = getattr(tuner, "early_config_prune", None)
    model = getattr(tuner, "perf_model", None)
    tuning = Tuning(tuple(getattr(tuner, "reset_to_zero", ()) or ()), prune, model,
                    getattr(tuner, "configs_top_k", 1.0))
    return kernel, out, heuristics, tuning


def prune(fn, configs: list[Config], tuning: Tuning, args, constexprs: dict | None) -> list[Config]:
    """The configs `prune_configs_by` keeps, as Triton's `Autotuner.prune_configs` decides:
    `early_config_prune(configs, named args, **launch keywords)`, then the `top_k` best by
    `perf_model(**named args, **launch keywords, **config kwargs)`; the named arguments are the
    launch's numpy arrays and scalars (a hook written for torch tensors may need adapting)."""
    if tuning.early_config_prune is None and tuning.perf_model is None:
        return configs
    import triton                            # lazy: the optional `triton` extra, only for Triton kernels
    runtime = [p.name for p in fn.params if not p.is_constexpr]
    nargs = dict(zip(runtime if len(args) == len(runtime) else fn.arg_names, args))
    kwargs = dict(constexprs or {})
    tconf = {id(c): triton.Config({k: v for k, v in c.constexprs.items() if k not in kwargs}, num_warps=c.num_warps,
                                  num_stages=c.num_stages, maxnreg=c.maxnreg) for c in configs}
    back = {id(t): c for c, t in zip(configs, tconf.values())}
    try:
        kept = list(tconf.values())
        if tuning.early_config_prune is not None:
            kept = list(tuning.early_config_prune(kept, nargs, **kwargs))
        if tuning.perf_model is not None:
            top_k = tuning.top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(configs) * top_k)
            if len(kept) > top_k:
                est = {id(t): tuning.perf_model(**nargs, **kwargs, **t.all_kwargs()) for t in kept}
                kept = sorted(kept, key=lambda t: est[id(t)])[:top_k]
    except Exception as e:                   # the user's pruning function failed on numpy arguments
        raise LaunchError(f"kernel {fn.__name__}: autotune prune_configs_by raised {type(e).__name__}: "
                          f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}") from None
    out = [back[id(t)] for t in kept if id(t) in back]
    if not out:
        raise LaunchError(f"kernel {fn.__name__}: autotune prune_configs_by kept none of the "
                          f"{len(configs)} configs")
    return out


def _name(kernel) -> str:
    return getattr(getattr(kernel, "fn", kernel), "__name__", repr(kernel))
