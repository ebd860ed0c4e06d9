"""The memory hierarchy of the timing model: per-SM L1, crossbar, L2 partitions of
slices (byte-masked sectors, near copies of far lines), HBM pseudo-channels (banks, row
buffers, turnaround, write drain, refresh).

Each module is one hardware unit; `system.py` composes the shared part and documents
the load-to-use latency composition. Times are SM clock cycles (floats).
"""
from gpusim.timing.memory.hbm import HBM
from gpusim.timing.memory.l1 import L1Cache
from gpusim.timing.memory.l2 import L2Cache
from gpusim.timing.memory.noc import NoC
from gpusim.timing.memory.servers import BandwidthServer
from gpusim.timing.memory.system import MemorySystem

__all__ = ["BandwidthServer", "HBM", "L1Cache", "L2Cache", "MemorySystem", "NoC"]
