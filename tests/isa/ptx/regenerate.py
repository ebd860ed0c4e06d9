"""Regenerate the PTX fixtures of `tests/isa` from the Numba kernels below.

Run from the repository root (CPU only; no GPU needed):

    python tests/isa/ptx/regenerate.py

Each kernel is compiled with `numba.cuda.compile_ptx(..., cc=(9, 0), lineinfo=True)`
and written to `tests/isa/ptx/<name>.ptx`. The `.file` directive NVVM emits names
this script's absolute path; it is rewritten to `tests/isa/ptx/regenerate.py` so
the fixtures do not depend on where the checkout lives (paths into the Python
installation become `site-packages/...`). The tests read the
committed files, so they do not need Numba and do not change when Numba does;
rerun this script after upgrading Numba and review the diff. (Numba writes the
`.extern .func` prototypes and `.common` globals of half_precision.ptx in an order
that varies from run to run; nothing in the tests depends on that order.)
"""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
from numba import cuda, float32, int32, types

HERE = Path(__file__).resolve().parent


class _FakeDevice:
    """Numba compiles a called device function for `get_current_device()`'s compute
    capability, which needs a driver; on a CPU-only machine pretend to be sm_90."""
    compute_capability = (9, 0)


def _patch_current_device() -> None:
    import numba.cuda.dispatcher as dispatcher
    dispatcher.get_current_device = lambda: _FakeDevice()


_patch_current_device()

f32a = types.float32[::1]
f64a = types.float64[::1]
i32a = types.int32[::1]
u32a = types.uint32[::1]
f16a = types.float16[::1]
i32 = types.int32

CONST_TABLE = np.arange(16, dtype=np.float32) * 0.5


# ----------------------------------------------------------------------------- kernels
def saxpy(out, x, y, a, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def loop_sum(out, x, n):
    """A counted loop per thread."""
    i = cuda.grid(1)
    acc = 0.0
    for k in range(n):
        acc += x[(i + k) % n]
    out[i] = acc


def if_else(out, x, n):
    i = cuda.grid(1)
    if i < n:
        v = x[i]
        if v > 0:
            out[i] = v * 2
        else:
            out[i] = -v


def nested_divergence(out, x, n):
    i = cuda.grid(1)
    if i >= n:
        return
    v = x[i]
    if i % 2 == 0:
        if i % 4 == 0:
            v = v + 1
        else:
            v = v * 3
    else:
        if v > 10:
            v = v - 10
    out[i] = v


def early_return(out, x, n):
    i = cuda.grid(1)
    if i >= n:
        return
    if x[i] < 0:
        out[i] = 0
        return
    out[i] = x[i] + 1


def while_break(out, x, n):
    """Collatz steps with a break on a cap."""
    i = cuda.grid(1)
    if i < n:
        v = x[i]
        steps = 0
        while v != 1:
            if v % 2 == 0:
                v = v // 2
            else:
                v = 3 * v + 1
            steps += 1
            if steps > 1000:
                break
        out[i] = steps


def reduction(out, x):
    """Shared-memory tree reduction with the interleaved `t % (2*stride)` test."""
    sm = cuda.shared.array(256, dtype=float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    sm[t] = x[i]
    cuda.syncthreads()
    stride = 1
    while stride < cuda.blockDim.x:
        if t % (2 * stride) == 0:
            sm[t] += sm[t + stride]
        cuda.syncthreads()
        stride *= 2
    if t == 0:
        out[cuda.blockIdx.x] = sm[0]


def local_array(out, x, n):
    i = cuda.grid(1)
    buf = cuda.local.array(8, dtype=float32)
    for k in range(8):
        buf[k] = x[(i * 8 + k) % n]
    acc = float32(0)
    for k in range(8):
        acc += buf[(k * 3 + i) % 8]
    out[i] = acc


def const_array(out, n):
    c = cuda.const.array_like(CONST_TABLE)
    i = cuda.grid(1)
    if i < n:
        out[i] = c[i % 16]


def atomics(counts, x, total, n):
    i = cuda.grid(1)
    if i < n:
        cuda.atomic.add(counts, x[i] % 16, 1)
        cuda.atomic.max(counts, 16, x[i])
        cuda.atomic.cas(counts, 17, 0, i)
        cuda.atomic.add(total, 0, float32(x[i]))
        cuda.threadfence()


def shfl_vote(out, x):
    i = cuda.grid(1)
    v = x[i]
    for off in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
    b = cuda.ballot_sync(0xFFFFFFFF, x[i] > 0)
    a = cuda.all_sync(0xFFFFFFFF, x[i] > -5)
    u = cuda.shfl_xor_sync(0xFFFFFFFF, v, 3)
    w = cuda.shfl_sync(0xFFFFFFFF, u, 0)
    out[i] = v + b + a + w + cuda.laneid


def half_precision(out, x, y):
    i = cuda.grid(1)
    out[i] = cuda.fp16.hfma(x[i], y[i], x[i]) + cuda.fp16.hmul(x[i], y[i])


def double_precision(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i] * 0.1 + 3.141592653589793 / (x[i] + 1.0)


def math_funcs(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = math.sin(x[i]) + math.exp(x[i]) + math.sqrt(abs(x[i]))


def math_f64(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = math.log(x[i] + 1.0) * math.pow(x[i], 0.75) + math.tanh(x[i])


def arrays_2d_3d(out, a, b):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        s = 0.0
        for k in range(b.shape[2]):
            s += b[i, j, k]
        out[i, j] = a[i, j] + s


@cuda.jit(device=True)
def dev_poly(x, y):
    return x * x + 2 * y


def device_call(out, x, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = dev_poly(x[i], x[(i + 1) % n])


@cuda.jit(device=True)
def dev_fib(k):
    if k < 2:
        return k
    return dev_fib(k - 1) + dev_fib(k - 2)


def recursive_call(out, n):
    """A self-recursive device function cannot be inlined: NVVM emits a `.func`
    and `call` sequences with `{ }` scopes and `.param` passing."""
    i = cuda.grid(1)
    if i < n:
        out[i] = dev_fib(i % 12)


def syncthreads_count(out, x):
    t = cuda.threadIdx.x
    c = cuda.syncthreads_count(int32(x[t] > 0))
    a = cuda.syncthreads_and(int32(x[t] > -1))
    o = cuda.syncthreads_or(int32(x[t] > 100))
    out[t] = c + a + o


def dynamic_shared(out, x):
    sm = cuda.shared.array(0, dtype=float32)
    t = cuda.threadIdx.x
    sm[t] = x[t]
    cuda.syncthreads()
    out[t] = sm[cuda.blockDim.x - 1 - t]


def special_regs(out):
    t = cuda.threadIdx.z * 100 + cuda.blockIdx.y * 10 + cuda.gridDim.z
    out[cuda.grid(1)] = t + cuda.laneid + cuda.warpsize


# name -> (function, signature, extra compile_ptx keyword arguments)
KERNELS = {
    "saxpy": (saxpy, (f32a, f32a, f32a, types.float32, i32), {}),
    "loop_sum": (loop_sum, (f32a, f32a, i32), {}),
    "if_else": (if_else, (f32a, f32a, i32), {}),
    "nested_divergence": (nested_divergence, (i32a, i32a, i32), {}),
    "early_return": (early_return, (i32a, i32a, i32), {}),
    "while_break": (while_break, (i32a, i32a, i32), {}),
    "reduction": (reduction, (f32a, f32a), {"launch_bounds": (256,)}),
    "local_array": (local_array, (f32a, f32a, i32), {}),
    "const_array": (const_array, (f32a, i32), {}),
    "atomics": (atomics, (i32a, i32a, f32a, i32), {}),
    "shfl_vote": (shfl_vote, (i32a, i32a), {}),
    "half_precision": (half_precision, (f16a, f16a, f16a), {}),
    "double_precision": (double_precision, (f64a, f64a, i32), {}),
    "math_funcs": (math_funcs, (f32a, f32a, i32), {}),
    "math_f64": (math_f64, (f64a, f64a, i32), {}),
    "arrays_2d_3d": (arrays_2d_3d, (types.float64[:, ::1], types.float64[:, ::1],
                                    types.float64[:, :, ::1]), {}),
    "device_call": (device_call, (f32a, f32a, i32), {}),
    "recursive_call": (recursive_call, (i32a, i32), {}),
    "syncthreads_count": (syncthreads_count, (i32a, i32a), {}),
    "dynamic_shared": (dynamic_shared, (f32a, f32a), {}),
    "special_regs": (special_regs, (i32a,), {}),
}


def compile_one(name: str) -> str:
    fn, sig, extra = KERNELS[name]
    ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0), lineinfo=True, **extra)
    ptx = ptx.replace(f'"{Path(__file__).resolve()}"', '"tests/isa/ptx/regenerate.py"')
    return re.sub(r'"[^"]*/site-packages/', '"site-packages/', ptx)


def write_inventory() -> None:
    """INVENTORY.txt: every distinct `opcode.suffixes` mnemonic in the fixtures, with
    how many times it occurs (all fixtures, kernels and functions together)."""
    from collections import Counter
    sys.path.insert(0, str(HERE.parents[2]))
    from isa.parser import parse
    counts: Counter[str] = Counter()
    for path in sorted(HERE.glob("*.ptx")):
        prog = parse(path.read_text())
        for k in (*prog.kernels.values(), *prog.functions.values()):
            counts.update(i.mnemonic for i in k.instructions)
    lines = ["# Distinct PTX mnemonics (opcode.suffixes) in tests/isa/ptx/*.ptx, with their",
             "# number of occurrences. Written by regenerate.py; checked by test_parser.py.",
             *(f"{m}\t{n}" for m, n in sorted(counts.items()))]
    (HERE / "INVENTORY.txt").write_text("\n".join(lines) + "\n")
    print(f"INVENTORY.txt: {len(counts)} mnemonics")


def main() -> None:
    for name in KERNELS:
        text = compile_one(name)
        (HERE / f"{name}.ptx").write_text(text)
        print(f"{name}.ptx: {text.count(chr(10))} lines")
    write_inventory()


if __name__ == "__main__":
    main()
