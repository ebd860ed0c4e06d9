"""One launch, planned once: what `gpusim.launch` and `gpusim.prepare` hand the functional core
and the timing engine.

`plan_launch(source, spec, geometry, args, ...)` makes a launch ready and checks it, once. It
takes the GPU already resolved (`specs.overrides.resolve`) and the grid and block already
checked (`launch_checks.check_dims`: the caller needs them before compiling, to refuse a launch
too large to execute); it compiles the kernel through the seam (`frontend/source.py`), lays
its variables out in a fresh device memory (`variable_layout.layout`), marshals the arguments
into it, and checks shared memory, `peer_args`, thread-block clusters (the launch's or the
kernel's `__cluster_dims__`) and a cooperative grid against the GPU (a
kernel that syncs its grid, `frontend/cg.py`, needs every block resident at once:
`max_cooperative_grid_blocks`, the occupancy calculator's blocks per SM times the SMs, as
numba-cuda computes it, with ptxas's registers where installed). It
returns the frozen `LaunchPlan`, the memory it filled and the marshalled arguments (the
host-side copies the functional core writes back after the run).

A `LaunchPlan` names everything the layers below read about the launch: the compiled kernel
and its decoded form (for the chosen functional core), the geometry, the variables' layout,
the `.param` bytes, each argument's arrays as device ranges, the ranges `peer_args` places on
peer GPUs, and the options (core, dynamic shared memory). The functional core
(`functional/prepared.py`) executes a plan; the timing engine (`timing/engine.py`) times one
and reads nothing else of the functional core's objects.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

from gpusim import launch_template
from gpusim.errors import LaunchError, UnsupportedKernel
from gpusim.frontend.cg import registers
from gpusim.frontend.sass import SassMap, SassToolError, kernel_map
from gpusim.frontend.source import CompiledKernel, KernelSource, Marshalled
from gpusim.functional.decode import DecodedKernel, Decoder
from gpusim.functional.geometry import Geometry
from gpusim.functional.fastpath import factory, resolve_core
from gpusim.functional.memory import DeviceMemory
from gpusim.functional.syscalls import HEAP_BYTES, HEAP_NAME, DeviceHeap, calls_malloc
from gpusim.launch_checks import check_cluster, check_device_addresses, check_peer_args, check_shared
from gpusim.specs.gpu import GPUSpec
from gpusim.timing.occupancy import occupancy
from gpusim.variable_layout import Layout, layout
from isa.recursion import STACK

_DECODED: dict = {}


def decoded(ck: CompiledKernel, symbols: dict, core: str = "fast") -> DecodedKernel:
    """The decoded kernel for a compiled kernel, variable layout and core ('fast' or
    'reference', `gpusim.functional.fastpath`; cached: layouts are deterministic)."""
    key = (ck.ptx, ck.entry, tuple(sorted(symbols.items())), core)
    dk = _DECODED.get(key)
    if dk is None:
        dk = Decoder(ck.kernel, symbols, factory(core)).decode()
        if len(_DECODED) > 256:
            _DECODED.clear()
        _DECODED[key] = dk
    return dk


@dataclass(frozen=True)
class LaunchPlan:
    """kernel[grid, block, 0, shared_bytes](*args) on `spec`, checked (see module doc)."""
    name: str                        # the kernel's name in messages
    spec: GPUSpec                    # the GPU, resolved once
    compiled: CompiledKernel         # through the seam: PTX, entry, cc, parameters, source lines
    geometry: Geometry               # grid, block and thread-block cluster, checked once
    shared_bytes: int                # dynamic shared memory per block, as launched
    layout: Layout                   # where the kernel's variables live
    core: str                        # the functional core: 'fast' or 'reference'
    decoded: DecodedKernel           # `compiled` decoded for `core` over `layout`
    params: Mapping[str, bytes]      # the `.param` bytes, by PTX parameter name (read-only)
    arrays: tuple[tuple[tuple[int, int], ...], ...]   # per argument: its arrays' (device address, bytes)
    peer_ranges: tuple[tuple[int, int, int], ...]     # (first sector, end sector, peer GPU): peer_args' arrays

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.geometry.grid

    @property
    def block(self) -> tuple[int, int, int]:
        return self.geometry.block

    @property
    def block_shared_bytes(self) -> int:
        """Shared memory one block occupies: static, and the dynamic part after it."""
        lay = self.layout
        return lay.dynamic_shared_offset + self.shared_bytes if self.shared_bytes else lay.static_shared_bytes

    @property
    def cooperative(self) -> bool:
        """A grid-wide sync: the whole grid runs at once (`frontend/cg.py`)."""
        return self.compiled.cooperative

    @property
    def recursive(self) -> bool:
        """Whether the kernel calls recursive device functions (through isa.recursion's stack)."""
        return STACK in self.decoded.symbols

    @cached_property
    def _sass(self) -> tuple[SassMap | None, str]:
        try:
            return kernel_map(self.compiled, self.decoded), ""
        except SassToolError as e:
            return None, str(e)

    @property
    def sass(self) -> SassMap | None:
        """The kernel's SASS mapped onto its PTX blocks (`gpusim.frontend.sass.SassMap`), or
        None where NVIDIA's ptxas/nvdisasm are not installed (`sass_error` says why)."""
        if self.recursive:
            raise UnsupportedKernel(f"kernel {self.name} calls recursive device functions: gpusim runs them through "
                                    "its own call stack (isa.recursion), which ptxas's SASS does not map onto; "
                                    "timing such a kernel is not modelled (launch it with timing=False)")
        return self._sass[0]

    @property
    def sass_error(self) -> str:
        """Why the SASS could not be made (ptxas/nvdisasm missing or refusing), once asked for."""
        return self.__dict__["_sass"][1] if "_sass" in self.__dict__ else ""


def plan_launch(source: KernelSource, spec: GPUSpec, geometry: Geometry, args: tuple, shared_bytes: int = 0,
                peer_args: dict | None = None, core: str | None = None, cluster=None, device_addresses=None) \
        -> tuple[LaunchPlan, DeviceMemory, Marshalled]:
    """(plan, device memory, marshalled arguments) of `source` launched on `spec` (see module doc).
    `cluster`: thread-block cluster dims as launched (None: the kernel's `__cluster_dims__`, else
    none), checked here (`launch_checks.check_cluster`) since they need the compiled kernel.
    `device_addresses`: where the GPU had each array argument (`memory.PLACEMENT_PAGE_BYTES`)."""
    name = source.name
    tkey = None
    if peer_args is None and device_addresses is None and cluster is None:
        tkey = launch_template.key(source, spec, geometry, args, shared_bytes, resolve_core(core))
        hit = None if tkey is None else launch_template.find(tkey, spec, args)
        if hit is not None:
            return hit
    places = check_device_addresses(name, device_addresses)
    compiled = source.compile(spec, args)
    memory = DeviceMemory()
    lay = layout(compiled.program, compiled.kernel, memory)
    check_shared(spec, name, lay.static_shared_bytes, int(shared_bytes))
    memory.place_arrays(places)
    marshalled = source.marshal(compiled, args, memory)
    if memory.unplaced():
        raise LaunchError(f"kernel {name}: device_addresses names {len(places)} addresses, but the launch "
                          f"copies {len(places) - memory.unplaced()} arrays (one address per array argument, in order)")
    if calls_malloc(compiled.kernel):           # device malloc/free (numba-cuda's NRT): the heap
        memory.device_heap = DeviceHeap(memory.global_heap.alloc(HEAP_BYTES, HEAP_NAME), HEAP_BYTES)
    memory.seal()
    peer_ranges = check_peer_args(spec, name, compiled.describe_arg, args, marshalled.arrays, peer_args)
    core = resolve_core(core)
    dims, explicit = check_cluster(spec, name, geometry.grid, cluster, compiled.kernel.directives)
    geometry = Geometry(geometry.grid, geometry.block, dims, explicit)
    plan = LaunchPlan(name, spec, compiled, geometry, int(shared_bytes), lay, core,
                      decoded(compiled, lay.symbols, core), MappingProxyType(dict(marshalled.params)),
                      tuple(tuple(a) for a in marshalled.arrays), peer_ranges)
    if plan.cooperative:
        check_cooperative_launch(plan)
        if explicit:
            raise LaunchError(f"kernel {name}: a cooperative launch (this_grid().sync()) with thread-block "
                              "clusters is not supported")
    if tkey is not None and not explicit:
        launch_template.keep(tkey, plan, memory, marshalled)
    return plan, memory, marshalled


# ----------------------------------------------------------------------------- cooperative launches
def _threads(blockdim) -> int:
    dims = blockdim if isinstance(blockdim, (tuple, list)) else (blockdim,)
    n = 1
    for d in dims:
        n *= int(d)
    return n


def max_cooperative_grid_blocks(compiled, spec, blockdim, dynsmem: int = 0) -> int:
    """Blocks of `blockdim` threads a cooperative launch of `compiled` may have on `spec`."""
    threads = _threads(blockdim)
    regs = registers(compiled)
    static = layout(compiled.program, compiled.kernel, DeviceMemory()).static_shared_bytes
    occ = occupancy(spec, threads, int(regs), int(static) + int(dynsmem))
    return occ.blocks_per_sm * spec.sm_count


def check_cooperative_launch(plan: LaunchPlan) -> None:
    """LaunchError when the grid of a cooperative kernel cannot be resident at once."""
    geo = plan.geometry
    regs = registers(plan.compiled)
    occ = occupancy(plan.spec, geo.threads_per_block, int(regs), int(plan.block_shared_bytes))
    most = occ.blocks_per_sm * plan.spec.sm_count
    if geo.nblocks > most:
        raise LaunchError(
            f"kernel {plan.name} uses cuda.cg.this_grid() (a cooperative kernel: every block must be resident "
            f"at once, CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE): grid {plan.grid} is {geo.nblocks:,} blocks of "
            f"{geo.threads_per_block} threads, but {plan.spec.name} holds at most {most:,} "
            f"({occ.blocks_per_sm} per SM, limited by {occ.limiter}, x {plan.spec.sm_count} SMs); "
            f"launch at most max_cooperative_grid_blocks({geo.threads_per_block}) = {most:,} blocks")
