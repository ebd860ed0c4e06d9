"""Tensor maps: what a `CUtensorMap` made by `cuTensorMapEncodeTiled` describes, and which
global element a tiled-mode `cp.async.bulk.tensor` moves to which shared-memory byte.

What it models:
- The fields of `cuTensorMapEncodeTiled` (`TensorMapFields`): element type (the driver's
  `CUtensorMapDataType` codes), rank 1..5, global address, sizes (`dims`, innermost first) and
  byte strides of the outer rank - 1 dimensions, the box (`box`, elements per dimension), the
  traversal strides (`element_strides`), interleave, swizzle, L2 promotion and the float
  out-of-bounds fill. `problems` states the driver's rules (cuda.h, cuTensorMapEncodeTiled):
  address 16-byte aligned, sizes 1..2^31, strides multiples of 16 below 2^40, box 1..256 with
  box[0] x element size a multiple of 16 bytes, traversal strides 1..8, a swizzled box's inner
  dimension no wider than the swizzle span, the NaN fill for float types only.
- The 128 bytes a kernel receives (`encode` / `decode`): gpusim's own layout of those fields
  (the hardware's is opaque; a kernel may only hand the map to the copy), starting with the
  magic bytes `gsTM`, so a parameter that is not a map gpusim encoded is recognised.
- The box a copy at coordinates c (`box_elements`): n_i = ceil(box_i / element_strides_i)
  elements along dimension i (the traversal stride of dimension 0 is ignored, as the driver
  says: n_0 = box_0), element (k_0, ..., k_{r-1}) at global coordinates c_i + k_i * stride_i
  and at byte (k_0 + n_0 (k_1 + n_1 (...))) x element size of the box in shared memory: the
  box is packed, innermost dimension fastest. Elements with a coordinate outside 0..dims_i - 1
  are out of bounds: a load fills them (zeros, or NaN with the NaN fill), a store skips them.
  The mbarrier's transaction count is the whole box's bytes, in bounds or not. A swizzled box
  is placed at the shared addresses `mma_layout.swizzle_addr` gives (16-byte chunks of the
  swizzle span XORed with address bits 7.., the same swizzle `wgmma`'s descriptors read).
- Where a copy may start (`start_problem`): the global byte address of the box's first element,
  address + c_0 x element size + sum c_i x stride_i, must be a multiple of 16, i.e. c_0 x
  element size must be (address and strides already are); negative coordinates are fine when
  aligned (-4 for f32). The GPU stops the kernel at the UTMALDG / UTMASTG with an illegal
  instruction otherwise: the driver cannot check coordinates, and the PTX ISA sections cited
  below do not state it. Evidence: on an H100 (2026-11-24) `validate/semantics/tma_record.py` stopped with an
  illegal instruction at the UTMALDG.2D of `tma_box<2>` (programs/hopper_kernels/tma_box.cu),
  whose cases then included boxes at c_0 = -5 (f32) and 20 (f16), while the TMA GEMM, whose
  coordinates are all aligned, ran; Triton issue 7385 (an illegal instruction that went with a
  box start not 16-byte aligned) and Triton's interpreter, which checks the same rule ("block
  offset start must be 16-byte aligned"). `tma_record.py` now probes it (loads whose box starts
  4- but not 8-byte and 8- but not 16-byte aligned, such a store; each in its own process), so
  the rule is checked against the GPU's own verdict (tests/programs/test_tma_box.py).

Not modelled (`unmodelled` names them; the copy refuses such a map): interleaved layouts, the
sm_100 swizzles (128B_ATOM_*), a swizzled box narrower than its swizzle span (the driver
accepts one), tf32 / ftz element types and the packed 4/6-bit types, im2col mode. The NaN of
the NaN fill is the canonical quiet NaN of the element type (all ones below the sign bit), not
yet checked on a GPU (DEVIATIONS.md).

Sources: CUDA Driver API 13.0, cuda.h `cuTensorMapEncodeTiled` (requirements, enums); PTX ISA
9.0, 5.5 "Tensors" (tiled mode, bounding box, traversal stride, out-of-bound access) and 9.7.9.27
"cp.async.bulk.tensor"; the box start's alignment: see `start_problem` above.
"""
from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

import numpy as np

# CUtensorMapDataType: code -> (name, bytes)
DTYPES = {0: ("uint8", 1), 1: ("uint16", 2), 2: ("uint32", 4), 3: ("int32", 4), 4: ("uint64", 8),
          5: ("int64", 8), 6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 9: ("bfloat16", 2),
          10: ("float32_ftz", 4), 11: ("tfloat32", 4), 12: ("tfloat32_ftz", 4)}
DTYPE_CODE = {name: code for code, (name, _) in DTYPES.items()}
FLOAT_TYPES = ("float16", "float32", "float64", "bfloat16", "float32_ftz", "tfloat32", "tfloat32_ftz")
SWIZZLES = {0: "none", 1: "32B", 2: "64B", 3: "128B", 4: "128B_atom_32B", 5: "128B_atom_32B_flip_8B",
            6: "128B_atom_64B"}
SWIZZLE_CODE = {name: code for code, name in SWIZZLES.items()}
SWIZZLE_BYTES = {"32B": 32, "64B": 64, "128B": 128}
INTERLEAVES = {0: "none", 1: "16B", 2: "32B"}
INTERLEAVE_CODE = {name: code for code, name in INTERLEAVES.items()}
OOB_FILLS = {0: "zero", 1: "nan"}
OOB_CODE = {name: code for code, name in OOB_FILLS.items()}
L2_PROMOTIONS = {0: "none", 1: "64B", 2: "128B", 3: "256B"}
L2_CODE = {name: code for code, name in L2_PROMOTIONS.items()}
# the out-of-bounds NaN fill, measured on an H100: float16 0x7FF7 (data/measurements/tma_h100.npz, box
# oob_nan_f16), float32 0x7FF77FF7, the f16 pattern in both halves (tma_h100_rules.npz,
# f32_load_neg_inner_nan); bfloat16 and float64 not measured (the canonical quiet NaN)
NAN_BITS = {"float16": 0x7FF7, "bfloat16": 0x7FFF, "float32": 0x7FF77FF7, "float64": 0x7FFFFFFFFFFFFFFF}

MAGIC = b"gsTM"
VERSION = 1
MAP_BYTES = 128
CHUNK_BYTES = 16                  # a box row is whole pieces of this many bytes (global and shared alike)
MAX_RANK = 5
_HEAD = struct.Struct("<4sBBBBBBBxQ")           # magic, version, rank, dtype, interleave, swizzle, l2, oob; address
_BODY = struct.Struct("<5Q4Q5I5H")              # dims, strides, box, element strides


@dataclass(frozen=True)
class TensorMapFields:
    """The arguments of cuTensorMapEncodeTiled, innermost dimension first (module docstring)."""
    dtype: int                       # DTYPES code
    address: int                     # global byte address of element (0, ..., 0)
    dims: tuple[int, ...]            # elements per dimension
    strides: tuple[int, ...]         # bytes between consecutive indices of dimensions 1 .. rank - 1
    box: tuple[int, ...]             # box elements per dimension (before traversal strides)
    element_strides: tuple[int, ...]
    interleave: int = 0
    swizzle: int = 0
    l2_promotion: int = 0
    oob_fill: int = 0

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype][1] if self.dtype in DTYPES else 0

    @property
    def dtype_name(self) -> str:
        return DTYPES.get(self.dtype, (f"code {self.dtype}", 0))[0]

    @property
    def swizzle_name(self) -> str:
        return SWIZZLES.get(self.swizzle, f"code {self.swizzle}")


def encode(f: TensorMapFields) -> bytes:
    """The 128 bytes gpusim passes for map `f` (module docstring); fields must fit their widths."""
    r = f.rank

    def pad(t, n, top):              # out-of-range values stay out of range (and are reported where used)
        return tuple(min(max(int(v), 0), top) for v in t) + (0,) * (n - len(t))
    raw = _HEAD.pack(MAGIC, VERSION, r, f.dtype, f.interleave, f.swizzle, f.l2_promotion, f.oob_fill, f.address)
    raw += _BODY.pack(*pad(f.dims, 5, 2**64 - 1), *pad(f.strides, 4, 2**64 - 1), *pad(f.box, 5, 2**32 - 1),
                      *pad(f.element_strides, 5, 2**16 - 1))
    return raw + bytes(MAP_BYTES - len(raw))


def decode(raw: bytes) -> TensorMapFields:
    """The fields of 128 map bytes; ValueError saying why when they are not a map gpusim encoded."""
    if len(raw) < _HEAD.size + _BODY.size or raw[:4] != MAGIC:
        raise ValueError("these 128 bytes are not a tensor map (pass a gpusim.TensorMap argument for a CUtensorMap "
                         "parameter; gpusim encodes the map itself)")
    magic, version, rank, dtype, inter, swz, l2, oob, addr = _HEAD.unpack_from(raw, 0)
    if version != VERSION or not 1 <= rank <= MAX_RANK:
        raise ValueError(f"tensor map bytes of version {version}, rank {rank}: not a map this gpusim encoded")
    vals = _BODY.unpack_from(raw, _HEAD.size)
    dims, strides, box, es = vals[0:5], vals[5:9], vals[9:14], vals[14:19]
    return TensorMapFields(dtype, addr, dims[:rank], strides[:rank - 1], box[:rank], es[:rank], inter, swz, l2, oob)


def problems(f: TensorMapFields) -> str | None:
    """The first cuTensorMapEncodeTiled requirement `f` breaks (module docstring), or None."""
    r = f.rank
    if f.dtype not in DTYPES:
        return f"element type code {f.dtype} is not a CUtensorMapDataType"
    if not 1 <= r <= MAX_RANK:
        return f"rank {r} is outside 1..5"
    if len(f.strides) != r - 1 or len(f.box) != r or len(f.element_strides) != r:
        return f"a rank-{r} map needs {r} sizes, {r - 1} strides, {r} box sizes and {r} traversal strides"
    if f.interleave not in INTERLEAVES or f.swizzle not in SWIZZLES or f.oob_fill not in OOB_FILLS \
            or f.l2_promotion not in L2_PROMOTIONS:
        return "an interleave, swizzle, L2 promotion or OOB fill code outside its enum"
    if f.interleave and r < 3:
        return f"an interleaved map needs rank >= 3, this one has rank {r}"
    align = 32 if INTERLEAVES[f.interleave] == "32B" else 16
    if f.address % align:
        return f"global address {f.address:#x} is not {align}-byte aligned"
    for i, d in enumerate(f.dims):
        if not 1 <= d <= 1 << 31:
            return f"size {d} of dimension {i} is outside 1..2^31"
    smul = 32 if INTERLEAVES[f.interleave] == "32B" else 16
    for i, s in enumerate(f.strides):
        if s % smul or not 0 < s < 1 << 40:
            return f"stride {s} bytes of dimension {i + 1} is not a positive multiple of {smul} below 2^40"
    esz = f.elem_bytes
    for i, b in enumerate(f.box):
        if not 1 <= b <= 256:
            return f"box size {b} of dimension {i} is outside 1..256"
    if INTERLEAVES[f.interleave] == "none" and (f.box[0] * esz) % 16:
        return f"the box's inner dimension is {f.box[0] * esz} bytes ({f.box[0]} x {esz}), not a multiple of 16"
    for i, e in enumerate(f.element_strides):
        if not 1 <= e <= 8:
            return f"traversal stride {e} of dimension {i} is outside 1..8"
    sw = SWIZZLES[f.swizzle]
    if INTERLEAVES[f.interleave] == "none" and sw != "none":
        span = SWIZZLE_BYTES.get(sw, 128)
        if f.box[0] * esz > span:
            return f"the box's inner dimension is {f.box[0] * esz} bytes, wider than the {sw} swizzle span"
    if INTERLEAVES[f.interleave] == "32B" and sw != "32B":
        return "a 32B-interleaved map needs the 32B swizzle"
    if OOB_FILLS[f.oob_fill] == "nan" and f.dtype_name not in FLOAT_TYPES:
        return f"the NaN out-of-bounds fill needs a floating-point element type, not {f.dtype_name}"
    return None


def unmodelled(f: TensorMapFields) -> str | None:
    """What of a valid map gpusim does not model (module docstring), or None."""
    if INTERLEAVES[f.interleave] != "none":
        return f"interleaved layouts ({INTERLEAVES[f.interleave]})"
    sw = SWIZZLES[f.swizzle]
    if sw not in ("none", "32B", "64B", "128B"):
        return f"the {sw} swizzle (sm_100)"
    if sw != "none" and f.box[0] * f.elem_bytes != SWIZZLE_BYTES[sw]:
        return (f"a {sw}-swizzled box whose inner dimension is {f.box[0] * f.elem_bytes} bytes, narrower than the "
                "swizzle span")
    if f.dtype_name in ("float32_ftz", "tfloat32", "tfloat32_ftz"):
        return f"element type {f.dtype_name}"
    return None


def box_shape(f: TensorMapFields) -> tuple[int, ...]:
    """Elements the box holds along each dimension (innermost first)."""
    return (f.box[0],) + tuple(-(-b // e) for b, e in zip(f.box[1:], f.element_strides[1:]))


def box_bytes(f: TensorMapFields) -> int:
    """Bytes of the box in shared memory (a load's transaction count)."""
    return int(np.prod(box_shape(f))) * f.elem_bytes


def box_elements(f: TensorMapFields, coords) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(global byte offset from the map's address, in-bounds flag, byte offset in the packed box)
    of every element of the box whose first element is at `coords`, in box order."""
    shape = box_shape(f)
    esz = f.elem_bytes
    idx = np.indices(shape[::-1]).reshape(len(shape), -1)[::-1].astype(np.int64)   # k_0 fastest
    steps = (1,) + tuple(f.element_strides[1:])
    glob = np.zeros(idx.shape[1], np.int64)
    ok = np.ones(idx.shape[1], bool)
    for i in range(len(shape)):
        c = int(coords[i]) + idx[i] * steps[i]
        ok &= (c >= 0) & (c < f.dims[i])
        glob += c * (esz if i == 0 else f.strides[i - 1])
    return glob, ok, np.arange(idx.shape[1], dtype=np.int64) * esz


@functools.lru_cache(maxsize=256)
def _box_chunk_pattern(f: TensorMapFields) -> tuple[np.ndarray, np.ndarray] | None:
    """(global byte offsets relative to the box's first element, byte offsets in the packed box)
    of the box's 16-byte pieces, or None where a box row is not whole 16-byte pieces."""
    shape = box_shape(f)
    row = shape[0] * f.elem_bytes
    if row % CHUNK_BYTES:
        return None
    per_row = row // CHUNK_BYTES
    idx = np.indices(shape[:0:-1] + (per_row,)).reshape(len(shape), -1)[::-1].astype(np.int64)   # piece fastest
    glob = idx[0] * CHUNK_BYTES
    for i in range(1, len(shape)):
        glob = glob + idx[i] * f.element_strides[i] * f.strides[i - 1]
    glob.setflags(write=False)
    box = np.arange(idx.shape[1], dtype=np.int64) * CHUNK_BYTES
    box.setflags(write=False)
    return glob, box


def box_chunks(f: TensorMapFields, coords) -> tuple[np.ndarray, np.ndarray] | None:
    """`box_elements` in 16-byte pieces where every element of the box at `coords` is inside the
    tensor and a box row is whole pieces: (global byte offsets from the map's address, byte offsets
    in the packed box) of each piece, in box order; None otherwise. The same bytes as
    `box_elements`: a row's elements are contiguous in global memory and in the box."""
    shape = box_shape(f)
    for i, n in enumerate(shape):
        c = int(coords[i])
        step = 1 if i == 0 else f.element_strides[i]
        if c < 0 or c + (n - 1) * step >= f.dims[i]:
            return None
    pat = _box_chunk_pattern(f)
    if pat is None:
        return None
    start = int(coords[0]) * f.elem_bytes + sum(int(coords[i]) * f.strides[i - 1] for i in range(1, len(shape)))
    return start + pat[0], pat[1]


def start_problem(f: TensorMapFields, coords) -> str | None:
    """Why a tiled copy of map `f` at `coords` stops the GPU (module docstring: the box's first
    element must sit at a 16-byte aligned global address), or None."""
    lead = int(coords[0]) * f.elem_bytes
    if lead % 16 == 0:
        return None
    addr = f.address + lead + sum(int(c) * s for c, s in zip(coords[1:], f.strides))
    return (f"the box starts at global address {addr:#x}, byte {lead} of its row (coordinate {int(coords[0])} x "
            f"{f.elem_bytes} bytes), not a multiple of 16: the GPU stops the kernel here")


def store_problem(f: TensorMapFields, coords) -> str | None:
    """Why a tiled store (shared -> global) of map `f` at `coords` stops the GPU, or None: a
    store's box may not start before the tensor in any dimension (a load's may, its elements out
    of bounds filled). Measured on an H100 (data/measurements/tma_h100_rules.json, 2026-11-24: every
    store with a negative coordinate, innermost or outer, rank 1 to 3, element types of 1 to 8
    bytes, faults with an illegal instruction; the same boxes load, and stores reaching past the
    tensor's end run); not stated in the PTX ISA or cuda.h."""
    neg = [i for i, c in enumerate(coords) if int(c) < 0]
    if not neg:
        return None
    return (f"the box of a store starts at coordinate {int(coords[neg[0]])} of dimension {neg[0]}, before the "
            "tensor: the GPU stops the kernel here (a load may start there)")


def fill_bits(f: TensorMapFields) -> int:
    """The bit pattern an out-of-bounds element is loaded as."""
    return NAN_BITS[f.dtype_name] if OOB_FILLS[f.oob_fill] == "nan" else 0
