"""`cupy.cuda.runtime` for the drop-in: the CUDA runtime calls CuPy programs make, answered
by the simulated device (the GPU preset of `gpusim.cupy.set_gpu`). Synchronization has
nothing to wait for: launches complete before they return.

Sources: CuPy 14 `cupy_backends/cuda/api/runtime.pyx` (`getDeviceProperties` keys,
`deviceSynchronize`, `memGetInfo`); CUDA Runtime API `cudaDeviceProp`.
"""
from __future__ import annotations

from gpusim.cupy import _state
from gpusim.errors import LaunchError

is_hip = False
CUDA_VERSION = 13000                 # the CUDA 13 pip packages gpusim compiles with


def deviceSynchronize() -> None:  # noqa: N802  (CUDA's names, as CuPy keeps them)
    """Launches complete before they return: nothing to wait for."""


def streamSynchronize(stream: int) -> None:  # noqa: N802
    pass


def getDevice() -> int:  # noqa: N802
    return 0


def setDevice(device: int) -> None:  # noqa: N802
    if int(device) != 0:
        raise LaunchError(f"cupy.cuda.runtime.setDevice({device}): the simulator has one device, 0")


def getDeviceCount() -> int:  # noqa: N802
    return 1


def runtimeGetVersion() -> int:  # noqa: N802
    return CUDA_VERSION


def driverGetVersion() -> int:  # noqa: N802
    return CUDA_VERSION


def memGetInfo() -> tuple[int, int]:  # noqa: N802
    """(free, total) bytes: the preset's HBM, all free."""
    total = int(_state.spec().hbm.capacity_bytes)
    return total, total


def getDeviceProperties(device: int) -> dict:  # noqa: N802
    """The preset as `cudaDeviceProp` (the keys CuPy programs read)."""
    setDevice(device)
    s = _state.spec()
    lim, sm = s.limits, s.sm
    return {
        "name": s.marketing_name.encode(), "major": s.compute_capability[0], "minor": s.compute_capability[1],
        "multiProcessorCount": s.sm_count, "totalGlobalMem": int(s.hbm.capacity_bytes),
        "sharedMemPerBlock": lim.max_shared_bytes_per_block_static,
        "sharedMemPerBlockOptin": lim.max_shared_bytes_per_block_optin,
        "sharedMemPerMultiprocessor": sm.shared_memory_per_sm_bytes, "regsPerBlock": sm.registers_per_sm,
        "regsPerMultiprocessor": sm.registers_per_sm, "warpSize": lim.warp_size_threads,
        "maxThreadsPerBlock": lim.max_threads_per_block, "maxThreadsDim": tuple(lim.max_block_dims),
        "maxGridSize": tuple(lim.max_grid_dims), "maxThreadsPerMultiProcessor": sm.max_threads_per_sm,
        "maxBlocksPerMultiProcessor": sm.max_blocks_per_sm, "clockRate": int(s.clocks.sm_clock_mhz * 1000),
        "memoryClockRate": int(s.clocks.memory_clock_mhz * 1000), "memoryBusWidth": s.hbm.bus_width_bits,
        "l2CacheSize": s.l2.size_bytes, "concurrentKernels": 1, "pciBusID": 0, "pciDeviceID": 0, "pciDomainID": 0,
    }


def attributes() -> dict[str, int]:
    """`Device().attributes`: CUDA's device attributes by CuPy's names (a few)."""
    p = getDeviceProperties(0)
    return {"MultiProcessorCount": p["multiProcessorCount"], "MaxThreadsPerBlock": p["maxThreadsPerBlock"],
            "MaxSharedMemoryPerBlock": p["sharedMemPerBlock"],
            "MaxSharedMemoryPerBlockOptin": p["sharedMemPerBlockOptin"],
            "MaxSharedMemoryPerMultiprocessor": p["sharedMemPerMultiprocessor"], "WarpSize": p["warpSize"],
            "MaxRegistersPerBlock": p["regsPerBlock"], "ComputeCapabilityMajor": p["major"],
            "ComputeCapabilityMinor": p["minor"], "ClockRate": p["clockRate"], "L2CacheSize": p["l2CacheSize"],
            "MaxThreadsPerMultiProcessor": p["maxThreadsPerMultiProcessor"]}
