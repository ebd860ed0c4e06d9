"""The PROGRAM of tma_box.cu: one TMA box loaded into shared memory (its raw bytes dumped) and
stored back, for each swizzle, out-of-bounds fill and traversal stride.

    gpusim run programs/hopper_kernels/tma_box.py --size sw128_f16 --functional
    gpusim run programs/hopper_kernels/tma_box.py --size oob_nan_f32 --functional

Sizes are the cases of `_tma_cases.BOX_CASES`. The numpy reference places the box as the PTX
ISA and CUDA's tensor-map documentation describe it (innermost dimension fastest, packed;
n_i = ceil(box_i / stride_i) elements along dimension i >= 1; out-of-bounds elements zero or
the type's NaN; the swizzle XORs a byte address's 16-byte chunk index, bits 4.., with bits 7..:
1, 2 or 3 bits for the 32B, 64B, 128B swizzle), and the store back writes the box's in-bounds
elements only. `validate/semantics/tma_record.py` records the same cases on a GPU
(tests/programs/test_tma_box.py compares them byte for byte).
"""
from pathlib import Path

import numpy as np

import gpusim
from programs.base import Case, ProgramSpec
from programs.hopper_kernels import _tma_cases as C
from isa.semantics import tensor_map as T

CU = Path(__file__).with_suffix(".cu")
SPAN = {"none": 0, "32B": 32, "64B": 64, "128B": 128}


def box_shape(case: dict) -> tuple[int, ...]:
    """Elements of the box per dimension, innermost first."""
    es = case.get("element_strides", (1,) * len(case["box"]))
    return (case["box"][0],) + tuple(-(-b // e) for b, e in zip(case["box"][1:], es[1:]))


def _coords(case: dict, start) -> list[np.ndarray]:
    """Per dimension (innermost first), the tensor coordinates the box's elements cover."""
    es = (1,) + tuple(case.get("element_strides", (1,) * len(case["box"]))[1:])
    return [start[i] + np.arange(n) * es[i] for i, n in enumerate(box_shape(case))]


def box_values(case: dict, tensor: np.ndarray) -> np.ndarray:
    """The box (numpy order: outermost first) as loaded from coordinates c, out-of-bounds filled."""
    cs = _coords(case, case["c"])[::-1]                        # numpy axis order
    grids = np.meshgrid(*cs, indexing="ij")
    ok = np.ones(grids[0].shape, bool)
    for g, n in zip(grids, tensor.shape):
        ok &= (g >= 0) & (g < n)
    bits = tensor.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[tensor.itemsize])
    name = {"int8": "uint8", "int16": "uint16"}.get(tensor.dtype.name, tensor.dtype.name)
    fill = T.NAN_BITS[name] if case.get("oob_fill", "zero") == "nan" else 0
    out = np.full(grids[0].shape, fill, bits.dtype)
    idx = tuple(np.where(ok, g, 0) for g in grids)
    out[ok] = bits[idx][ok]
    return out


def swizzled(raw: np.ndarray, swizzle: str, shift: int = 0) -> np.ndarray:
    """Bytes `raw` of a box `shift` bytes (a multiple of 128) past a 1024-byte aligned address, as
    the swizzle places them: by the bits of the shared address, not of the offset in the box."""
    span = SPAN[swizzle]
    if not span:
        return raw.copy()
    a = shift + np.arange(len(raw))
    dst = (a ^ (((a >> 7) & (span // 16 - 1)) << 4)) - shift
    out = np.zeros_like(raw)
    out[dst] = raw
    return out


def stored(case: dict, box: np.ndarray, shape) -> np.ndarray:
    """The output tensor (zeros) after the box is stored at coordinates d: in-bounds elements only."""
    out = np.zeros(shape, box.dtype)
    cs = _coords(case, case["d"])[::-1]
    grids = np.meshgrid(*cs, indexing="ij")
    ok = np.ones(grids[0].shape, bool)
    for g, n in zip(grids, shape):
        ok &= (g >= 0) & (g < n)
    out[tuple(g[ok] for g in grids)] = box[ok]
    return out


def launch_case(spec: dict, name: str = "tma_box") -> Case:
    """The launch of tma_box for a case of `_tma_cases` (BOX_CASES or PROBES), with its references."""
    tensor = C.box_tensor(spec)
    out = np.zeros_like(tensor)
    box = box_values(spec, tensor)
    raw = box.reshape(-1).view(np.uint8)
    dump = np.zeros(len(raw), np.uint8)
    kw = C.box_map_keywords(spec)
    args = (gpusim.TensorMap(tensor, **kw), gpusim.TensorMap(out, **kw), dump,
            *(np.int32(v) for v in C.box_scalars(spec)))
    want_out = stored(spec, box, tensor.shape).view(tensor.dtype)
    return Case(name, gpusim.CudaSource(CU, f"tma_box<{len(spec['box'])}>"), (1,), (128,), args,
                {2: swizzled(raw, spec.get("swizzle", "none"), spec.get("shift", 0)), 1: want_out}, shared_bytes=C.box_shared_bytes(spec))


def build(rng, case):
    return launch_case(C.BOX_CASES[case])


PROGRAM = ProgramSpec("tma_box", "one TMA box loaded (raw shared-memory bytes dumped) and stored back: swizzles, "
                      "out-of-bounds fill, traversal strides", build,
                      sizes={"default": {"case": "sw128_f16"}, **{k: {"case": k} for k in C.BOX_CASES}},
                      tags=("cuda", "hopper", "tma"))
