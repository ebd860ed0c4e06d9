"""Drop-in for `numba.cuda`: an existing Numba CUDA program runs in the simulator
with one changed line.

    from gpusim import cuda          # was: from numba import cuda

    @cuda.jit
    def scale(a, s):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= s

    d = cuda.to_device(x)
    scale[4, 256](d, 2.0)            # runs gpusim.launch(scale, 4, 256, (d, 2.0), gpu=...)
    y = d.copy_to_host()
    scale.last_result.metrics        # the launch's Result

What it models: `jit` (with or without signatures and options; `device=True` device
functions) returning a `Dispatcher` whose `kernel[grid, block]`,
`kernel[grid, block, stream]` and `kernel[grid, block, stream, shared_bytes]`
launches call `gpusim.launch` on the GPU preset chosen with `set_gpu` (default
'h100'); the device-side API (`grid`, `threadIdx`, `shared.array`, `atomic`,
`shfl_*_sync`, `libdevice`, `fp16`, types, ...) re-exported unchanged, since Numba's
typing is keyed on those very objects; device arrays (`to_device`, `device_array`,
...) as `DeviceArray`s holding a host copy that a launch reads and updates in place;
pinned, mapped and managed arrays as plain numpy arrays (a launch copies them back
too); `synchronize`, streams and `pinned`/`mapped` contexts as no-ops; a device
object describing the preset.

Kernels may allocate arrays (numba-cuda's runtime, `config.CUDA_ENABLE_NRT`: on the simulated
device heap, `gpusim/frontend/nrt.py`), call recursive device functions (`isa/recursion.py`)
and link external CUDA C++/PTX (`link=`, `declare_device`: `gpusim/frontend/externs.py`).

Does not model: asynchrony (a launch completes before it returns), events and
their timings, IPC, multiple devices. `cudadrv`,
`devicearray` and `kernels` are numba-cuda's with the simulator's arrays and kernels
(`gpusim/cuda/_namespaces.py`). Other `numba.cuda` names resolve to `numba.cuda` itself; host/driver APIs
that need a GPU raise AttributeError naming the gap.

The package sits above `gpusim.api` (nothing under `gpusim.api` imports it): `_state.py`
(the chosen preset, timing, sanitizer tools), `_jit.py` (`cuda.jit`) and `_dispatcher.py`
(the `Dispatcher` it returns), `_launching.py` (`kernel[grid, block](...)` -> `gpusim.launch`),
`_arrays.py` (`DeviceArray`) and `_memory.py` (its constructors), `_device.py` (device,
context, streams, events), `_hostcompile.py` (`cuda.compile_ptx` and Numba's device queries
without a driver), `_library.py` (ufuncs, reductions), `_namespaces.py` (`cudadrv`,
`devicearray`, `kernels`), `_rtsys.py` (NRT statistics), `random.py`. Compiling the kernel
is the Numba `KernelSource`'s (`gpusim/frontend/numbasource.py`).

Sources: numba-cuda 0.30 `decorators.py` (`jit`), `dispatcher.py` (`__getitem__`
launch configuration, `_prepare_args`), `api.py` (`to_device`, `device_array`, ...).
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

import numba.cuda as _nc
from numba.core import types as _nbt
from numba.cuda import (  # noqa: F401  (re-exported device-side API)
    activemask, all_sync, any_sync, atomic, ballot_sync, blockDim, blockIdx, brev, cbrt, cg, clz, const, eq_sync,
    ffs, fma, grid, gridDim, gridsize, laneid, lanemask_lt, libdevice, local, match_all_sync, match_any_sync,
    nanosleep, popc, selp, shared, shfl_down_sync, shfl_sync, shfl_up_sync, shfl_xor_sync, syncthreads,
    syncthreads_and, syncthreads_count, syncthreads_or, syncwarp, threadfence, threadfence_block,
    threadfence_system, threadIdx, warpsize,
    boolean, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    complex64, complex128, void, literal_unroll, declare_device,
)
from numba.cuda import bf16, fp16  # noqa: F401  (submodules)
from numba.cuda.args import In, InOut, Out  # noqa: F401

from gpusim.cuda import _hostcompile, _library, _namespaces, _rtsys
from gpusim.cuda import random  # noqa: F401  (cuda.random)
from gpusim.cuda._arrays import DeviceArray  # noqa: F401
from gpusim.cuda._device import (  # noqa: F401
    Event, SimulatedContext, SimulatedDevice, Stream, close, current_context, default_stream, detect, event,
    event_elapsed_time, external_stream, get_current_device, is_available, is_bfloat16_supported,
    is_float16_supported, is_fp8_supported, legacy_default_stream, list_devices, per_thread_default_stream,
    require_context, select_device, stream, synchronize,
)
from gpusim.cuda._dispatcher import Dispatcher  # noqa: F401
from gpusim.cuda._hostcompile import (  # noqa: F401
    compile, compile_for_current_device, compile_ptx, compile_ptx_for_current_device,
)
from gpusim.cuda._jit import jit  # noqa: F401
from gpusim.cuda._library import Reduce, guvectorize, reduce, vectorize  # noqa: F401
from gpusim.cuda._memory import (  # noqa: F401
    as_cuda_array, device_array, device_array_like, is_cuda_array, managed_array, mapped, mapped_array,
    mapped_array_like, pinned, pinned_array, pinned_array_like, to_device,
)
from gpusim.cuda._state import get_gpu, set_check, set_gpu, set_timing  # noqa: F401

_library.install_numba_targets()      # numba.vectorize/guvectorize(target="cuda") simulate too
_hostcompile.install_when_no_driver()  # without a GPU, Numba's device queries answer the simulated device
_rtsys.install_runtime()              # ... and numba-cuda's NRT statistics (rtsys) answer the simulator's
_namespaces.install(sys.modules[__name__])     # cuda.cudadrv, cuda.devicearray, cuda.kernels (simulated)

# Numba types a reference to this module (reached some way `retarget` does not rewrite) as numba.cuda.
_numba_type_ = _nbt.Module(_nc)

_HOST_ONLY = frozenset({
    "open_ipc_array", "IpcHandle",
    "set_memory_manager", "defer_cleanup", "profile_start", "profile_stop", "profiling",
    "from_cuda_array_interface", "driver", "devices",
})


def __getattr__(name: str) -> Any:
    if name == "gpus":
        return list_devices()
    if name in _HOST_ONLY:
        raise AttributeError(f"gpusim.cuda.{name} is a host/driver API the simulator does not provide")
    try:
        return getattr(_nc, name)
    except AttributeError:
        pass
    try:
        return importlib.import_module(f"numba.cuda.{name}")
    except ImportError:
        raise AttributeError(f"module 'gpusim.cuda' has no attribute {name!r} (nor has numba.cuda)") from None
