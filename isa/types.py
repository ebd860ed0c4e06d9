"""PTX fundamental types: size in bytes and the numpy dtype that holds a value of each.

Registers are stored in numpy arrays of their declared type's dtype. An instruction
that reads a register through another type of the same size reinterprets the bits
(`ndarray.view`); a narrower instruction type truncates, as PTX "Operand Size
Exceeding Instruction-Type Size" describes. `bf16` has no numpy type and is held as
its raw `uint16` bits; `f16x2`/`bf16x2` as `uint32`.

Source: PTX ISA, "Fundamental Types" and "Operand Size Exceeding Instruction-Type Size".
"""
from __future__ import annotations

import numpy as np

TYPE_BYTES: dict[str, int] = {
    "s8": 1, "u8": 1, "b8": 1,
    "s16": 2, "u16": 2, "b16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "b32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "s64": 8, "u64": 8, "b64": 8, "f64": 8,
    "b128": 16,
    "pred": 1,
}

DTYPES: dict[str, np.dtype] = {
    "s8": np.dtype(np.int8), "s16": np.dtype(np.int16), "s32": np.dtype(np.int32), "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "b8": np.dtype(np.uint8), "b16": np.dtype(np.uint16), "b32": np.dtype(np.uint32), "b64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16),
    "f16x2": np.dtype(np.uint32), "bf16x2": np.dtype(np.uint32), "tf32": np.dtype(np.uint32),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "pred": np.dtype(np.bool_),
}

SIGNED = frozenset({"s8", "s16", "s32", "s64"})
UNSIGNED = frozenset({"u8", "u16", "u32", "u64"})
BITS = frozenset({"b8", "b16", "b32", "b64", "b128"})
FLOATS = frozenset({"f16", "bf16", "f32", "f64", "f16x2", "bf16x2", "tf32"})
INTEGERS = SIGNED | UNSIGNED | BITS


def type_bytes(t: str) -> int:
    """Size in bytes of PTX type `t` (e.g. 'f32' -> 4)."""
    try:
        return TYPE_BYTES[t]
    except KeyError:
        raise ValueError(f"unknown PTX type .{t}") from None


def dtype(t: str) -> np.dtype:
    """numpy dtype holding a value of PTX type `t`."""
    try:
        return DTYPES[t]
    except KeyError:
        raise ValueError(f"PTX type .{t} has no numpy representation here") from None


def unsigned_dtype(nbytes: int) -> np.dtype:
    """The unsigned integer dtype of `nbytes` bytes (raw bits of any type that size)."""
    return np.dtype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[nbytes])


def signed_dtype(nbytes: int) -> np.dtype:
    return np.dtype({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[nbytes])
