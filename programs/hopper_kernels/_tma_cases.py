"""Inputs of the Hopper programs that a GPU records too: the GEMM's sizes and operands, the TMA
box cases, and the tensor maps of both as cuTensorMapEncodeTiled's fields.

numpy and `isa` only: `validate/semantics/tma_record.py` loads this file by its path on the GPU
machine (without gpusim or the program package), so that the GPU gets exactly these inputs.
"""
from __future__ import annotations

import numpy as np

from isa.semantics import tensor_map as T

BM = 64                           # rows of C per block of tma_wgmma_gemm (one warpgroup)
GEMM_SIZES = {"default": {"m": 128, "n": 128, "k": 128, "bn": 128, "bk": 32, "stages": 2},
              "tiny": {"m": 64, "n": 64, "k": 64, "bn": 64, "bk": 32, "stages": 2},
              "swizzle128": {"m": 64, "n": 128, "k": 256, "bn": 128, "bk": 64, "stages": 3},
              "large": {"m": 4096, "n": 4096, "k": 4096, "bn": 128, "bk": 64, "stages": 4}}
GEMM_RECORDED = ("tiny", "default", "swizzle128")     # the sizes the GPU script records
A_SWIZZLE = {16: "32B", 32: "64B", 64: "128B"}          # A's rows are bk halves: one swizzle span


def gemm_inputs(rng, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A (m x k) and B (k x n), f16, uniform in [-1, 1)."""
    A = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float16)
    B = rng.uniform(-1.0, 1.0, (k, n)).astype(np.float16)
    return A, B


def gemm_maps(bn: int, bk: int) -> tuple[dict, dict, dict]:
    """The TensorMap keywords of A, B and C (tma_wgmma_gemm.cu's header)."""
    return ({"box": (bk, BM), "swizzle": A_SWIZZLE[bk]}, {"box": (64, bk), "swizzle": "128B"}, {"box": (bn, BM)})


def gemm_shared_bytes(bn: int, bk: int, stages: int) -> int:
    """Dynamic shared memory: the stages (or the epilogue's f32 tile), plus 1024 bytes to align them."""
    return max(stages * (BM * bk * 2 + bk * bn * 2), BM * bn * 4) + 1024


# name -> numpy shape and dtype of the tensor, the map's box / swizzle / traversal strides / fill,
# the load's coordinates c and the store's d (innermost first, as the map's). A box must start at a
# 16-byte aligned global address (c_0 and d_0 x element size multiples of 16: the GPU stops the
# kernel with an illegal instruction otherwise, isa.semantics.tensor_map.start_problem); boxes still
# reach out of the tensor on every side.
BOX_CASES = {
    "sw128_f16": dict(shape=(40, 96), dtype="float16", box=(64, 8), swizzle="128B", c=(16, 5), d=(40, 36)),
    "sw64_f16": dict(shape=(40, 96), dtype="float16", box=(32, 8), swizzle="64B", c=(0, 0), d=(64, 0)),
    "sw32_u8": dict(shape=(24, 64), dtype="uint8", box=(32, 16), swizzle="32B", c=(32, 4), d=(16, 12)),
    "oob_zero_f32": dict(shape=(20, 20), dtype="float32", box=(16, 8), c=(-4, 15), d=(8, -3)),
    "oob_nan_f32": dict(shape=(20, 20), dtype="float32", box=(16, 8), oob_fill="nan", c=(-4, 15), d=(8, -3)),
    "oob_nan_f16": dict(shape=(20, 24), dtype="float16", box=(16, 8), oob_fill="nan", c=(16, -2), d=(0, 16)),
    "strided_3d_u16": dict(shape=(6, 10, 40), dtype="uint16", box=(16, 8, 5), element_strides=(1, 2, 3),
                           c=(8, 1, 0), d=(0, 0, 0)),
    "rank1_f32": dict(shape=(100,), dtype="float32", box=(32,), c=(80,), d=(-8,)),
}

# What the GPU script asks the hardware besides the cases (each launch in its own process, since a
# fault ends the CUDA context): boxes that start off 16 bytes (`fault`: gpusim refuses them; the
# GPU's verdict is recorded and tests/programs/test_tma_box.py holds gpusim to it), and swizzled
# boxes `shift` bytes past a 1024-byte boundary (128-byte aligned, as the PTX ISA asks of a tensor
# copy's shared address; gpusim swizzles by the absolute address bits, the GPU's bytes will say).
PROBES = {
    "load_at_byte_-20_f32": dict(BOX_CASES["oob_zero_f32"], c=(-5, 15), fault="load"),
    "load_at_byte_8_f16": dict(BOX_CASES["oob_nan_f16"], c=(4, -2), fault="load"),
    "store_at_byte_40_f32": dict(BOX_CASES["oob_zero_f32"], d=(10, -3), fault="store"),
    "sw128_at_128": dict(BOX_CASES["sw128_f16"], shift=128),
    "sw64_at_384": dict(BOX_CASES["sw64_f16"], shift=384),
    "sw32_at_128": dict(BOX_CASES["sw32_u8"], shift=128),
}


def box_nbytes(case: dict) -> int:
    """Bytes of the case's box in shared memory (the mbarrier's transaction count)."""
    es = case.get("element_strides", (1,) * len(case["box"]))
    n = case["box"][0] * int(np.prod([-(-b // e) for b, e in zip(case["box"][1:], es[1:])], dtype=np.int64))
    return n * np.dtype(case["dtype"]).itemsize


def box_scalars(case: dict) -> tuple[int, ...]:
    """tma_box's scalar arguments after the maps and the dump: nbytes, c0..c2, d0..d2, shift."""
    rank = len(case["box"])
    return ((box_nbytes(case),) + tuple(case["c"]) + (0,) * (3 - rank) + tuple(case["d"]) + (0,) * (3 - rank)
            + (case.get("shift", 0),))


def box_shared_bytes(case: dict) -> int:
    """Dynamic shared memory of tma_box: the box, 1024 bytes to align it, and its shift."""
    return box_nbytes(case) + 1024 + case.get("shift", 0)


def box_tensor(case: dict) -> np.ndarray:
    """The case's tensor: element i holds bit pattern i + 1 (wrapping), so every byte tells where it came from."""
    dt = np.dtype(case["dtype"])
    n = int(np.prod(case["shape"]))
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
    raw = (np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B1) + np.uint64(1)).astype(bits)
    if dt.kind == "f":                   # keep floats finite: clear the top exponent bit
        raw &= bits(~(1 << (8 * dt.itemsize - 2)) & ((1 << 8 * dt.itemsize) - 1))
    return raw.view(dt).reshape(case["shape"])


def box_map_keywords(case: dict) -> dict:
    return {k: case[k] for k in ("box", "swizzle", "element_strides", "oob_fill") if k in case}


def fields(array: np.ndarray, address: int, box, swizzle: str = "none", element_strides=None,
           oob_fill: str = "zero") -> T.TensorMapFields:
    """cuTensorMapEncodeTiled's fields for C-contiguous `array` at device `address` (what
    gpusim.TensorMap(array, box, ...) encodes, the GPU script passes to the driver)."""
    name = {"int8": "uint8", "int16": "uint16"}.get(array.dtype.name, array.dtype.name)
    rank = array.ndim
    return T.TensorMapFields(T.DTYPE_CODE[name], int(address), tuple(reversed(array.shape)),
                             tuple(reversed(array.strides))[1:], tuple(box),
                             tuple(element_strides) if element_strides is not None else (1,) * rank,
                             0, T.SWIZZLE_CODE[swizzle], 0, T.OOB_CODE[oob_fill])


def _rule_probes() -> dict:
    """Boxes that separate the candidate rules behind the H100's faults on oob_zero_f32, oob_nan_f32
    and rank1_f32 (their boxes start 16-byte aligned; data/measurements/tma_h100.json). Each probe has
    one unusual side, load (coordinates c) or store (d), the other at the tensor's origin, so a
    fault names the side. Candidates: a negative innermost coordinate (load or store); any
    negative coordinate of a store; an f32 (or any 4-byte) element type; a box reaching past the
    tensor's end in the innermost dimension; rank 1; the NaN fill; a start off 16 bytes (load and
    store, positive coordinates). Tensors: 24 rows of 96 bytes; boxes 64 bytes x 8 rows."""
    probes = {}
    for dt, tag in (("uint8", "u8"), ("float16", "f16"), ("float32", "f32"), ("uint32", "u32"),
                    ("float64", "f64")):
        e = np.dtype(dt).itemsize
        w, b0 = 96 // e, 64 // e
        base = dict(shape=(24, w), dtype=dt, box=(b0, 8), c=(0, 0), d=(0, 0))
        grid = {"origin": {},                                           # all in bounds
                "load_neg_inner": {"c": (-16 // e, 4)},                 # starts 16 bytes before each row
                "load_neg_outer": {"c": (0, -2)},                       # starts 2 rows before the tensor
                "load_high_inner": {"c": (64 // e, 4)},                 # reaches 32 bytes past each row
                "load_high_outer": {"c": (0, 20)},                      # reaches 4 rows past the tensor
                "store_neg_inner": {"d": (-16 // e, 4)},
                "store_neg_outer": {"d": (0, -2)},
                "store_high_inner": {"d": (64 // e, 4)},
                "store_high_outer": {"d": (0, 20)}}
        if dt == "float64":                                             # the size question only
            grid = {k: grid[k] for k in ("origin", "load_neg_inner", "store_neg_inner")}
        for name, kw in grid.items():
            probes[f"{tag}_{name}"] = dict(base, **kw)
    f32 = dict(shape=(24, 24), dtype="float32", box=(16, 8), c=(0, 0), d=(0, 0))
    probes.update({
        "f32_load_neg_inner_32B": dict(f32, c=(-8, 4)),                 # two 16-byte chunks before the row
        "f32_load_neg_inner_whole": dict(f32, c=(-16, 4)),              # the whole box before the row
        "f32_load_neg_inner_nan": dict(f32, c=(-4, 4), oob_fill="nan"),
        "f32_load_neg_both": dict(f32, c=(-4, -2)),
        "f32_store_neg_both": dict(f32, d=(-4, -2)),
        "f32_load_at_byte_8": dict(f32, c=(2, 4)),                      # positive, 8 bytes off 16
        "f32_store_at_byte_8": dict(f32, d=(2, 4)),
        "u8_load_at_byte_4": dict(probes["u8_origin"], c=(4, 4)),
        "u8_store_at_byte_4": dict(probes["u8_origin"], d=(4, 4)),
        "rank1_f32_origin": dict(shape=(100,), dtype="float32", box=(32,), c=(0,), d=(0,)),
        "rank1_f32_load_high": dict(shape=(100,), dtype="float32", box=(32,), c=(80,), d=(0,)),
        "rank1_f32_load_neg": dict(shape=(100,), dtype="float32", box=(32,), c=(-8,), d=(0,)),
        "rank1_f32_store_neg": dict(shape=(100,), dtype="float32", box=(32,), c=(0,), d=(-8,)),
        "rank1_f32_store_high": dict(shape=(100,), dtype="float32", box=(32,), c=(0,), d=(80,)),
        "rank1_f16_load_neg": dict(shape=(200,), dtype="float16", box=(32,), c=(-8,), d=(0,)),
        "rank1_f16_store_neg": dict(shape=(200,), dtype="float16", box=(32,), c=(0,), d=(-8,)),
        "u16_3d_load_neg_outermost": dict(shape=(6, 10, 48), dtype="uint16", box=(16, 4, 2), c=(0, 0, -1),
                                          d=(0, 0, 0)),
        "u16_3d_store_neg_outermost": dict(shape=(6, 10, 48), dtype="uint16", box=(16, 4, 2), c=(0, 0, 0),
                                           d=(0, 0, -1)),
    })
    return probes


# The grid of `tma_record.py --rules` (each launch in its own process; the GPU's verdicts in
# data/measurements/tma_h100_rules.json): see _rule_probes.
RULE_PROBES = _rule_probes()
