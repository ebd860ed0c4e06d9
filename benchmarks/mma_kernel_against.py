"""The tensor-core pass (`isa.semantics.mma_kernel._kernel`) against its source at another git
revision, in one process: the same captured calls, old and new alternating, and the same random
calls, bit for bit.

    python benchmarks/mma_kernel_against.py REV [--programs matmul flash_attention] [--rounds 3000]
                                                [--random 300]

The calls are the `wgmma` products with both operands in shared memory
(`wgmma_operands.mma_taken`) of one launch of each program's default size (programs/triton_kernels,
gpu h100): their A and B bits, accumulators, places and kernel plan. REV's `mma_kernel.py` is
loaded from `git show REV:isa/semantics/mma_kernel.py` as a module of its own; both kernels are
called through the same wrapper (`mma_batch._packed`'s unpacking of the plan). Printed per call
shape: the median microseconds a call of each (`--rounds` calls each, alternating), their ratio;
and how many of `--random` calls per shape on random operands (f16 bit patterns: standard normal
values, any pattern, zeros, an infinity now and then; C random f32 over 2^-30..2^30, a tenth
zero; scale-d false for a fifth of the warps) gave different bits (0 expected).

Session 53, `python benchmarks/mma_kernel_against.py 40587e4` at 9364f84 (since: the 16-k block
loops): 0.808 (32 columns, the attention default: 19.4 -> 15.7 us) and 0.887 (64, the matmul
default: 28.9 -> 25.7 us) of the time a call, no call's bits different.
"""
from __future__ import annotations

import argparse
import copy
import importlib
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gpusim  # noqa: E402  (this checkout's, after the path)
from gpusim.functional import wgmma_operands as WOP  # noqa: E402
from gpusim.functional import wgmma_ops as WO  # noqa: E402
from isa.semantics import mma_batch as MB  # noqa: E402
from isa.semantics import mma_kernel as MK  # noqa: E402


def wrapper(kernel):
    """`mma_batch._packed` around `kernel` (the plan's tables and scalars unpacked as it does)."""
    man, mask, emin, model = MB.P_MAN, MB.P_MASK, MB.P_EMIN, MB.P_MODEL

    @njit(nogil=True)
    def packed(a, bt, bidx, cflat, cpos, tpos, zc, oflat, fl, i32, i64, p):
        asplit = (p[man], fl[p[2]:p[3]], i64[p[10]:p[11]], i32[p[7]:p[8]])
        bsplit = (p[man + 1], fl[p[3]:p[4]], i64[p[11]:p[12]], i32[p[8]:p[9]])
        m = model
        kernel(a, bt, bidx, cflat, cpos, tpos, fl[p[0]:p[1]], i32[p[5]:p[6]], fl[p[1]:p[2]], i32[p[6]:p[7]],
               p[mask], p[mask + 1], 0, 0, p[emin], p[emin + 1], asplit, bsplit, i64[p[12]:p[13]], zc, oflat,
               p[m], p[m + 1], p[m + 2] != 0, p[m + 3] != 0, p[m + 4] != 0, p[m + 5] != 0, p[m + 6] != 0, p[m + 7],
               p[m + 8] != 0, p[m + 9] != 0, p[m + 10], p[m + 11], p[m + 12], p[m + 13], p[m + 14], p[m + 15] != 0)
    return packed


def kernel_at(rev: str, where: Path):
    """`_kernel` of `isa/semantics/mma_kernel.py` as it was at git revision `rev`."""
    src = subprocess.run(["git", "show", f"{rev}:isa/semantics/mma_kernel.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    path = where / "mma_kernel_at_rev.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("mma_kernel_at_rev", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._kernel


def captured(program: str) -> tuple:
    """(A bits, B bits, B index, accumulators, places, warps' firsts, scale-d false, plan) of the
    first `mma_taken` call of one launch of `program`'s default size."""
    calls = []
    real = WO.mma_taken

    def keep(*a):
        calls.append(copy.deepcopy(a))
        return real(*a)
    WO.mma_taken = keep
    try:
        c = importlib.import_module("programs.triton_kernels." + program).PROGRAM.case("default", seed=0)
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
    finally:
        WO.mma_taken = real
    if not calls:
        raise SystemExit(f"{program}: no wgmma with both operands in shared memory")
    smem, b_at, bb, a_at, ab, _, bidx, acc, cpos, tpos, zc, plan, _, _ = calls[0]
    return WOP.taken(smem, a_at, ab), WOP.taken(smem, b_at, bb), bidx, acc, cpos, tpos, zc, plan


def random_bits(rng, shape) -> np.ndarray:
    """f16 bit patterns: mostly standard normal values, some any pattern, some zeros, infinities now and then."""
    x = rng.integers(0, 1 << 16, shape).astype(np.uint16)
    v = rng.standard_normal(shape).astype(np.float16).view(np.uint16)
    kind = rng.random(shape)
    x = np.where(kind < 0.6, v, x)
    x = np.where(kind > 0.97, 0, x)
    x = np.where((x & 0x7C00) == 0x7C00, v, x)
    if rng.random() < 0.2:
        x[tuple(rng.integers(0, s) for s in shape)] = 0x7C00
    return x


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="the git revision whose mma_kernel.py to compare with this checkout's")
    ap.add_argument("--programs", nargs="*", default=["flash_attention", "matmul"])
    ap.add_argument("--rounds", type=int, default=3000)
    ap.add_argument("--random", type=int, default=300)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old, new = wrapper(kernel_at(a.rev, Path(tmp))), wrapper(MK._kernel)
        rng = np.random.default_rng(1)
        for program in a.programs:
            A, B, bidx, acc, cpos, tpos, zc, (fl, i32, i64, p, _) = captured(program)
            differ = 0
            for _ in range(a.random):
                a2, b2 = random_bits(rng, A.shape), random_bits(rng, B.shape)
                c = (rng.standard_normal(acc.shape) * 2.0 ** rng.integers(-30, 30, acc.shape)).astype(np.float32)
                c = np.where(rng.random(acc.shape) < 0.1, np.float32(0), c).view(np.uint32)
                z = rng.random(zc.shape) < 0.2
                c1, c2 = c.copy(), c.copy()
                old(a2, b2, bidx, c1, cpos, tpos, z, c1, fl, i32, i64, p)
                new(a2, b2, bidx, c2, cpos, tpos, z, c2, fl, i32, i64, p)
                differ += not np.array_equal(c1, c2)
            times = {old: [], new: []}
            for r in range(a.rounds):
                for f in (old, new) if r % 2 else (new, old):
                    c = acc.copy()
                    t = time.perf_counter()
                    f(A, B, bidx, c, cpos, tpos, zc, c, fl, i32, i64, p)
                    times[f].append(time.perf_counter() - t)
            mo, mn = (statistics.median(times[f]) * 1e6 for f in (old, new))
            print(f"{program}: A {A.shape} B {B.shape}: {a.rev} {mo:.2f} us a call, this checkout {mn:.2f} us "
                  f"({mn / mo:.3f}); random calls with different bits: {differ} of {a.random}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
