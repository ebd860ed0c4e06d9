"""Design-space sweeps: programs (or your launches) x sizes x GPU spec configurations,
timed in parallel, reusing one functional run per (kernel, launch) where the spec allows.

    import gpusim
    df = gpusim.sweep(["transpose_shared", "matmul_tiled"],
                      vary={"hbm.bandwidth_GBps": "2000:8000:4", "sm_count": [66, 132]},
                      workers=2)
    df[["program", "hbm.bandwidth_GBps", "sm_count", "gpu__time_duration.sum", "timing__bound"]]

One row per (program, size, configuration): the program, size and its parameters
(`param.*`), the varied fields under their dotted names, every scalar metric of the timed
Result (`gpu__time_duration.sum`, `timing__bound`, counters, `smsp__pcsamp_*` stalls),
`timing__utilization.<unit>`, `stall_share.<reason>`, how the functional run was obtained
(`functional_run`: recorded / replayed / executed), whether the outputs matched the
program's reference, the point's wall time, and then every field of the point's spec
(`spec.<dotted key>`). Equal to independent `gpusim.launch(..., timing=True)` runs of the
same configurations, bit for bit (replay.py, tests/sweep).

Reading a sweep: a launch of more blocks than the GPU holds is timed in sampled mode, whose
estimate moves by up to about its own `timing__sampling_error_pct` (a column) with any change
of timing; differences below it are no difference (transpose_shared 4096^2 at 66 SMs is
bound by its conflicted shared reads, and HBM bandwidths 1676-6704 GB/s give 140.7-144.6 us in
no monotonic order at a 1.1% error estimate: benchmarks/results/sweep_hbm_anomaly.json). Raise
`TimingOptions(max_waves=...)` (`timing_options=`) to shrink it.

Sub-modules: `space` (values, ranges, the cartesian product, point counts, sweep files),
`fields` (replayable, functional and refused fields), `streams` and `replay` (recording and
replaying functional runs, the disk cache), `point` (one row), `executors` (serial, local
processes, Dask), `run` and `store` (every finished point kept beside the output as it
finishes, `--resume`, one-line stops), `progress`, `cli` (`gpusim sweep`). Plots:
`gpusim.viz.sweep`.
"""
from __future__ import annotations

import os
from pathlib import Path

from gpusim.errors import ConfigError, OutputError, Terminated
from gpusim.specs.describe import schema, value_at
from gpusim.sweep import executors
from gpusim.sweep.fields import FUNCTIONAL
from gpusim.sweep.point import Launch, Task
from gpusim.sweep.progress import Progress
from gpusim.sweep.run import finish, kept, run_points
from gpusim.sweep.space import ASK_POINTS, configs, load_sweep_toml, parse_vary, size_label
from gpusim.sweep.store import PointStore, point_key, program_identity, write_atomic_table

__all__ = ["ASK_POINTS", "Launch", "configs", "load_sweep_toml", "parse_vary", "sweep", "write"]


def sweep(programs, sizes=("default",), vary: dict | None = None, *, gpu="h100", sets: dict | None = None,
          workers: int | None = 1, dask: str | None = None, client=None, seed: int = 0, timing_options=None,
          replay: bool = True, check: bool = True, cache_dir: str | None = None, progress=False, out=None,
          resume: bool = False, max_points: int | None = ASK_POINTS):
    """Time every (program, size, configuration) and return a pandas DataFrame (module docstring).

    programs: names from `programs/` (`gpusim list`), ProgramSpecs (also from your own file,
    `programs.load_file`), or `Launch`es (your kernels).
    sizes: size names or {parameter: value} dicts, applied to every program (Launches have none).
    vary: {dotted spec field: values}, values a list, 'a,b,c', 'START:STOP:N' or 'START:STOP:xF'
    (their cartesian product); or a list of {field: value} dicts, the configurations one by one.
    gpu, sets: the base spec (preset, .toml or GPUSpec) and fixed overrides of every point.
    workers: local processes (1: this process); dask: 'local' or a scheduler address (or
    `client`: a dask.distributed Client); progress: True for a bar on stderr (or a stream);
    out: also write the table (.csv or .parquet), atomically; every finished point is kept
    beside it as it finishes (`<out>.points`, `store.py`) until the table is written, and
    `resume=True` runs only the points missing there (`run.py`). `replay=False` executes
    every point. More points than `max_points` (None: no limit but MAX_POINTS) are refused
    before any work.
    """
    import programs as lib  # programs/ sits above gpusim: loaded only when a program is named

    if isinstance(programs, (str, Launch)) or not hasattr(programs, "__iter__"):
        programs = [programs]
    programs = list(programs)
    if not programs:
        raise ConfigError("sweep: no programs given")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ConfigError(f"sweep: workers must be a positive number of processes, got {workers!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"sweep: seed must be a whole number >= 0, got {seed!r}")
    progs = [_program(p) for p in programs]
    sizes = [sizes] if isinstance(sizes, (str, dict)) else list(sizes)
    if not sizes:
        raise ConfigError("sweep: no sizes given")
    for size in sizes:
        if not isinstance(size, (str, dict)):
            raise ConfigError(f"sweep: a size is a size name or a table of parameters, got {size!r}")
    if out is not None:
        check_out(out)
    launches = sum(1 if isinstance(p, Launch) else len(sizes) for p in progs)
    cfgs = configs(gpu, vary, sets, max_points=max_points, launches=launches)
    tasks, keys = [], {}
    for prog in progs:
        for size in ([None] if isinstance(prog, Launch) else sizes):
            if size is not None:
                size = _check_size(prog, size)
            library = not isinstance(prog, Launch) and lib.PROGRAMS.get(prog.name) is prog
            identity = program_identity(prog.name if library else prog) if out is not None else ""
            for c in cfgs:
                name = prog.name
                group = (name, size_label(size) if size is not None else "",
                         tuple(value_at(c.spec, k) for k in FUNCTIONAL))
                t = Task(len(tasks), name if library else prog, size, c.index, c.values,
                         c.spec, seed, timing_options, replay, check, cache_dir, group)
                tasks.append(t)
                if out is not None:
                    keys[t.index] = point_key(identity, size, t)
    bar = None
    if progress:
        bar = Progress(len(tasks), stream=None if progress is True else progress)

    def execute(todo, sink):
        if client is not None:
            return executors.run_on_client(client, todo, sink)
        if dask:
            return executors.run_dask(todo, dask, workers if workers and workers > 1 else None, sink)
        if workers is not None and workers > 1 and len(todo) > 1:
            return executors.run_processes(todo, min(workers, len(todo)), sink)
        return executors.run_serial(todo, sink)

    rows = run_points(tasks, keys, execute, out, resume, bar)
    try:
        df = frame(rows, {t.index: t.spec for t in tasks}, [k for k, _ in cfgs[0].values])
        if out is not None:
            finish(df, out, len(tasks))
    except KeyboardInterrupt as e:
        if out is None:
            raise
        raise type(e)(f"{'terminated' if isinstance(e, Terminated) else 'interrupted'} while writing the table: "
                      f"{kept(PointStore(out), len(tasks))}") from None
    return df


def _program(p):
    if isinstance(p, Launch):
        return p
    import programs as lib  # programs/ sits above gpusim: loaded only when a program is named
    from programs.base import ProgramSpec  # programs/ sits above gpusim: loaded only when a program is named
    if isinstance(p, ProgramSpec):               # from programs/ or a user's file (programs.load_file)
        return p
    try:
        return lib.get(p)
    except KeyError as e:
        raise ConfigError(str(e.args[0])) from None


def _check_size(prog, size):
    """`size` for `prog`: a name it has, or {parameter: value} of parameters it has, each
    value of the type of the parameter's default (1e6 -> 1000000 for an integer); ConfigError
    naming the sizes or parameters otherwise."""
    if isinstance(size, str):
        if size not in prog.sizes:
            raise ConfigError(f"{prog.name} has no size {size!r}; its sizes: {', '.join(prog.sizes)}")
        return size
    defaults = prog.sizes["default"]
    unknown = [k for k in size if k not in defaults]
    if unknown:
        raise ConfigError(f"{prog.name} has no parameter {unknown[0]!r}; its parameters: "
                          + ", ".join(map(str, defaults)))
    return {k: _param(prog.name, k, v, defaults[k]) for k, v in size.items()}


def _param(program: str, key: str, value, default):
    """`value` as the type of the parameter's `default`."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        if number and float(value).is_integer() and abs(value) < 2 ** 63:
            return int(value)
        ok = False
    elif isinstance(default, float):
        if number:
            return float(value)
        ok = False
    else:
        ok = default is None or isinstance(value, type(default))
    if not ok:
        raise ConfigError(f"{program}: parameter {key} takes {type(default).__name__} values "
                          f"(default {default!r}), got {value!r}")
    return value


def frame(rows: list[dict], specs: dict, varied: list[str]):
    """The rows in task order as a DataFrame: identity and varied columns, time and bound,
    the metrics, then `spec.<key>` for every field of each point's spec."""
    import pandas as pd  # lazy: pandas, only when the sweep's table is built

    rows = sorted(rows, key=lambda r: r["_index"])
    keys = list(schema())
    for r in rows:
        spec = specs[r.pop("_index")]
        for key in keys:
            value = value_at(spec, key)
            r[f"spec.{key}"] = value if isinstance(value, (int, float, str, bool)) else str(value)
    df = pd.DataFrame(rows)
    first = ["program", "size", "config", "gpu", *[c for c in df.columns if c.startswith("param.")], *varied,
             "gpu__time_duration.sum", "timing__bound"]
    first = [c for c in dict.fromkeys(first) if c in df.columns]
    spec_cols = [c for c in df.columns if c.startswith("spec.")]
    rest = [c for c in df.columns if c not in first and c not in spec_cols]
    return df[first + rest + spec_cols]


def check_out(path) -> None:
    """ConfigError / OutputError now (before any work) if `path` cannot be written as a table:
    an extension other than .csv/.parquet, a missing folder, a directory, no permission."""
    p = str(path).lower()
    if p.endswith(".parquet") or p.endswith(".pq"):
        try:
            import pyarrow  # noqa: F401  (optional: pyarrow writes .parquet)
        except ImportError:
            raise ConfigError(f"{path}: writing Parquet needs pyarrow, which is not installed "
                              f"(pip install pyarrow), or write .csv") from None
    elif not p.endswith(".csv"):
        raise ConfigError(f"{path}: --out writes .csv or .parquet (by the file's extension)")
    check_writable(Path(path), "--out")


def check_writable(path, what: str) -> None:
    """OutputError unless a file can be created or replaced at `path` (its folder exists and is
    writable, and `path` is not a directory)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputError(f"{what} {path}: is a directory, not a file")
    if not folder.is_dir():
        raise OutputError(f"{what} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {path}: the folder {folder} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"{what} {path}: the file is not writable")


def write(df, path) -> None:
    """Write the sweep table as CSV or Parquet, by `path`'s extension, atomically."""
    check_out(path)
    write_atomic_table(df, path)


class _CallableModule(type(__import__("sys"))):
    """`gpusim.sweep(...)` calls `sweep`; `gpusim.sweep.Launch` etc. stay module attributes."""

    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)

    def __reduce__(self):                        # pickled by name, as modules are (cloudpickle, dask)
        return __import__("importlib").import_module, (self.__name__,)


__import__("sys").modules[__name__].__class__ = _CallableModule
