"""`cupy.cuda` for the drop-in: the one simulated device, streams, events, memory pointers.

What it models: launches complete before they return and run in order on one stream,
CuPy's null stream (`gpusim/cupy/_state.py`); so `Device().synchronize()`,
`runtime.deviceSynchronize()`, `Stream.synchronize()` and `Event.synchronize()` have
nothing to wait for, and a non-default `Stream` orders its launches with everyone else's
(null-stream semantics). Events read the simulated clock: `get_elapsed_time(start, end)`
(also `start.elapsed_time(end)`, gpusim's shorthand) is the sum of the predicted kernel
durations (`gpu__time_duration.sum`) of the launches between the two records, in ms.
Recording a timing event turns the timing model on for later launches (unless
`gpusim.cupy.set_timing(False)` chose otherwise); an interval spanning an untimed launch is
refused rather than reported short. Host code, copies and launch gaps take no simulated time.

`Device(0)` describes the preset (`compute_capability` as CuPy gives it, "90";
`attributes`, `mem_info`); there is one device. `MemoryPointer` is the arrays' `data`
(`gpusim/cupy/_array.py`); `alloc(n)` a byte allocation; memory pools and allocators are
accepted and have no effect (allocation is the simulator's).

NVIDIA's libraries (`cublas`, `cufft`, `cusolver`, `cusparse`, `curand`, `cudnn`,
`cutensor`, `nccl`, `thrust`, `cub`), `texture`, `graph` and `jitify` are stand-ins that
refuse when used (`gpusim/cupy/_unsupported.py`).

Sources: CuPy 14 `cupy/cuda/device.pyx`, `stream.pyx` (`Event`, `get_elapsed_time`,
`Stream.null`), `memory.pyx`, `cupy_backends/cuda/api/runtime.pyx`.
"""
from __future__ import annotations

import numpy as np

from gpusim.cupy import _state
from gpusim.cupy._array import Memory, MemoryPointer, ndarray
from gpusim.cupy._unsupported import WHY, Unsupported
from gpusim.cupy.cuda import runtime
from gpusim.errors import GpusimError, LaunchError
from gpusim.frontend.externs import nvrtc_version

__all__ = ["Device", "Stream", "ExternalStream", "Event", "get_elapsed_time", "get_current_stream", "MemoryPointer",
           "Memory", "alloc", "runtime", "MemoryPool", "PinnedMemoryPool", "set_allocator",
           "set_pinned_memory_allocator", "get_allocator", "is_available", "get_device_id", "nvrtc", "compiler"]


class Device:
    """The simulated device (module doc); usable as a context manager, as CuPy's is."""

    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise LaunchError(f"cupy.cuda.Device({device}): the simulator has one device, 0")

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def __int__(self) -> int:
        return self.id

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id} (simulated {_state.spec().marketing_name})>"

    def use(self) -> None:
        pass

    def synchronize(self) -> None:
        """Launches complete before they return: nothing to wait for."""

    @property
    def compute_capability(self) -> str:
        major, minor = _state.spec().compute_capability
        return f"{major}{minor}"

    @property
    def attributes(self) -> dict[str, int]:
        return runtime.attributes()

    @property
    def mem_info(self) -> tuple[int, int]:
        return runtime.memGetInfo()

    @property
    def pci_bus_id(self) -> str:
        return "0000:00:00.0"


def get_device_id() -> int:
    return 0


def is_available() -> bool:
    return True


# ----------------------------------------------------------------------------- streams and events
class Stream:
    """A stream (module doc): launches run in order with every other stream's.
    `with stream:` makes it current; `Stream.null` is the default stream."""
    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False):
        self.ptr = 0 if null else id(self)
        self.device_id = 0
        self._previous: list[Stream] = []

    def __enter__(self) -> Stream:
        self._previous.append(_CURRENT[0])
        _CURRENT[0] = self
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT[0] = self._previous.pop()

    def use(self) -> Stream:
        _CURRENT[0] = self
        return self

    def synchronize(self) -> None:
        pass

    @property
    def done(self) -> bool:
        return True

    def record(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        pass

    def add_callback(self, callback, arg) -> None:
        callback(self, 0, arg)

    def launch_host_func(self, callback, arg) -> None:
        callback(arg)

    def __repr__(self) -> str:
        return "<gpusim.cupy Stream (null)>" if self.ptr == 0 else f"<gpusim.cupy Stream 0x{self.ptr:x}>"


class ExternalStream(Stream):
    def __init__(self, ptr: int, device_id: int = -1):
        super().__init__()
        self.ptr = int(ptr)


Stream.null = Stream(null=True)
_CURRENT = [Stream.null]


def get_current_stream(device_id: int = -1) -> Stream:
    return _CURRENT[0]


class Event:
    """An event on the simulated clock (module doc)."""

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False):
        self.disable_timing = bool(disable_timing)
        self.ptr = id(self)
        self._at: tuple[float, int, int] | None = None      # (clock ns, launches, untimed launches)

    def record(self, stream: Stream | None = None) -> None:
        st = _state.STATE
        self._at = (st.clock_ns, st.launches, st.untimed)
        if not self.disable_timing:
            st.events_recorded = True          # auto timing: later launches are timed (_state.py)

    def synchronize(self) -> None:
        pass

    @property
    def done(self) -> bool:
        return True

    def elapsed_time(self, end_event: Event) -> float:
        """`get_elapsed_time(self, end_event)`: ms from this event to `end_event`."""
        return get_elapsed_time(self, end_event)


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """Milliseconds of predicted device time between the two records (module doc)."""
    for name, ev in (("start", start_event), ("end", end_event)):
        if not isinstance(ev, Event):
            raise GpusimError(f"cupy.cuda.get_elapsed_time: the {name} event must be a cupy.cuda.Event, got "
                              f"{type(ev).__name__}")
        if ev.disable_timing:
            raise GpusimError(f"cupy.cuda.get_elapsed_time: the {name} event was made with disable_timing=True "
                              "(cudaErrorInvalidResourceHandle)")
        if ev._at is None:
            raise GpusimError(f"cupy.cuda.get_elapsed_time: the {name} event was never recorded "
                              "(cudaErrorInvalidResourceHandle)")
    (t0, n0, u0), (t1, n1, u1) = start_event._at, end_event._at
    if u1 != u0:
        raise GpusimError(f"cupy.cuda.get_elapsed_time: {abs(u1 - u0)} of the {abs(n1 - n0)} launches between the "
                          "events ran without the timing model, so their time is unknown: call "
                          "gpusim.cupy.set_timing(True) before launching")
    return (t1 - t0) / 1e6


# ----------------------------------------------------------------------------- memory
def alloc(size: int) -> MemoryPointer:
    """`size` bytes on the device (zeros)."""
    return ndarray((int(size),), np.uint8).data


class MemoryPool:
    """Accepted for programs that set one up; allocation is the simulator's. `used_bytes` and
    `total_bytes` are 0: no pool holds memory."""

    def __init__(self, allocator=None):
        self.allocator = allocator

    def malloc(self, size: int) -> MemoryPointer:
        return alloc(size)

    def free_all_blocks(self, stream=None) -> None:
        pass

    def used_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def n_free_blocks(self) -> int:
        return 0

    def set_limit(self, size=None, fraction=None) -> None:
        pass

    def get_limit(self) -> int:
        return runtime.memGetInfo()[1]


PinnedMemoryPool = MemoryPool
_ALLOCATOR = [MemoryPool().malloc]


def set_allocator(allocator=None) -> None:
    """Accepted, with no effect (module doc)."""
    _ALLOCATOR[0] = allocator


def get_allocator():
    return _ALLOCATOR[0]


def set_pinned_memory_allocator(allocator=None) -> None:
    pass


def malloc_managed(size: int) -> MemoryPointer:
    return alloc(size)


malloc_async = malloc_managed


class _Nvrtc:
    """`cupy.cuda.nvrtc.getVersion()`: the NVRTC that compiles the kernels."""

    @staticmethod
    def getVersion() -> tuple[int, int]:  # noqa: N802  (CuPy's name)
        v = nvrtc_version()
        return (int(v[0]), int(v[1])) if isinstance(v, (tuple, list)) else (0, 0)


nvrtc = _Nvrtc()
compiler = Unsupported("cupy.cuda.compiler", "compile through cupy.RawKernel or cupy.RawModule, which gpusim.cupy "
                                             "compiles with NVRTC")


def __getattr__(name: str):
    key = f"cupy.cuda.{name}"
    if key in WHY:
        return Unsupported(key)
    if name in ("Function", "Module", "LinkState"):
        return Unsupported(key, "load kernels through cupy.RawModule (CUDA C++ or a .ptx file)")
    raise AttributeError(f"module 'gpusim.cupy.cuda' has no attribute {name!r} (gpusim.cupy.cuda offers: "
                         f"{', '.join(__all__)})")
