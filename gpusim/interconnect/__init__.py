"""The links between GPUs: NVLink ports, NVSwitch, PCIe, and copy engines (SimPy units).

A newcomer's map: `ports.py` (one direction of a GPU's link bundle: a bandwidth server
with a latency), `fabric.py` (the system's ports wired by `spec.system.topology`, and the
route and chunked transfer between two GPUs; `RankView`, a collective's ranks on some of
its GPUs), `copy_engine.py` (peer copies, cudaMemcpyPeer), `kernel_traffic.py` (a
peer-access kernel's link traffic on `gpusim.System`'s timeline). Collectives that use the fabric live in `gpusim.collectives`; SM loads
and stores to a peer's memory in `gpusim.timing.memory.peer`.
"""
from gpusim.interconnect.fabric import Fabric

__all__ = ["Fabric"]
