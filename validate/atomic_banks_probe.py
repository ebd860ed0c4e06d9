"""Which L2 atomic mechanism makes 256 uniform int32 bins run 4 passes at a time (issue 24,
docs/mechanisms_24.md section 1): banks of the slice's atomic unit, or where the array lands.

On the H100/H200, `atomic_bins/i32_b256` (RED, 1 KiB of bins) runs 4 passes at a time while its
twins over the same 8 lines run 2: the same bins with ATOM or float adds, 32 bins one a sector
(word 0 of each), histogram_global's normal keys. gpusim models it as two 256-B banks of a
512-B granule's unit whose integer reductions share a turn when their 4-byte words differ
(`l2.atomic_unit_banks`, gpusim/timing/memory/l2_atomics.py). The other explanation is the
slice hash: the measured arrays sat at different addresses, and a hash that pairs 256-B chunks
for some addresses and not others would give the same figures. This probe decides:

- placement: the same kernels with the bins at 16 offsets (0, 256 B, ..., 3840 B, then 64 KiB
  and 1 MiB steps) inside one allocation; banks predict the same time at every offset, a hash
  predicts times that move with the offset;
- banks: 64 bins (256 B) all in one bank (`one_bank`: words 0-63) against the same 64 bins
  split over the two banks of one granule (`two_banks`: words 0-31 and 64-95) and over two
  granules (`two_granules`: words 0-31 and 128-159); banks predict two_banks = two_granules =
  half of one_bank (ints, RED), one_bank = two_banks for ATOM and float adds;
- the twins of atomic_bins at each offset: i32 RED b256, i32 ATOM b256, f32 RED b256,
  i32 RED 32 bins one a sector, i32 RED b2048 (the 16-granule case the bank rule predicts
  2x faster than measured);
- no contention: 2^17 and 2^20 bins at offset 0 (does the rate keep growing past 2^17?).

    python -m validate.atomic_banks_probe --out $OUT/atomic_banks_h200.json

CUDA events only (no Nsight), medians of 5 launches after a warm-up, 1056 x 256 threads x 4
atomics each: 218 configurations of a few ms, under 2 minutes with compilation.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from numba import cuda, float32, int32, uint32

from validate.mechanisms.common import mix32

SEED = 0x2545F491
BLOCKS, THREADS, ITERS = 1056, 256, 4
WORDS = (1 << 20) // 4 + (1 << 20)          # 1 MiB of offsets + the widest bin set (1 M int32 bins)


def _kernels(one):
    @cuda.jit
    def red(buf, base, iters, mask, lo_bits, skip, shift):
        g = uint32(cuda.grid(1))
        for r in range(iters):
            k = mix32(g, uint32(r), uint32(SEED)) & mask
            w = ((k & ((uint32(1) << lo_bits) - uint32(1))) | ((k >> lo_bits) << (lo_bits + skip))) << shift
            cuda.atomic.add(buf, base + w, one)

    @cuda.jit
    def atom(buf, old, base, iters, mask, lo_bits, skip, shift):
        g = uint32(cuda.grid(1))
        acc = one - one
        for r in range(iters):
            k = mix32(g, uint32(r), uint32(SEED)) & mask
            w = ((k & ((uint32(1) << lo_bits) - uint32(1))) | ((k >> lo_bits) << (lo_bits + skip))) << shift
            acc += cuda.atomic.add(buf, base + w, one)
        old[g] = acc

    return red, atom


K = {"i32": _kernels(int32(1)), "f32": _kernels(float32(1.0))}
# name: (dtype, returns, bins, lo_bits, skip, shift)
SHAPES = {
    "i32_b256": ("i32", False, 256, 8, 0, 0),
    "i32_b256_ret": ("i32", True, 256, 8, 0, 0),
    "f32_b256": ("f32", False, 256, 8, 0, 0),
    "i32_b32_s32B": ("i32", False, 32, 5, 0, 3),
    "i32_b2048": ("i32", False, 2048, 11, 0, 0),
    "i32_b64_one_bank": ("i32", False, 64, 6, 0, 0),
    "i32_b64_two_banks": ("i32", False, 64, 5, 1, 0),
    "i32_b64_two_granules": ("i32", False, 64, 5, 2, 0),
    "i32_b64_two_banks_ret": ("i32", True, 64, 5, 1, 0),
    "i32_b64_one_bank_ret": ("i32", True, 64, 6, 0, 0),
    "f32_b64_two_banks": ("f32", False, 64, 5, 1, 0),
    "f32_b64_one_bank": ("f32", False, 64, 6, 0, 0),
    # no contention: where the throughput of many bins stops growing (the model's is flat from
    # 2^17 bins, atomic_bins/i32_b131072 +13%; a 1 M-bin histogram of issue 24 was predicted
    # 65% too slow); offset 0 only
    "i32_b131072": ("i32", False, 1 << 17, 17, 0, 0),
    "i32_b1048576": ("i32", False, 1 << 20, 20, 0, 0),
}
UNCONTENDED = ("i32_b131072", "i32_b1048576")
OFFSETS_B = tuple(range(0, 4096, 256)) + (65536, 1 << 20)


def _time(kernel, args, reps: int = 5) -> float:
    """Median of `reps` launches of kernel[BLOCKS, THREADS](*args) after a warm-up, in us."""
    kernel[BLOCKS, THREADS](*args)
    cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = cuda.event(), cuda.event()
        a.record()
        kernel[BLOCKS, THREADS](*args)
        b.record()
        b.synchronize()
        out.append(cuda.event_elapsed_time(a, b) * 1e3)
    return float(np.median(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="", help="comma-separated subset of the shapes")
    args = ap.parse_args(argv)
    dev = cuda.get_current_device()
    bufs = {"i32": cuda.to_device(np.zeros(WORDS, np.int32)), "f32": cuda.to_device(np.zeros(WORDS, np.float32))}
    old = {"i32": cuda.device_array(BLOCKS * THREADS, np.int32), "f32": cuda.device_array(BLOCKS * THREADS, np.float32)}
    res = {"gpu": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
           "buffer_mod2MiB": {k: int(v.device_ctypes_pointer.value) % (2 << 20) for k, v in bufs.items()},
           "blocks": BLOCKS, "threads": THREADS, "iters": ITERS, "unit": "us (median of 5 launches)", "times": {}}
    shapes = [s for s in args.shapes.split(",") if s] or list(SHAPES)
    t0 = time.time()
    for name in shapes:
        dt, ret, bins, lo, skip, shift = SHAPES[name]
        red, atom = K[dt]
        row = {}
        for off in (0,) if name in UNCONTENDED else OFFSETS_B:
            base = np.uint32(off // 4)
            scal = (np.uint32(ITERS), np.uint32(bins - 1), np.uint32(lo), np.uint32(skip), np.uint32(shift))
            row[off] = _time(atom, (bufs[dt], old[dt], base) + scal) if ret else _time(red, (bufs[dt], base) + scal)
        res["times"][name] = row
        print(name, " ".join(f"{o}:{v:.1f}" for o, v in row.items()), flush=True)
    res["wall_s"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
