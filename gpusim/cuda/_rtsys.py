"""numba-cuda's host-side NRT object (`numba.cuda.memory_management.nrt.rtsys`: enable,
disable and read the runtime's statistics; numba-cuda's `MemoryLeakMixin` uses it) answering
from the simulator's counters (`gpusim/frontend/nrt.py`: `STATS_RUNTIME`, fed after every
launch of a kernel that allocates) instead of launching the memsys kernels on a GPU. Installed
only where no CUDA driver answers.

Sources: numba-cuda 0.30 `memory_management/nrt.py` (`_Runtime`).
"""
from __future__ import annotations

from numba.cuda import config
from numba.cuda.memory_management import nrt as numba_nrt

from gpusim.cuda._hostcompile import install_when_no_driver
from gpusim.frontend.nrt import STATS_RUNTIME


def install_runtime() -> bool:
    """Make numba-cuda's `rtsys` answer from `STATS_RUNTIME` (only where no CUDA driver
    answers, like `_hostcompile.install_when_no_driver`). True if installed."""
    if not install_when_no_driver():
        return False
    rt = numba_nrt.rtsys
    if getattr(rt, "_gpusim", False):
        return True
    s = STATS_RUNTIME

    def read(name: str):
        def get(stream=None):
            if not s.enabled:
                raise RuntimeError("NRT stats are disabled.")
            return int(s.counts[("alloc", "free", "mi_alloc", "mi_free").index(name)])
        return get

    def initialize(stream=None):
        s.reset()
        rt._initialized = True
        if config.CUDA_NRT_STATS:
            s.enabled = True

    def enable(stream=None):
        s.enabled = True

    def disable(stream=None):
        s.enabled = False

    def stats(stream=None):
        if not s.enabled:
            raise RuntimeError("NRT stats are disabled.")
        c = [int(v) for v in s.counts]
        return numba_nrt._nrt_mstats(alloc=c[0], free=c[1], mi_alloc=c[2], mi_free=c[3])

    def show(stream=None):
        c = [int(v) for v in s.counts]
        print(f"TheMSys->stats.enabled {int(s.enabled)}\nTheMSys->stats.alloc {c[0]}\nTheMSys->stats.free {c[1]}\n"
              f"TheMSys->stats.mi_alloc {c[2]}\nTheMSys->stats.mi_free {c[3]}")

    for name, fn in (("allocate", lambda stream=None: None), ("ensure_allocated", lambda stream=None: None),
                     ("initialize", initialize), ("ensure_initialized", lambda stream=None: None),
                     ("memsys_enable_stats", enable), ("memsys_disable_stats", disable),
                     ("memsys_stats_enabled", lambda stream=None: bool(s.enabled)),
                     ("get_allocation_stats", stats), ("memsys_get_stats_alloc", read("alloc")),
                     ("memsys_get_stats_free", read("free")), ("memsys_get_stats_mi_alloc", read("mi_alloc")),
                     ("memsys_get_stats_mi_free", read("mi_free")), ("print_memsys", show),
                     ("set_memsys_to_module", lambda module, stream=None: None)):
        setattr(rt, name, fn)
    rt._gpusim = True
    return True
