"""Numba's configuration is part of the PTX cache key; stream handles read as integers."""
from __future__ import annotations

import numpy as np
from numba.cuda import config

from gpusim import cuda
from gpusim.frontend.compile import cache_stats, compile_kernel


def bump(a):
    a[0] += 1


def test_a_changed_numba_setting_recompiles_and_restoring_it_hits_the_cache(monkeypatch):
    monkeypatch.setenv("GPUSIM_DISK_CACHE", "0")
    a = np.zeros(1, np.int32)
    compile_kernel(bump, (a,))
    before = cache_stats().compiles
    saved = config.ALWAYS_WARN_UNINIT_VAR
    try:
        config.ALWAYS_WARN_UNINIT_VAR = 1 - int(saved)
        compile_kernel(bump, (a,))
    finally:
        config.ALWAYS_WARN_UNINIT_VAR = saved
    compile_kernel(bump, (a,))
    assert cache_stats().compiles - before == 1


def test_external_stream_handle_is_the_pointer_it_wraps():
    assert int(cuda.external_stream(0x12345678).handle) == 0x12345678
