"""`gpusim.cuda.random`: numba-cuda's xoroshiro128+ generators with drop-in device arrays.

The device functions (`xoroshiro128p_uniform_float32`, `..._normal_float64`, ...) are
numba-cuda's own, re-exported unchanged (Numba types calls to them). The host
functions initialise the states on the CPU exactly as numba-cuda does
(`init_xoroshiro128p_states_cpu`: splitmix64 seeding, then 2**64-step jumps per
subsequence) and put them in a drop-in `DeviceArray` rather than driver memory.

Source: numba-cuda 0.30 `random.py`.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba.cuda.random import (  # noqa: F401  (re-exported)
    init_xoroshiro128p_state, init_xoroshiro128p_states_cpu, rotl, uint64_to_unit_float32, uint64_to_unit_float64,
    xoroshiro128p_dtype, xoroshiro128p_jump, xoroshiro128p_next, xoroshiro128p_normal_float32,
    xoroshiro128p_normal_float64, xoroshiro128p_type, xoroshiro128p_uniform_float32, xoroshiro128p_uniform_float64,
)

from gpusim.cuda._memory import device_array


def init_xoroshiro128p_states(states: Any, seed: int, subsequence_start: int = 0, stream: Any = 0) -> None:
    """Initialise `states` (a drop-in device array of xoroshiro128p_dtype) in place."""
    cpu = np.empty(shape=states.shape, dtype=xoroshiro128p_dtype)
    init_xoroshiro128p_states_cpu(cpu, seed, subsequence_start)
    states.copy_to_device(cpu, stream=stream)


def create_xoroshiro128p_states(n: int, seed: int, subsequence_start: int = 0, stream: Any = 0) -> Any:
    """A new drop-in device array of `n` generator states (see module doc)."""
    states = device_array(n, dtype=xoroshiro128p_dtype, stream=stream)
    init_xoroshiro128p_states(states, seed, subsequence_start, stream)
    return states
