"""Fixtures of the frontend tests: an isolated PTX disk cache, a stand-in for
DeviceMemory that records allocations so tests can read and write "device" bytes, and
the SASS of every program and microbenchmark (built once per session)."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own empty disk cache and a clean in-memory cache."""
    from gpusim.frontend import compile as fc
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "ptx-cache"))
    monkeypatch.delenv("GPUSIM_DISK_CACHE", raising=False)
    fc.clear_memory_cache()
    fc.reset_cache_stats()
    yield
    fc.clear_memory_cache()


class FakeMemory:
    """DeviceMemory's alloc_array/copy_back contract: contiguous arrays only, bytes in memory order."""

    def __init__(self) -> None:
        self.next_address = 0x10000
        self.buffers: dict[int, np.ndarray] = {}     # address -> uint8 bytes
        self.names: dict[int, str] = {}

    def alloc_array(self, arr: np.ndarray, name: str) -> int:
        assert arr.flags.c_contiguous or arr.flags.f_contiguous, f"{name}: not contiguous"
        order = "F" if arr.flags.f_contiguous and not arr.flags.c_contiguous else "C"
        addr = self.next_address
        self.next_address += max(arr.nbytes, 1) + 512
        self.buffers[addr] = np.frombuffer(arr.tobytes(order=order), np.uint8).copy()
        self.names[addr] = name
        return addr

    def copy_back(self, addr: int, out: np.ndarray) -> None:
        assert out.flags.c_contiguous or out.flags.f_contiguous
        order = "F" if out.flags.f_contiguous and not out.flags.c_contiguous else "C"
        out[...] = self.buffers[addr].view(out.dtype).reshape(out.shape, order=order)

    def device(self, addr: int, dtype, shape, order="C") -> np.ndarray:
        """A writable view of the device bytes at `addr`."""
        return self.buffers[addr].view(dtype).reshape(shape, order=order)


@pytest.fixture
def fake_mem() -> FakeMemory:
    return FakeMemory()


@pytest.fixture(scope="session")
def corpus():
    """(kernel, instruction) for every SASS instruction of every program and microbenchmark
    at its default size, sm_90 (nvdisasm in a thread per core), built once per session."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    import programs
    from gpusim.frontend import sass
    from gpusim.frontend.compile import compile_kernel
    from validate.microbench import MICROBENCHMARKS
    if not (sass.have_ptxas() and sass.have_nvdisasm()):
        pytest.skip(f"ptxas/nvdisasm not installed: {sass.INSTALL_HINT}")
    jobs = []
    for spec in list(programs.PROGRAMS.values()) + list(MICROBENCHMARKS.values()):
        case = spec.case("default")
        ck = compile_kernel(case.kernel, case.args)
        jobs.append((spec.name, sass.ptxas_info(ck.ptx, ck.entry, ck.cc).cubin, ck.entry))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        listings = pool.map(lambda j: sass.sass_listing(j[1], j[2]), jobs)
        return tuple((name, i) for (name, _, _), listing in zip(jobs, listings) for i in listing)
