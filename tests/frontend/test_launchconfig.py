"""`cuda.launchconfig`: the configured launch is current while the launch compiles
(gpusim/frontend/current_launch.py)."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim import cuda
from gpusim.cuda import launchconfig


def test_compilation_sees_the_launch_and_nothing_is_current_afterwards():
    @cuda.jit
    def f(x):
        x[0] = 1
    with launchconfig.capture_compile_config(f) as seen:
        f[2, 64](np.zeros(1, np.int32))
    cfg = seen["config"]
    assert cfg.dispatcher is f and cfg.blockdim == (64, 1, 1) and cfg.griddim == (2, 1, 1)
    assert launchconfig.current_launch_config() is None
    with pytest.raises(RuntimeError, match="No launch config"):
        launchconfig.ensure_current_launch_config()


def test_a_dispatcher_marked_sensitive_compiles_again_for_a_new_block_size():
    @cuda.jit
    def g(x):
        x[0] = 2
    real = g._compile_for_args
    blocks = []

    def marking(args):
        cfg = launchconfig.ensure_current_launch_config()
        cfg.dispatcher.mark_launch_config_sensitive()
        blocks.append(cfg.blockdim[0])
        return real(args)
    g._compile_for_args = marking
    a = np.zeros(1, np.int32)
    g[1, 32](a)
    g[1, 64](a)
    (ov,) = g.overloads.values()
    assert ov.launch_config_sensitive and blocks == [32, 64] and a[0] == 2
