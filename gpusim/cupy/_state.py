"""What the CuPy drop-in's launches share: the GPU preset, timing and sanitizer choices, the
last launch's Result, and the simulated clock of the one (null) stream that events read.

The clock: launches run one after another on one stream (CuPy's null-stream order), so
the device's timeline is the sum of the predicted kernel durations
(`gpu__time_duration.sum`, ns) of the launches so far. A launch run without the timing
model has no duration; it is counted in `untimed`, so that an event interval spanning it
is refused rather than read as shorter than it was (`cuda.get_elapsed_time`).

Timing is 'auto' until `set_timing` chooses: off, until the program records a timing event
(`cuda.Event().record()`, not `disable_timing=True`), from then on; a program that times
its kernels with events gets predicted times without a gpusim call. The preset is 'h100',
or the environment variable GPUSIM_CUPY_GPU (a preset name or a .toml file), so an
unchanged program can run on another GPU.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from gpusim import specs
from gpusim.api import resolve_gpu
from gpusim.errors import ConfigError


@dataclass
class State:
    gpu: Any = field(default_factory=lambda: os.environ.get("GPUSIM_CUPY_GPU", "h100"))  # name, .toml, GPUSpec
    timing: bool | None = None        # None: auto (module doc)
    events_recorded: bool = False     # a timing event was recorded (auto timing is on)
    check: tuple = ()
    last_result: Any = None           # the Result of the last launch of any kernel
    clock_ns: float = 0.0             # predicted device time of the launches so far
    launches: int = 0
    untimed: int = 0                  # launches so far that ran without the timing model


STATE = State()


def timing() -> bool:
    """Whether the next launch runs the timing model (module doc)."""
    return STATE.timing if STATE.timing is not None else STATE.events_recorded


def spec():
    """The GPUSpec later launches run on."""
    return resolve_gpu(STATE.gpu)


def record(result) -> None:
    """Advance the clock by one launch (module doc) and keep its Result."""
    STATE.last_result = result
    STATE.launches += 1
    t = result.metrics.get("gpu__time_duration.sum") if result is not None else None
    if t is None:
        STATE.untimed += 1
    else:
        STATE.clock_ns += float(t)


def check_gpu(gpu) -> None:
    """ConfigError for an unknown preset name (a GPUSpec or .toml path is resolved at launch)."""
    if isinstance(gpu, str) and not gpu.endswith(".toml"):
        try:
            specs.get(gpu)
        except ConfigError as e:
            where = " (from GPUSIM_CUPY_GPU)" if gpu == os.environ.get("GPUSIM_CUPY_GPU") else ""
            raise ConfigError(f"{e}{where}") from None
    elif not isinstance(gpu, (str, specs.GPUSpec)):
        raise ConfigError(f"gpusim.cupy.set_gpu takes a preset name, a .toml path or a GPUSpec, got {gpu!r:.60}")
