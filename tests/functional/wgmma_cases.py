"""Test-only: run recorded wgmma cases of data/measurements/tensor_wgmma_h200.npz through the PTX
kernel `mma_kernels.wgmma_kernel` on the functional core, with the shared memory the probe gave
them (validate/semantics/tensor_cu/numerics.cu: the image, then zeros up to
min(max(4 image, 64 KiB), 200 KiB), plus the 1 KiB alignment slack of its allocation)."""
from __future__ import annotations

import numpy as np

from gpusim.errors import MemoryAccessError
from isa.semantics import mma_layout as L
from isa.semantics import wgmma as W
from mma_kernels import wgmma_kernel
from ptx_harness import run_ptx
from validate.semantics.tensor_numerics import _stage_layouts, wgmma_image

FAULT = 0xFFFFFFFF      # what the probe left in D when a case's kernel faulted


def imms(f) -> str:
    """The immediate operands after scale-d the probe used: scale 1, 1 and the form's transposes."""
    if not f.is_float:
        return ""
    t = ", 1, 1"
    if f.atype in ("f16", "bf16"):
        t += f", {f.trans_b}" if f.a_regs else f", {f.trans_a}, {f.trans_b}"
    return t


def run_cases(f, A, B, C, sd, lays, core="reference", imm=None):
    """(D registers (cases, 128, nacc), executor); lays[c] = (layout of A, layout of B)."""
    imgs, descs = [], []
    for c in range(len(A)):
        img, da, db = wgmma_image(f, A[c], B[c], *lays[c])
        imgs.append(img)
        descs.append((da, db, int(sd[c])))
    size = max(len(x) for x in imgs)
    alloc = max(min(max(4 * size, 65536), 200 * 1024), size) + 1024
    image = np.zeros((len(A), alloc), np.uint8)
    for c, x in enumerate(imgs):
        image[c, :len(x)] = x
    ab, cb = W.ELEM_BITS[f.atype], W.ACC_BITS[f.dtype]
    rc = L.pack(C, L.wgmma_acc_map(f.n, cb), cb)
    ra = L.pack(A, L.wgmma_a_regs_map(f.k, ab), ab) if f.a_regs else np.zeros((len(A), 128, 4), np.uint32)
    text = wgmma_kernel(f.ptx, f.nacc, f.dtype, f.a_regs, imms(f) if imm is None else imm, alloc)
    (_, _, _, _, rd), x = run_ptx(text, "wg_k", (len(A), 1, 1), (128, 1, 1),
                                  [image, np.array(descs, np.uint64), ra, rc, np.zeros_like(rc)], core=core)
    return rd, x


def recorded(data, f, cases=slice(None), core="reference"):
    """D registers of form f's recorded cases (each through the layout the probe recorded)."""
    A, B, C, sd = (data[f"{f.name}:{k}"][cases] for k in ("A", "B", "C", "scale_d"))
    lay = tuple(tuple(v) for v in data[f"{f.name}:layout"])
    return run_cases(f, A, B, C, sd, [lay] * len(A), core)


def layout_stage(data, f, core="reference") -> np.ndarray:
    """D registers (8, 128, nacc) of the probe's layout stage for form f: the 8 candidate
    descriptors together, and one by one where that faults (a faulting one reads FAULT), as
    the probe ran them."""
    lays = _stage_layouts(f, ("128B", "lbo_k"))
    A, B, C = (np.repeat(data[f"layout:{f.name}:{k}"][None], len(lays), 0) for k in "ABC")
    one = np.ones(len(lays), np.int64)
    try:
        return run_cases(f, A, B, C, one, lays, core)[0]
    except MemoryAccessError:
        out = []
        for c in range(len(lays)):
            try:
                out.append(run_cases(f, A[c:c + 1], B[c:c + 1], C[c:c + 1], one[:1], lays[c:c + 1], core)[0][0])
            except MemoryAccessError:
                out.append(np.full((128, f.nacc), FAULT, np.uint32))
        return np.stack(out)
