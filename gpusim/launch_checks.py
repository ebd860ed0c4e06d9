"""Launch-shape checks, as the CUDA driver makes them: grid and block dimensions, clusters,
shared memory per block, and the arrays `peer_args` places on other GPUs. (Where a kernel's
variables live is `variable_layout.py`.)

Sources: CUDA C++ Programming Guide, "Technical Specifications per Compute
Capability"; CUDA Driver API `cuLaunchKernel` error codes (CUDA_ERROR_INVALID_VALUE
for bad dimensions, CUDA_ERROR_INVALID_VALUE/OUT_OF_RESOURCES for shared memory).
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import ConfigError, LaunchError
from gpusim.specs.gpu import GPUSpec


def dims3(value, what: str, kernel: str) -> tuple[int, int, int]:
    """An int or a 1-3 tuple of ints as (x, y, z)."""
    def is_int(v) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    if is_int(value):
        t = (int(value),)
    else:
        try:
            items = tuple(value)
        except TypeError:
            items = None
        if items is None or isinstance(value, (str, bytes)) or not all(is_int(v) for v in items):
            raise LaunchError(f"kernel {kernel}: {what} must be an int or a tuple of 1-3 ints, got {value!r}")
        t = tuple(int(v) for v in items)
    if not 1 <= len(t) <= 3:
        raise LaunchError(f"kernel {kernel}: {what} must have 1 to 3 dimensions, got {value!r}")
    return (t + (1, 1))[:3]


def check_dims(spec: GPUSpec, kernel: str, grid, block) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    lim = spec.limits
    g = dims3(grid, "grid", kernel)
    b = dims3(block, "block", kernel)
    for name, dims in (("grid", g), ("block", b)):
        for axis, v in zip("xyz", dims):
            if v <= 0:
                raise LaunchError(f"kernel {kernel}: {name} dimension {axis} is {v}; every dimension must be >= 1 "
                                  "(CUDA: invalid configuration argument)")
    for axis, v, mx in zip("xyz", b, lim.max_block_dims):
        if v > mx:
            raise LaunchError(f"kernel {kernel}: block dimension {axis} is {v}, above the {spec.name} limit {mx} "
                              f"(max block dims {lim.max_block_dims}; CUDA: invalid configuration argument)")
    for axis, v, mx in zip("xyz", g, lim.max_grid_dims):
        if v > mx:
            raise LaunchError(f"kernel {kernel}: grid dimension {axis} is {v}, above the {spec.name} limit {mx} "
                              "(CUDA: invalid configuration argument)")
    threads = b[0] * b[1] * b[2]
    if threads > lim.max_threads_per_block:
        raise LaunchError(f"kernel {kernel}: block {b} has {threads} threads, above the {spec.name} limit of "
                          f"{lim.max_threads_per_block} threads per block (CUDA: invalid configuration argument)")
    return g, b


MAX_PORTABLE_CLUSTER = 8      # CUDA: cluster sizes up to 8 are portable; 16 needs a non-portable opt-in


def check_cluster(spec: GPUSpec, kernel: str, grid: tuple[int, int, int], cluster, directives: tuple[str, ...]) \
        -> tuple[tuple[int, int, int], bool]:
    """(cluster dims, explicit) of a launch: `cluster` as given to gpusim.launch (None: none), or the
    kernel's `__cluster_dims__` (PTX `.reqnctapercluster`), as the CUDA runtime checks them."""
    req = next((d for d in directives if d.startswith(".reqnctapercluster")), None)
    explicit_only = ".explicitcluster" in directives
    fixed = dims3(tuple(int(v) for v in req.split(None, 1)[1].split(",")), "cluster", kernel) if req else None
    if cluster is not None:
        dims = dims3(cluster, "cluster", kernel)
        if fixed is not None and dims != fixed:
            raise LaunchError(f"kernel {kernel}: launched with cluster {dims}, but it declares __cluster_dims__"
                              f"{fixed} (CUDA: cudaErrorClusterDimsMismatch-like refusal); pass cluster={fixed} or none")
    elif fixed is not None:
        dims = fixed
    elif explicit_only:
        raise LaunchError(f"kernel {kernel} needs a cluster launch (PTX .explicitcluster): pass cluster=(x, y, z)")
    else:
        return (1, 1, 1), False
    if spec.compute_capability < (9, 0):
        raise LaunchError(f"kernel {kernel}: thread-block clusters need compute capability 9.0 or later; the "
                          f"{spec.name} preset is {spec.compute_capability[0]}.{spec.compute_capability[1]}")
    size = dims[0] * dims[1] * dims[2]
    if min(dims) < 1 or size > MAX_PORTABLE_CLUSTER:
        raise LaunchError(f"kernel {kernel}: cluster {dims} has {size} blocks; gpusim models the portable cluster "
                          f"sizes 1..{MAX_PORTABLE_CLUSTER} (16 needs CUDA's non-portable opt-in, not modelled)")
    for axis, g, c in zip("xyz", grid, dims):
        if g % c:
            raise LaunchError(f"kernel {kernel}: grid dimension {axis} is {g}, not a multiple of the cluster's {c} "
                              "(CUDA: invalid cluster dimensions)")
    return dims, True


def check_shared(spec: GPUSpec, kernel: str, static_bytes: int, dynamic_bytes: int) -> None:
    lim = spec.limits
    if dynamic_bytes < 0:
        raise LaunchError(f"kernel {kernel}: dynamic shared memory must be >= 0 bytes, got {dynamic_bytes}")
    if static_bytes > lim.max_shared_bytes_per_block_static:
        raise LaunchError(f"kernel {kernel}: declares {static_bytes} bytes of static shared memory "
                          f"(cuda.shared.array), above the {lim.max_shared_bytes_per_block_static}-byte limit of static "
                          f"shared memory per block (ptxas: too much shared data); allocate more than that dynamically "
                          f"(cuda.shared.array(0, ...) and shared_bytes=)")
    total = static_bytes + dynamic_bytes
    if total > lim.max_shared_bytes_per_block_optin:
        raise LaunchError(f"kernel {kernel}: needs {total} bytes of shared memory per block ({static_bytes} static + "
                          f"{dynamic_bytes} dynamic), above the {spec.name} limit of "
                          f"{lim.max_shared_bytes_per_block_optin} bytes (CUDA: too many resources requested for launch)")


LAUNCH_GPU = 0               # the simulated launch runs on GPU 0 of `spec.system`


def check_peer_args(spec: GPUSpec, kernel: str, describe_arg, args: tuple, arrays: list, peer_args) \
        -> tuple[tuple[int, int, int], ...]:
    """`peer_args` ({argument index: peer GPU id}) checked against the launch and the system;
    returns the (first sector, end sector, peer GPU) of every array those arguments pass
    (`arrays`: `Marshalled.arrays`, each argument's (address, bytes); `describe_arg(i)`: 'argument i (x)')."""
    if peer_args is None:
        return ()
    if not isinstance(peer_args, dict):
        raise LaunchError(f"kernel {kernel}: peer_args must be a dict {{argument index: peer GPU}}, "
                          f"got {type(peer_args).__name__} {peer_args!r}")
    count = spec.system.gpu_count
    out = []
    for index, peer in peer_args.items():
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(args):
            raise LaunchError(f"kernel {kernel}: peer_args names argument {index!r}, but the launch passed "
                              f"{len(args)} argument{'s' if len(args) != 1 else ''} (indices 0..{len(args) - 1})")
        what = describe_arg(int(index))
        if isinstance(peer, bool) or not isinstance(peer, (int, np.integer)) or peer < 0:
            raise LaunchError(f"kernel {kernel}: peer_args puts {what} on GPU {peer!r}; a GPU id is an "
                              f"integer 0..{count - 1}")
        if count < 2:
            raise ConfigError(f"kernel {kernel}: peer_args puts {what} on GPU {peer}, but the GPU spec "
                              f"{spec.name!r} is a system of {count} GPU (system.gpu_count); use a spec with "
                              f"system.gpu_count >= 2, e.g. --set system.gpu_count=4")
        if peer == LAUNCH_GPU:
            raise LaunchError(f"kernel {kernel}: peer_args puts {what} on GPU {peer}, the GPU the kernel runs "
                              f"on; peer_args names arrays in another GPU's memory (1..{count - 1})")
        if peer >= count:
            raise LaunchError(f"kernel {kernel}: peer_args puts {what} on GPU {peer}, but the system has "
                              f"{count} GPUs (system.gpu_count; ids 0..{count - 1})")
        if not arrays[int(index)]:
            raise LaunchError(f"kernel {kernel}: peer_args names {what}, which is not an array "
                              f"({type(args[int(index)]).__name__}); only arrays live in a GPU's memory")
        for addr, nbytes in arrays[int(index)]:
            if nbytes:
                out.append((addr >> 5, (addr + nbytes + 31) >> 5, int(peer)))
    return tuple(sorted(set(out)))


def check_device_addresses(kernel: str, addresses) -> tuple:
    """`device_addresses` (one device address or None per array argument, in order) checked:
    a sequence of non-negative integers (or None), each a multiple of 256 as cudaMalloc's are."""
    if addresses is None:
        return ()
    if isinstance(addresses, (str, bytes, dict)) or not hasattr(addresses, "__iter__"):
        raise LaunchError(f"kernel {kernel}: device_addresses must be a sequence of device addresses, one per "
                          f"array argument in order, got {type(addresses).__name__} {addresses!r:.60}")
    out = []
    for i, a in enumerate(addresses):
        if a is None:
            out.append(None)
            continue
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)) or a < 0 or a % 256:
            raise LaunchError(f"kernel {kernel}: device_addresses[{i}] is {a!r}; a device address is a "
                              "non-negative integer, a multiple of 256 (cudaMalloc's alignment), or None")
        out.append(int(a))
    return tuple(out)
