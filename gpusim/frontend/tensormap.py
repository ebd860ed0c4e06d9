"""`gpusim.TensorMap`: the host side of `cuTensorMapEncodeTiled`, a tensor map passed to a
kernel for its `cp.async.bulk.tensor` copies (TMA).

    A = np.random.rand(128, 256).astype(np.float16)          # row-major M x K
    tmap = gpusim.TensorMap(A, box=(64, 128), swizzle="128B")   # a box of 128 rows x 64 columns
    gpusim.launch(gpusim.CudaSource(src, "gemm"), grid, block, (tmap, ...))

The arguments are cuTensorMapEncodeTiled's, in its order: dimension 0 is the innermost
(contiguous) one. `array` is the tensor's memory: a numpy array, or a view into one (a block of
a larger matrix, an offset start); gpusim copies the array it views to the simulated GPU (once,
however many maps and pointer arguments name it) and back after the launch, so TMA stores land
in it. Unless given, `dims` and `strides` are the view's (`dims` = shape reversed, `strides` =
byte strides of dimensions 1.., reversed), `dtype` is the array's (int8/int16 data as uint8/uint16,
as with the driver; "bfloat16" for bf16 data held in 2-byte integers), `element_strides` all 1.
`swizzle` is "none", "32B", "64B" or "128B"; `interleave` "none" (16B and 32B are refused as
not modelled); `oob_fill` "zero" or "nan"; `l2_promotion` "none", "64B", "128B", "256B" (a hint).

The map passes as a `__grid_constant__ const CUtensorMap` parameter (128 bytes, 64-byte aligned:
gpusim's encoding, `isa.semantics.tensor_map`), or through a `const CUtensorMap*` pointer
parameter (gpusim then places the 128 bytes in global memory). A map the driver would refuse
(misaligned address, a box over 256, a stride not a multiple of 16, ...) is reported where a
copy uses it, naming the kernel, line, block and thread (`gpusim.functional.bulk_ops`);
`TensorMap.check()` reports it at once (`LaunchError`).

Sources: CUDA Driver API 13.0, `cuTensorMapEncodeTiled` (cuda.h).
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import LaunchError
from isa.semantics import tensor_map as T

_NUMPY_TYPES = {"uint8": "uint8", "int8": "uint8", "uint16": "uint16", "int16": "uint16", "uint32": "uint32",
                "int32": "int32", "uint64": "uint64", "int64": "int64", "float16": "float16", "float32": "float32",
                "float64": "float64"}


def _ints(name: str, v, n: int | None) -> tuple[int, ...]:
    try:
        t = tuple(v)
    except TypeError:
        t = (v,)
    if not all(isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)) for e in t) or \
            any(int(e) < 0 for e in t):
        raise LaunchError(f"TensorMap: {name} must be a tuple of non-negative integers, got {v!r}")
    if n is not None and len(t) != n:
        raise LaunchError(f"TensorMap: {name} needs {n} values (innermost dimension first), got {len(t)}: {v!r}")
    return tuple(int(e) for e in t)


def _choice(name: str, v, table: dict) -> int:
    if v not in table:
        raise LaunchError(f"TensorMap: {name} must be one of {', '.join(repr(k) for k in table)}, got {v!r}")
    return table[v]


def _root(a: np.ndarray) -> tuple[np.ndarray, int]:
    """The contiguous array `a`'s memory belongs to, and `a`'s first byte's offset in it."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is a or not (root.flags.c_contiguous or root.flags.f_contiguous):
        if not (a.flags.c_contiguous or a.flags.f_contiguous):
            raise LaunchError("TensorMap: the array must be contiguous or a view into a contiguous array")
        return a, 0
    off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if not 0 <= off < max(root.nbytes, 1):
        raise LaunchError("TensorMap: the array does not lie inside the array it views")
    return root, off


class TensorMap:
    """A tiled tensor map (module docstring); all tuples innermost dimension first."""

    def __init__(self, array, box, *, dtype=None, dims=None, strides=None, element_strides=None,
                 interleave: str = "none", swizzle: str = "none", l2_promotion: str = "none",
                 oob_fill: str = "zero"):
        if not isinstance(array, np.ndarray) or array.dtype.hasobject:
            raise LaunchError(f"TensorMap: the tensor is a numpy array, got {type(array).__name__}")
        self.array = array
        rank = len(_ints("box", box, None))
        if not 1 <= rank <= T.MAX_RANK:
            raise LaunchError(f"TensorMap: box has {rank} dimensions; a tensor map has 1 to 5")
        self.box = _ints("box", box, None)
        self.dims = _ints("dims", dims, rank) if dims is not None else tuple(reversed(array.shape))
        if len(self.dims) != rank:
            raise LaunchError(f"TensorMap: the array has {array.ndim} dimensions but box has {rank}; pass dims= "
                              "(and strides=) for another view of its memory")
        self.strides = _ints("strides", strides, rank - 1) if strides is not None else \
            tuple(reversed(array.strides))[1:]
        if strides is None and any(s < 0 for s in array.strides):
            raise LaunchError("TensorMap: the array has negative strides; pass strides=")
        self.element_strides = _ints("element_strides", element_strides, rank) if element_strides is not None \
            else (1,) * rank
        name = dtype if isinstance(dtype, str) else (np.dtype(dtype).name if dtype is not None else array.dtype.name)
        if name in _NUMPY_TYPES:
            name = _NUMPY_TYPES[name]
        if name not in T.DTYPE_CODE:
            raise LaunchError(f"TensorMap: element type {name!r} is not a tensor-map type "
                              f"({', '.join(T.DTYPE_CODE)})")
        self.dtype = T.DTYPE_CODE[name]
        if strides is None and array.strides and array.strides[-1] != array.itemsize:
            raise LaunchError("TensorMap: the array's innermost dimension is not contiguous (TMA reads dimension 0 "
                              "contiguously); pass a view whose last axis has unit stride")
        self.interleave = _choice("interleave", interleave, T.INTERLEAVE_CODE)
        self.swizzle = _choice("swizzle", swizzle, T.SWIZZLE_CODE)
        self.l2_promotion = _choice("l2_promotion", l2_promotion, T.L2_CODE)
        self.oob_fill = _choice("oob_fill", oob_fill, T.OOB_CODE)
        self.root, self.offset = _root(array)

    def __repr__(self) -> str:
        return (f"TensorMap({T.DTYPES[self.dtype][0]}, dims={self.dims}, strides={self.strides}, box={self.box}, "
                f"swizzle={T.SWIZZLES[self.swizzle]!r})")

    def fields(self, address: int) -> T.TensorMapFields:
        """The map's fields with the tensor at global `address` (its first element)."""
        return T.TensorMapFields(self.dtype, int(address), self.dims, self.strides, self.box, self.element_strides,
                                 self.interleave, self.swizzle, self.l2_promotion, self.oob_fill)

    def check(self) -> None:
        """LaunchError when cuTensorMapEncodeTiled would refuse the map (the address checked as the
        array's offset in its memory, which gpusim allocates 256-byte aligned)."""
        why = T.problems(self.fields(self.offset))
        if why is not None:
            raise LaunchError(f"TensorMap: {why}")
