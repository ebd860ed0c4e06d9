"""`cupy.random` for the drop-in: CuPy's random API drawing from numpy's generators.

The same calls and distributions as CuPy's (`rand`, `randn`, `random`/`random_sample`,
`uniform`, `normal`, `standard_normal`, `randint`, `choice`, `permutation`, `shuffle`,
`seed`, `RandomState`, `default_rng` and its `Generator`; any other `RandomState` method
through numpy's), with CuPy's `dtype=` arguments, returning gpusim.cupy arrays. The numbers
are numpy's, not those CuPy's cuRAND generators give for the same seed. The global state
starts from seed 0, so an unseeded program draws the same numbers every run (determinism).

Sources: CuPy 14 `cupy/random/_sample.py`, `_distributions.py`, `_generator.py` (`RandomState`),
`_generator_api.pyx` (`Generator`).
"""
from __future__ import annotations

import numpy as np

from gpusim.cupy._array import wrap

DEFAULT_SEED = 0


class RandomState:
    """CuPy's `RandomState(seed)`, on numpy's `RandomState`."""

    def __init__(self, seed=None):
        self._rs = np.random.RandomState(DEFAULT_SEED if seed is None else seed)

    def seed(self, seed=None) -> None:
        self._rs.seed(DEFAULT_SEED if seed is None else seed)

    def rand(self, *size, dtype=float):
        return self.random_sample(size or None, dtype)

    def randn(self, *size, dtype=float):
        return self.standard_normal(size or None, dtype)

    def random_sample(self, size=None, dtype=float):
        return _as(self._rs.random_sample(size), dtype)

    def standard_normal(self, size=None, dtype=float):
        return _as(self._rs.standard_normal(size), dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
        return _as(self._rs.uniform(low, high, size), dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=float):
        return _as(self._rs.normal(loc, scale, size), dtype)

    def randint(self, low, high=None, size=None, dtype="l"):
        return wrap(np.asarray(self._rs.randint(low, high, size, dtype=dtype)))

    def choice(self, a, size=None, replace=True, p=None):
        return wrap(np.asarray(self._rs.choice(np.asarray(a) if not np.isscalar(a) else a, size, replace,
                                               None if p is None else np.asarray(p))))

    def permutation(self, x):
        return wrap(np.asarray(self._rs.permutation(np.asarray(x) if not np.isscalar(x) else x)))

    def shuffle(self, a) -> None:
        self._rs.shuffle(a)

    random = ranf = sample = random_sample

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        method = getattr(self._rs, name)

        def draw(*args, dtype=None, **kwargs):
            return _as(method(*args, **kwargs), dtype)
        return draw


def _as(values, dtype):
    a = np.asarray(values)
    return wrap(a if dtype is None else a.astype(dtype, copy=False))


class Generator:
    """CuPy's `Generator` (from `default_rng(seed)`), on numpy's."""

    def __init__(self, bit_generator_or_seed=None):
        self._g = np.random.default_rng(DEFAULT_SEED if bit_generator_or_seed is None else bit_generator_or_seed)

    def random(self, size=None, dtype=np.float64, out=None):
        return _out(self._g.random(size, dtype=dtype), out)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return _out(self._g.standard_normal(size, dtype=dtype), out)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return wrap(np.asarray(self._g.integers(low, high, size, dtype=dtype, endpoint=endpoint)))

    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64):
        return _as(self._g.uniform(low, high, size), dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=np.float64):
        return _as(self._g.normal(loc, scale, size), dtype)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        method = getattr(self._g, name)

        def draw(*args, **kwargs):
            return wrap(np.asarray(method(*args, **kwargs)))
        return draw


def _out(values, out):
    if out is None:
        return wrap(np.asarray(values))
    out[...] = values
    return out


def default_rng(seed=None) -> Generator:
    return Generator(seed)


_GLOBAL = RandomState()


def get_random_state() -> RandomState:
    return _GLOBAL


def seed(seed=None) -> None:
    """Reseed the global state (None: seed 0, module doc)."""
    _GLOBAL.seed(seed)


def reset_states() -> None:
    _GLOBAL.seed(None)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_GLOBAL, name)
