"""The simulated device as numba-cuda's host API shows it: `get_current_device()` (the chosen
preset described like a CUDA device), its context (memory queries answer the preset's HBM
size), streams and events. Launches complete before they return, so streams, events and
synchronisation are no-ops and elapsed times are 0.

Sources: numba-cuda 0.30 `api.py` (`stream`, `external_stream`, `event`, `get_current_device`,
`select_device`, `detect`), `cudadrv/driver.py` (`Device`, `Context`, `Stream`, `Event`).
"""
from __future__ import annotations

import contextlib
import ctypes
from typing import Any

from gpusim import specs
from gpusim.cuda import _state


class _Handle(ctypes.c_void_p):
    """A stream handle: a `c_void_p` that `int()` reads, as numba-cuda's stream handles are."""

    def __int__(self) -> int:
        return self.value or 0

    __index__ = __int__


class Stream:
    """A stream: launches complete before they return, so everything here is a no-op.
    `handle` is the pointer an external stream wraps (0 for streams of the simulator)."""

    def __init__(self, handle: int = 0):
        self.handle = _Handle(handle)

    def synchronize(self) -> None:
        pass

    @contextlib.contextmanager
    def auto_synchronize(self):
        yield self


def stream() -> Stream:
    return Stream()


default_stream = legacy_default_stream = per_thread_default_stream = stream


def external_stream(ptr: int) -> Stream:
    return Stream(ptr)


def synchronize() -> None:
    """Launches are synchronous; nothing to wait for."""


def is_available() -> bool:
    return True


class SimulatedDevice:
    """What `get_current_device()` returns: the chosen preset, described like a CUDA device."""

    def __init__(self, spec: specs.GPUSpec):
        lim = spec.limits
        self.id = 0
        self.spec = spec
        self.name = spec.marketing_name
        self.compute_capability = tuple(spec.compute_capability)
        self.WARP_SIZE = lim.warp_size_threads
        self.MAX_THREADS_PER_BLOCK = lim.max_threads_per_block
        self.MAX_BLOCK_DIM_X, self.MAX_BLOCK_DIM_Y, self.MAX_BLOCK_DIM_Z = lim.max_block_dims
        self.MAX_GRID_DIM_X, self.MAX_GRID_DIM_Y, self.MAX_GRID_DIM_Z = lim.max_grid_dims
        self.MAX_SHARED_MEMORY_PER_BLOCK = lim.max_shared_bytes_per_block_static
        self.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = lim.max_shared_bytes_per_block_optin
        self.supports_float16 = True
        self.supports_bfloat16 = self.compute_capability >= (8, 0)
        self.uuid = "GPU-00000000-0000-0000-0000-000000000000"

    def get_device_identity(self) -> dict:
        return {"pci_domain_id": 0, "pci_bus_id": 0, "pci_device_id": 0}

    def reset(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<gpusim simulated device {self.name} (sm_{self.compute_capability[0]}{self.compute_capability[1]})>"


class SimulatedContext:
    """What `current_context()` returns: the one simulated device; memory queries answer the
    preset's HBM size, resets and deallocation queues do nothing."""

    def __init__(self, device: SimulatedDevice):
        self.device = device
        self.handle = 0
        self.deallocations = _Deallocations()

    def get_memory_info(self) -> tuple[int, int]:
        total = int(getattr(self.device.spec, "memory_bytes", 0) or 80 << 30)
        return total, total

    def reset(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def push(self) -> None:
        pass

    def pop(self) -> None:
        pass


class _Deallocations:
    def clear(self) -> None:
        pass

    @contextlib.contextmanager
    def disable(self):
        yield


def current_context(devnum: int = 0) -> SimulatedContext:
    return SimulatedContext(get_current_device())


def require_context(fn):
    return fn


def is_float16_supported() -> bool:
    return True


def is_bfloat16_supported() -> bool:
    return get_current_device().compute_capability >= (8, 0)


def is_fp8_supported() -> bool:
    return get_current_device().compute_capability >= (8, 9)


class Event:
    """A stream event: launches are synchronous, so it is always complete; elapsed times are 0."""

    def __init__(self, timing: bool = True):
        self.timing = timing

    def record(self, stream: Any = 0) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = 0) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, other: Event) -> float:
        return 0.0


def event(timing: bool = True) -> Event:
    return Event(timing)


def event_elapsed_time(start: Event, stop: Event) -> float:
    return start.elapsed_time(stop)


def get_current_device() -> SimulatedDevice:
    return SimulatedDevice(_state.spec())


def select_device(device_id: int = 0) -> SimulatedDevice:
    if device_id != 0:
        raise ValueError(f"the simulator has one device (id 0), not {device_id}")
    return get_current_device()


def list_devices() -> list[SimulatedDevice]:
    return [get_current_device()]


def close() -> None:
    pass


def detect() -> bool:
    """Print the simulated device, as `numba.cuda.detect()` prints real ones."""
    d = get_current_device()
    print(f"Found 1 CUDA devices (simulated by gpusim)\nid 0    {d.name}    [SUPPORTED]\n"
          f"                      Compute Capability: {d.compute_capability[0]}.{d.compute_capability[1]}")
    return True
