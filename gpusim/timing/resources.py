"""What one block of a kernel occupies on an SM: registers per thread, shared memory,
threads; and from that, how many blocks fit (the occupancy calculator).

Registers come from ptxas (`ptxas -v` on the kernel's PTX, the number the GPU uses)
when the ptxas package is installed, else from an estimate over the PTX register
declarations (an upper bound; `registers_source` says which).
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.timing.occupancy import Occupancy, occupancy


@dataclass(frozen=True)
class KernelResources:
    registers_per_thread: int
    registers_source: str            # 'ptxas' or 'ptx-estimate'
    shared_bytes_per_block: int
    threads_per_block: int
    local_bytes_per_thread: int
    occupancy: Occupancy

    def describe(self) -> str:
        return (f"{self.threads_per_block} threads, {self.registers_per_thread} registers/thread "
                f"({self.registers_source}), {self.shared_bytes_per_block} B shared/block")


def registers(compiled) -> tuple[int, str, int]:
    """(registers per thread, source, local bytes) for a CompiledKernel (its `static_resources`)."""
    r = compiled.static_resources
    return r.registers_per_thread, r.registers_source, r.local_bytes_per_thread


def kernel_resources(plan) -> KernelResources:
    """What a block of the launch (`gpusim.launch_plan.LaunchPlan`) occupies, and how many fit."""
    regs, src, local = registers(plan.compiled)
    shared = plan.block_shared_bytes
    threads = plan.geometry.threads_per_block
    occ = occupancy(plan.spec, threads, regs, shared)
    return KernelResources(regs, src, shared, threads, local, occ)
