"""The launch configuration current while a launch compiles (numba-cuda's `cuda.launchconfig`,
which the drop-in exposes under that name; the driver's launch-shape checks are
`gpusim/launch_checks.py`).

numba-cuda makes the configured launch (`kernel[grid, block, stream, shared]`) current,
per thread, while a launch compiles its kernel, so that compiler passes (e.g. a rewrite
of cuda.coop) can read `griddim`, `blockdim`, `sharedmem` and the launch's `args`; a pass
that makes code depend on them calls `dispatcher.mark_launch_config_sensitive()`, after
which the dispatcher compiles once per launch configuration. Here:
- `current_launch_config()` / `ensure_current_launch_config()` / `capture_compile_config`
  are numba-cuda's functions over this module's thread-local state, which the drop-in's
  launch (`launching._Launch.__call__`) sets around `Dispatcher._compile_for_args`;
- the configured launch (`_Launch`) is the configuration object, as in numba-cuda;
- a launch of a dispatcher already known to be launch-config sensitive adds (griddim,
  blockdim, sharedmem) to its PTX cache key (`compile_key`), so a new configuration
  recompiles (the launch that found out keeps its compilation under the plain key).

Sources: numba-cuda 0.30 `launchconfig.py`, `dispatcher.py` (`_LaunchConfiguration`,
`mark_launch_config_sensitive`, `_select_launch_config_dispatcher`).
"""
from __future__ import annotations

import contextlib
import threading
from functools import wraps
from types import MethodType
from typing import Any

_TLS = threading.local()


def current_launch_config() -> Any:
    """Return the current launch configuration, or None if not set."""
    _TLS.consulted = True
    return getattr(_TLS, "config", None)


def consulted(reset: bool) -> bool:
    """Whether `current_launch_config` was called in this thread since the last reset
    (a compilation that read it must not be reused from the disk cache)."""
    was = getattr(_TLS, "consulted", False)
    if reset:
        _TLS.consulted = False
    return was


def ensure_current_launch_config() -> Any:
    """Return the current launch configuration or raise if not set."""
    config = current_launch_config()
    if config is None:
        raise RuntimeError("No launch config set for this thread")
    return config


def current_launch_args() -> Any:
    return getattr(_TLS, "args", None)


@contextlib.contextmanager
def compiling(config: Any, args: tuple):
    """`config` (a configured launch) and its `args` are current in this thread for the block."""
    prev = (current_launch_config(), current_launch_args())
    _TLS.config, _TLS.args = config, args
    try:
        yield
    finally:
        _TLS.config, _TLS.args = prev


def compile_key(dispatcher: Any) -> tuple:
    """The extra PTX cache key of a launch-config-sensitive dispatcher: the current configuration."""
    cfg = current_launch_config()
    if cfg is None or getattr(cfg, "dispatcher", None) is not dispatcher or not getattr(cfg, "_keyed", False):
        return ()
    return ("launch_config", tuple(cfg.griddim), tuple(cfg.blockdim), int(cfg.sharedmem))


@contextlib.contextmanager
def capture_compile_config(dispatcher: Any):
    """Capture the launch config seen during compilation for a dispatcher (numba-cuda's)."""
    if dispatcher is None:
        raise TypeError("dispatcher is required")
    record = {"config": None}
    missing = object()
    original_attr = dispatcher.__dict__.get("_compile_for_args", missing)
    original = dispatcher._compile_for_args

    @wraps(original)
    def wrapped(self, *args, **kws):
        record["config"] = current_launch_config()
        return original(*args, **kws)

    dispatcher._compile_for_args = MethodType(wrapped, dispatcher)
    try:
        yield record
    finally:
        if original_attr is missing:
            del dispatcher._compile_for_args
        else:
            dispatcher._compile_for_args = original_attr


__all__ = ["current_launch_config", "ensure_current_launch_config", "capture_compile_config"]
