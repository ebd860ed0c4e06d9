"""`gpusim.launch`: run a Numba CUDA kernel in the simulator.

The GPU is resolved and the launch shape checked once, here; then kernel + args -> one
frozen `LaunchPlan` (`gpusim/launch_plan.py`: PTX through the seam of `gpusim.frontend`, the
decoded blocks, memory layout, marshalled arguments, peer ranges) -> batches of thread blocks
run by the SIMT executor (`gpusim.functional.prepared`) -> timed by the timing engine when
asked (`gpusim.timing.engine`, reading the plan) -> arrays copied back into the caller's numpy
arrays -> a `Result` with Nsight-named counters.

`gpusim.prepare(...)` returns the `PreparedLaunch` itself (its `plan`, memory and counters),
for driving warps step by step.

Bad input never surfaces as an internal traceback: every error is a `gpusim.errors.
GpusimError` (the `isa` layer's errors converted to theirs). A kernel that can make no more
progress is stopped with an error naming its loop (`gpusim/functional/watchdog.py`); a long one
runs to the end unless the caller bounds it (`max_steps`, `time_limit_s`:
`gpusim/functional/budget.py`); a launch whose functional execution alone would take hours
(more than `MAX_WARPS` warps) is refused up front with an estimate.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import numpy as np

from gpusim.errors import GpusimError, LaunchError, UnsupportedKernel, from_isa
from gpusim.frontend.numbasource import as_source
from gpusim.frontend.tritonsource import is_triton
from gpusim.functional import parallel
from gpusim.functional.budget import Deadline, time_limit_error
from gpusim.functional.communication import sampling_refusal
from gpusim.functional.geometry import Geometry
from gpusim.functional.prepared import PreparedLaunch
from gpusim.functional.relevance import value_free
from gpusim.launch_checks import check_dims
from gpusim.launch_plan import plan_launch
from gpusim.result import Result
from gpusim.sanitizer import checked
from gpusim.specs.overrides import resolve
from gpusim.timing.engine import TimingEngine, TimingOptions
from gpusim.timing.metrics_builder import STALL_METRIC
from gpusim.triton_launch import triton_launch
from gpusim import relaunch

BATCH_LANES = 1 << 15        # lanes executed together: bounds memory, keeps numpy calls large
MAX_WARPS = 1 << 24          # warps a launch may execute functionally (the programs' largest: 524,288)
WARPS_PER_SECOND = 60_000    # functional execution of a short kernel on one core, at best (vector_add: ~50-100k)


@dataclass(frozen=True)
class Progress:
    """Where a running launch is (`launch(..., progress=callback)`): after every batch of
    blocks, every timed block, and every 1024 steps of a batch (so a long batch shows its
    steps climbing)."""
    kernel: str
    phase: str                      # 'functional', 'timing', or 'timing again' (a settled sample's second run)
    blocks_done: int
    blocks_total: int
    steps: int = 0                  # steps of the batch running now (0 between batches)
    step_budget: int = 0            # that batch's step budget (max_steps), 0 for none
    simulated_ns: float | None = None   # timing: simulated time so far


class _UserErrors:
    """`with user_errors():` turns the `isa` layer's errors into gpusim's (`gpusim.errors.from_isa`);
    a class rather than a generator context manager (a launch enters it twice)."""
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, tb) -> bool:
        if e is None or isinstance(e, GpusimError) or not isinstance(e, Exception):
            return False
        converted = from_isa(e)
        if converted is e:
            return False
        raise converted from None


_USER_ERRORS = _UserErrors()


def user_errors() -> _UserErrors:
    return _USER_ERRORS


def prepare(kernel, grid, block, args, gpu="h100", shared_bytes: int = 0, peer_args=None,
            core: str | None = None, cluster=None, device_addresses=None) -> PreparedLaunch:
    """Compile, lay out memory and marshal arguments, without running anything. `core`:
    'fast' or 'reference' (`gpusim.functional.fastpath`; default GPUSIM_CORE or 'fast');
    `device_addresses` as for `launch`."""
    check_arguments(shared_bytes, args)
    with user_errors():
        spec = resolve_gpu(gpu)
        source = as_source(kernel)
        return _prepare(source, spec, shape(spec, source.name, grid, block), args, shared_bytes, peer_args, core,
                        cluster, device_addresses)


def _prepare(source, spec, geometry: Geometry, args, shared_bytes: int, peer_args, core, cluster=None,
             device_addresses=None) \
        -> PreparedLaunch:
    """The launch planned once (`gpusim/launch_plan.py`) and handed to the functional core."""
    with user_errors():
        plan, memory, marshalled = plan_launch(source, spec, geometry, tuple(args), shared_bytes, peer_args, core,
                                               cluster, device_addresses)
        return PreparedLaunch(plan, memory, marshalled, source, args)


def check_arguments(shared_bytes, args) -> None:
    """LaunchError for dynamic shared memory that is not an integer, or arguments not in a sequence."""
    if isinstance(shared_bytes, (bool, np.bool_)) or not isinstance(shared_bytes, (int, np.integer)):
        raise LaunchError(f"shared_bytes (dynamic shared memory per block) must be an integer, got {shared_bytes!r}")
    if not isinstance(args, (tuple, list)):
        raise LaunchError(f"args must be a tuple or list of the kernel's arguments, got {type(args).__name__} "
                          f"{args!r:.60}")


def resolve_gpu(gpu):
    """A preset name, a path to a .toml spec file, or a GPUSpec."""
    return resolve(gpu)


def shape(spec, name: str, grid, block) -> Geometry:
    """The launch's grid and block, checked against `spec` (`launch_checks.check_dims`); for grids and
    blocks of plain ints (a Triton launch's), made once per spec, kernel name and shape."""
    k = (id(spec), name, grid, block) if type(grid) is tuple and type(block) is tuple and \
        all(type(v) is int for v in grid + block) else None
    hit = None if k is None else _SHAPES.get(k)
    if hit is not None and hit[0] is spec:
        return hit[1]
    geometry = Geometry(*check_dims(spec, name, grid, block))
    if k is not None:
        if len(_SHAPES) >= 256:
            _SHAPES.clear()
        _SHAPES[k] = (spec, geometry)
    return geometry


_SHAPES: dict = {}               # (id(spec), kernel, grid, block) -> (spec, its checked Geometry): `shape`


def check_size(name: str, geometry: Geometry, functional_all: bool, max_warps: int | None) -> None:
    """LaunchError with an estimate when executing every warp of the launch would take hours."""
    if max_warps is None or not functional_all:
        return
    g, b = geometry.grid, geometry.block
    blocks, threads = geometry.nblocks, geometry.threads_per_block
    warps = blocks * geometry.warps_per_block
    if warps <= max_warps:
        return
    hours = warps / WARPS_PER_SECOND / 3600
    raise LaunchError(f"kernel {name}: grid {g} x block {b} is {blocks:,} blocks, {blocks * threads:,} threads "
                      f"({warps:,} warps); the simulator executes every warp (at best about {WARPS_PER_SECOND:,} "
                      f"warps/s), so this launch would take at least {hours:,.1f} hours. gpusim refuses launches of "
                      f"more than {max_warps:,} warps: launch a smaller grid, time a sample with "
                      f"timing=True, timing_options=TimingOptions(functional='sampled'), or pass max_warps=None")


def launch(kernel, grid, block, args, gpu="h100", timing: "bool | TimingOptions" = False, shared_bytes: int = 0,
           *, batch_lanes: int = BATCH_LANES, max_steps: int | None = None, timing_options=None,
           peer_args: dict | None = None, check=None, progress=None,
           max_warps: int | None = MAX_WARPS, time_limit_s: float | None = None, core: str | None = None,
           workers: int | None = None, outputs: bool = True, constexprs: dict | None = None,
           num_warps: int | None = None, num_stages: int | None = None, cluster=None,
           device_addresses=None) -> Result:
    """Run `kernel[grid, block, 0, shared_bytes](*args)` on the simulated GPU `gpu`
    (a preset name, a .toml file, or a GPUSpec).

    numpy arrays in `args` are updated in place, as after a device round trip.
    `timing=True` also runs the SimPy timing model and adds predicted time, cycles,
    memory traffic, warp stalls and the bound to `Result.metrics` (and stalls per
    line); `timing_options` is a `gpusim.timing.TimingOptions` (full or sampled mode), which may
    also be passed as `timing` itself; any other non-bool `timing` is refused.
    A kernel runs until it finishes, or until its warps can make no more progress (`NoProgress`,
    naming the loop, block and thread: `gpusim/functional/watchdog.py`). `max_steps` bounds the
    steps of one batch of blocks, functional and timing alike (`StepBudgetExceeded`, naming the
    lines the warps were at), `time_limit_s` the launch's wall-clock time after compilation
    (`TimeLimitExceeded`; unlike everything else, machine-dependent): neither is set by default.
    `max_warps` refuses, before any work, a launch that would execute more warps (None: no limit).
    `progress` is called with a `Progress` record as the launch advances (`gpusim run` draws it).
    `peer_args` ({argument index: peer GPU id}) places those array arguments in a peer GPU's
    memory (the kernel runs on GPU 0 of `spec.system`, which needs gpu_count >= 2): results
    are the same, and the timing model sends their L1 misses, stores and atomics over NVLink
    (`gpusim/timing/memory/peer.py`; counters `nvltx__bytes.sum`, `nvlrx__bytes.sum`).
    `check` turns on sanitizer tools ("memcheck", "racecheck", "initcheck", "synccheck", a
    tuple of them or "all"; `gpusim.sanitizer`): their findings are `Result.hazards`, and a
    fault they report (bad address, divergent barrier) ends the launch with a Result
    instead of an exception.
    `core` is the functional core: 'fast' (compiled ops, the default) or 'reference' (the
    numpy interpreter that defines every instruction); both give identical results and
    counters (`gpusim.functional.fastpath`). The environment variable GPUSIM_CORE sets the default.
    `workers` runs the functional execution's batches of blocks on that many processes (None:
    GPUSIM_WORKERS, else every CPU this process may use); kernels whose blocks may communicate
    (global atomics, fences, grid sync, device malloc) and runs with a sanitizer or timing stay on
    one core (`gpusim.functional.parallel`). Results are identical; `Result.extra["workers"]` says
    how many ran and why.
    `outputs=False` predicts time only (it implies `timing=True`): only the blocks the sampled
    timing model times are executed, the arguments are left as they were, and
    `Result.extra["outputs"]` says so. Kernels whose timed blocks could depend on other blocks
    (atomics whose returned values are used, fences, volatile flags, device malloc) are refused
    with the reason (`gpusim.functional.communication`).
    `cluster` ((x, y, z) blocks, or an int) launches thread-block clusters, as the CUDA launch
    attribute does (a kernel's `__cluster_dims__` gives them too): the blocks of a cluster run
    together and share their shared memory (`gpusim/functional/cluster.py`); timing a cluster
    launch is not modelled yet (UnsupportedKernel).
    `device_addresses` (one device address or None per array argument, in order: what `validate
    measure` records as `arg_addresses`) puts each array at that address modulo 2 MiB, the GPU's
    large page (`gpusim/functional/memory.py`): the L2 slice and the atomic unit of a line follow
    the address bits (`timing/memory/l2_atomics.py`), so a small hot set's atomic rate depends on
    where the GPU's allocator put it. Default: the next 512-B boundary after the previous array.
    A `@triton.jit` kernel takes `constexprs` (meta-parameters), `num_warps` and `num_stages`;
    `block` is None and the grid may be a callable of the meta dict (`gpusim/triton_launch.py`).
    """
    options = dict(timing=timing, batch_lanes=batch_lanes, max_steps=max_steps, timing_options=timing_options,
                   peer_args=peer_args, check=check, progress=progress, max_warps=max_warps,
                   time_limit_s=time_limit_s, core=core, workers=workers, outputs=outputs, cluster=cluster,
                   device_addresses=device_addresses)
    if is_triton(kernel) or (constexprs, num_warps, num_stages) != (None, None, None):
        with user_errors():
            spec = resolve_gpu(gpu)
            k = relaunch.key(kernel, args, spec, block, shared_bytes, constexprs, num_warps, num_stages, options)
            hit = None if k is None else relaunch.find(k, kernel, spec, grid, args)
            if hit is not None:                  # launched before with arguments of these kinds (gpusim/relaunch.py)
                return _started(*hit, **{o: options[o] for o in STARTED})
            return triton_launch(kernel, grid, block, args, spec, shared_bytes, constexprs, num_warps, num_stages,
                                 partial(_launch, spec=spec, recipe=(k, kernel), **options))
    return _launch(kernel, grid, block, args, gpu=gpu, shared_bytes=shared_bytes, **options)


def _launch(kernel, grid, block, args, gpu=None, *, spec=None, timing: bool, shared_bytes: int = 0, batch_lanes: int,
            max_steps: int | None, timing_options, peer_args, check, progress, max_warps: int | None,
            time_limit_s: float | None, core: str | None, workers: int | None, outputs: bool, cluster=None,
            device_addresses=None, recipe: tuple = (None, None)) -> Result:
    """`launch` (see there), with `spec` the GPU already resolved (else `gpu` is resolved here):
    the GPU is resolved, the shape checked and the launch planned once. `recipe`: (its key, the
    Triton kernel) where the launch may leave a recipe for the next like it (`gpusim/relaunch.py`)."""
    for name, v in (("max_steps", max_steps), ("max_warps", max_warps), ("batch_lanes", batch_lanes),
                    ("workers", workers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise LaunchError(f"{name} must be a positive integer{' or None' if name != 'batch_lanes' else ''}, "
                              f"got {v!r}")
    if time_limit_s is not None and (isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float))
                                     or not 0 < time_limit_s < float("inf")):
        raise LaunchError(f"time_limit_s must be a positive number of seconds or None, got {time_limit_s!r}")
    if progress is not None and not callable(progress):
        raise LaunchError(f"progress must be a callable taking a gpusim.api.Progress, got {progress!r:.60}")
    if timing_options is not None:
        if not isinstance(timing_options, TimingOptions):
            raise LaunchError(f"timing_options must be a gpusim.timing.TimingOptions, got "
                              f"{type(timing_options).__name__} {timing_options!r:.60}")
    if isinstance(timing, TimingOptions):          # timing=TimingOptions(...): timed, with those options
        if timing_options is not None:
            raise LaunchError("timing= is a TimingOptions and timing_options= is given too: pass the options once")
        timing, timing_options = True, timing
    elif not isinstance(timing, (bool, np.bool_)):
        raise LaunchError(f"timing must be True, False or a gpusim.timing.TimingOptions, got "
                          f"{type(timing).__name__} {timing!r:.60}")
    if not isinstance(outputs, (bool, np.bool_)):
        raise LaunchError(f"outputs must be True or False, got {outputs!r:.60}")
    if not outputs:
        if check is not None:
            raise LaunchError("outputs=False (prediction only) executes a sample of the blocks: the sanitizer "
                              "tools need every block; drop check= or outputs=False")
        timing = True
        timing_options = dataclasses.replace(timing_options or TimingOptions(), functional="sampled")
    spec = spec if spec is not None else resolve_gpu(gpu)
    sampled = bool(timing and timing_options is not None and timing_options.functional == "sampled"
                   and timing_options.mode != "full")
    source = as_source(kernel)
    geometry = shape(spec, source.name, grid, block)
    check_size(source.name, geometry, not sampled, max_warps)
    check_arguments(shared_bytes, args)
    prepared = _prepare(source, spec, geometry, args, shared_bytes, peer_args, core, cluster, device_addresses)
    result = _started(prepared, args, timing=timing, timing_options=timing_options, batch_lanes=batch_lanes,
                      max_steps=max_steps, time_limit_s=time_limit_s, outputs=outputs, check=check, progress=progress,
                      workers=workers)
    if recipe[0] is not None:
        relaunch.keep(recipe[0], recipe[1], prepared, tuple(args), core)
    return result


STARTED = ("timing", "timing_options", "batch_lanes", "max_steps", "time_limit_s", "outputs", "check", "progress",
           "workers")


def _started(prepared: PreparedLaunch, args, *, timing: bool, timing_options, batch_lanes: int,
             max_steps: int | None, time_limit_s: float | None, outputs: bool, check, progress,
             workers: int | None) -> Result:
    """Run a launch prepared (`_launch`, or a recipe's: `gpusim/relaunch.py`) with its checked
    options (`timing` a bool, `timing_options` made sampled where `outputs` is False)."""
    if max_steps is not None:
        prepared.step_budget = int(max_steps)
    if time_limit_s is not None:
        prepared.deadline = Deadline(time_limit_s)
    if not outputs:
        why = sampling_refusal(prepared)
        if why is not None:
            raise UnsupportedKernel(f"kernel {prepared.name}: prediction only (outputs=False) executes just the "
                                    f"timed blocks, but {why}; run it with outputs=True")
        prepared.value_free = value_free(prepared.decoded.kernel)   # tensor results nothing timed depends on
    with user_errors():
        return checked(prepared, check, args,
                       lambda: _run(prepared, timing, batch_lanes, timing_options, progress, workers, outputs))


def _run(prepared: PreparedLaunch, timing: bool, batch_lanes: int, timing_options, progress,
         workers: int | None = None, outputs: bool = True) -> Result:
    if not timing:
        _run_functional(prepared, batch_lanes, progress, workers)
        result = prepared.finish()
        result.extra["workers"] = prepared.workers
        return result
    if prepared.cooperative:
        raise UnsupportedKernel(f"kernel {prepared.name} uses cuda.cg.this_grid() (grid-wide sync): the timing model "
                                "does not model a grid barrier; run it with timing=False (results are exact)")
    if prepared.geometry.cluster_size > 1:
        raise UnsupportedKernel(f"kernel {prepared.name} is launched in thread-block clusters of "
                                f"{prepared.geometry.cluster}: the timing model does not place clusters on GPCs yet; "
                                "run it with timing=False (results are exact)")
    opt = timing_options or TimingOptions()
    engine = None
    if progress is not None:
        def sim_ns():
            return engine.scheduler.now * engine.spec.cycle_ns if engine is not None else None

        def timed_block(done, total, chained=opt.progress):
            if chained is not None:
                chained(done, total)
            again = engine is not None and engine.settled        # timing.engine.TimingEngine.run
            progress(Progress(prepared.name, "timing again" if again else "timing", done, total,
                              simulated_ns=sim_ns()))

        def spinning(ex):
            done = engine.scheduler.done_blocks if engine is not None else 0
            total = engine.blocks_simulated if engine is not None else prepared.geometry.nblocks
            progress(Progress(prepared.name, "timing", done, total, ex.steps, ex.step_budget or 0, sim_ns()))
        opt = dataclasses.replace(opt, progress=timed_block)
        prepared.on_steps = spinning
    if prepared.deadline is not None:            # the time limit holds while blocks are timed too
        def in_time(done, total, chained=opt.progress, deadline=prepared.deadline):
            if deadline.passed():
                raise time_limit_error(prepared.name, deadline.seconds, timed=(done, total))
            if chained is not None:
                chained(done, total)
        def beat(done, total, deadline=prepared.deadline):     # within a long block too
            if deadline.passed():
                raise time_limit_error(prepared.name, deadline.seconds, timed=(done, total))
        opt = dataclasses.replace(opt, progress=in_time, heartbeat=beat)
    engine = TimingEngine(prepared, opt)
    prepared.workers = (1, "the timing model executes blocks in its own order")
    with np.errstate(all="ignore"):
        timed = engine.run()
    executed = engine.trace.executed             # sampled: the blocks executed, from across the grid
    nblocks = prepared.geometry.nblocks
    result = prepared.finish(nblocks / executed if executed < nblocks else 1.0, outputs=outputs)
    if not outputs:
        result.extra["outputs"] = (f"not computed: prediction only, {executed} of {nblocks} blocks executed; "
                                   "the arguments are unchanged")
    result.metrics.update(timed)
    for reason, arr in engine.per_instruction_stalls.items():
        result.table[STALL_METRIC.format(reason)] = arr
    result.extra["workers"] = prepared.workers
    if engine.recording is not None:             # TimingOptions(record=TraceWindow(...))
        result.extra["recording"] = engine.recording
    return result


def _run_functional(prepared: PreparedLaunch, batch_lanes: int, progress, workers: int | None = None) -> None:
    """Every block, in batches of about `batch_lanes` lanes, reporting to `progress`."""
    geo = prepared.geometry
    per_batch = prepared.blocks_per_batch(batch_lanes)
    n, why = parallel.plan(prepared, -(-geo.nblocks // per_batch), workers)
    if progress is None:
        prepared.run_all(batch_lanes, workers=workers)
        return
    if n > 1:
        progress(Progress(prepared.name, "functional", 0, geo.nblocks))
        prepared.run_all(batch_lanes, workers=workers,
                         on_blocks=lambda done: progress(Progress(prepared.name, "functional", done, geo.nblocks)))
        return
    prepared.workers = (n, why)
    state = {"done": 0}
    prepared.on_steps = lambda ex: progress(Progress(prepared.name, "functional", state["done"], geo.nblocks,
                                                     ex.steps, ex.step_budget or 0))
    progress(Progress(prepared.name, "functional", 0, geo.nblocks))
    with np.errstate(all="ignore"):
        for first in range(0, geo.nblocks, per_batch):
            n = min(per_batch, geo.nblocks - first)
            prepared.run_batch(first, n)
            state["done"] = first + n
            progress(Progress(prepared.name, "functional", first + n, geo.nblocks))
