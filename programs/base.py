"""What a program of `programs/` is: one kernel, a launch at a named size, and the
numpy reference its outputs must equal.

Each program module defines `PROGRAM = ProgramSpec(...)`. `spec.case(size, seed)`
builds fresh inputs and returns a `Case`: the kernel (a `numba.cuda.jit`
dispatcher, so the same object runs on a real GPU through Numba and in gpusim), the
launch shape and arguments, and the expected value of every output argument.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


class Deferred(Mapping):
    """Expected outputs computed when first read: output arg index -> a function returning its
    value. A case built for a prediction that never checks its outputs (`outputs=False`, as
    `validate compare` times the tensor set) then never pays for its reference: numpy's float64
    product of two 8192^2 matrices takes about 20 s of one core. The indices are known at once."""

    def __init__(self, makers: dict[int, Callable[[], np.ndarray]]):
        self._makers = dict(makers)
        self._values: dict[int, np.ndarray] = {}

    def __getitem__(self, idx: int) -> np.ndarray:
        if idx not in self._values:
            self._values[idx] = self._makers[idx]()
        return self._values[idx]

    def __iter__(self):
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


@dataclass
class Case:
    """One ready-to-run launch of a program and what its outputs must be."""
    name: str
    kernel: Any                                  # numba.cuda dispatcher
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[Any, ...]                        # numpy arrays (updated in place) and scalars
    expected: Mapping[int, np.ndarray]           # arg index -> expected value after the launch (of a
    #                                              gpusim.TensorMap argument: of its array); a dict or Deferred
    shared_bytes: int = 0                        # dynamic shared memory per block
    rtol: float = 0.0                            # 0 = exact (integers, copies)
    atol: float | Callable[[], float] = 0.0     # a function where the bound needs the reference's work
    params: dict[str, Any] = field(default_factory=dict)   # the size parameters used
    options: dict[str, Any] = field(default_factory=dict)  # more gpusim.launch keywords (Triton: constexprs, num_warps)

    def check(self, args: tuple[Any, ...] | None = None) -> None:
        """Raise AssertionError naming the program, output and worst element if an
        output differs from its reference."""
        args = self.args if args is None else args
        atol = self.atol() if callable(self.atol) else self.atol
        for idx, want in self.expected.items():
            got = np.asarray(getattr(args[idx], "array", args[idx]))     # a tensor map's output: its array
            if got.shape != want.shape:
                raise AssertionError(f"{self.name}: output arg {idx} has shape {got.shape}, expected {want.shape}")
            if self.rtol == 0.0 and atol == 0.0:
                bad = got != want
                if np.issubdtype(want.dtype, np.floating):
                    bad &= ~(np.isnan(got) & np.isnan(want))
            else:
                bad = ~np.isclose(got, want, rtol=self.rtol, atol=atol, equal_nan=True)
            if bad.any():
                first = tuple(int(i) for i in np.argwhere(bad)[0])
                raise AssertionError(
                    f"{self.name}: output arg {idx} differs from the numpy reference at "
                    f"{int(bad.sum())} of {bad.size} elements; first at index {first}: "
                    f"got {got[first]!r}, expected {want[first]!r}")


@dataclass(frozen=True)
class ProgramSpec:
    """A program: `build(rng, **params) -> Case`, and named sizes of `params`.

    `sizes` has at least 'default' (quick: runs in the simulator in about a second)
    and one larger size for measuring on a real GPU.
    """
    name: str
    description: str
    build: Callable[..., Case]
    sizes: dict[str, dict[str, Any]]
    tags: tuple[str, ...] = ()

    def case(self, size: str | dict[str, Any] = "default", seed: int = 0) -> Case:
        params = dict(self.sizes[size]) if isinstance(size, str) else dict(self.sizes["default"], **size)
        c = self.build(np.random.default_rng(seed), **params)
        c.params = params
        return c
