"""The L2 atomic units' hash against the placement probes (issue 24, docs/mechanisms_24.md
section 8): the kernels of `validate/atomic_banks_probe.py` (and of `validate/atomic_units_probe.py`'s
`sets` part, where its data exist) through gpusim with their bins at the measured offsets, beside
the H200's times.

    python benchmarks/atomic_units_24.py [--preset h200] [--out benchmarks/results/atomic_units_h200.json]

The probes ran with unlocked clocks (the banks probe's 256 int bins at offset 512 took 166 us
where the same kernel in the mechanism suite, measured under Nsight at 1979 MHz, took 135 us),
so each row is also given relative to its shape's offset-0 time: the hash decides the pattern
over the offsets, the clock scales it. Both probes place their bins in one buffer that the
driver put at a 2-MiB boundary (`buffer_mod2MiB` 0), as gpusim's heap puts its first allocation.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gpusim  # noqa: E402
from gpusim.timing.engine import TimingOptions  # noqa: E402
from validate import atomic_banks_probe as banks  # noqa: E402

# (shape, offsets): every offset where the banks probe's times move, a few elsewhere
BANKS = [(s, tuple(range(0, 4096, 256))) for s in ("i32_b256", "i32_b64_two_granules", "i32_b2048")] + \
        [(s, (0, 512)) for s in ("i32_b256_ret", "f32_b256", "i32_b32_s32B", "i32_b64_one_bank", "i32_b64_two_banks")]


# gpusim's heap puts a numba kernel's module global (NumbaEnv, 8 B) first and the first array 512 B
# further (gpusim/functional/memory.py: 512-B alignment); the probe's buffer was at a 2-MiB boundary
# on the GPU, so the bins go 2 MiB - 512 B further into the (5-MiB) buffer here to sit at the
# measured offset modulo 2 MiB
MODEL_FIRST_ARRAY_MOD_2MIB = 512


def predict_banks(spec, shape: str, off: int) -> float:
    dt, ret, bins, lo, skip, shift = banks.SHAPES[shape]
    red, atom = banks.K[dt]
    np_dt = np.int32 if dt == "i32" else np.float32
    buf = np.zeros(banks.WORDS, np_dt)
    off = off + (2 << 20) - MODEL_FIRST_ARRAY_MOD_2MIB
    assert off + 4 * (bins << shift) * (1 << skip) <= 4 * banks.WORDS
    scal = (np.uint32(off // 4), np.uint32(banks.ITERS), np.uint32(bins - 1), np.uint32(lo), np.uint32(skip),
            np.uint32(shift))
    args = (buf, np.zeros(banks.BLOCKS * banks.THREADS, np_dt)) + scal if ret else (buf,) + scal
    r = gpusim.launch(atom if ret else red, (banks.BLOCKS,), (banks.THREADS,), args, gpu=spec, timing=True,
                      timing_options=TimingOptions(mode="auto", functional="sampled"))
    return r.metrics["gpu__time_duration.sum"] / 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="h200")
    ap.add_argument("--data", type=Path, default=ROOT / "validate" / "data" / "atomic_banks_h200.json")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", default="", help="substring of the shape names")
    ap.add_argument("--masks", help="try l2.atomic_unit_hash_masks: hex address masks, comma-separated")
    ap.add_argument("--granule", type=int, help="try l2.atomic_unit_granule_bytes")
    ap.add_argument("--offsets", help="comma-separated offsets instead of each shape's own")
    args = ap.parse_args(argv)
    measured = json.loads(args.data.read_text())["times"]
    spec = gpusim.specs.get(args.preset)
    if args.masks is not None or args.granule:
        kw = {"atomic_unit_hash_masks": tuple(int(m, 16) for m in args.masks.split(",") if m) if args.masks else ()}
        if args.granule:
            kw["atomic_unit_granule_bytes"] = args.granule
        spec = dataclasses.replace(spec, l2=dataclasses.replace(spec.l2, **kw))
    rows = []
    t0 = time.perf_counter()
    for shape, offsets in BANKS:
        if args.only not in shape:
            continue
        if args.offsets:
            offsets = tuple(sorted({0} | {int(o) for o in args.offsets.split(",")}))
        pred = {off: predict_banks(spec, shape, off) for off in offsets}
        for off in offsets:
            m = measured[shape][str(off)]
            rows.append({"shape": shape, "offset": off, "measured_us": round(m, 1), "predicted_us": round(pred[off], 1),
                         "measured_rel": round(m / measured[shape]["0"], 3), "predicted_rel": round(pred[off] / pred[0], 3)})
            r = rows[-1]
            print(f"{shape:24s} {off:5d}  measured {r['measured_us']:7.1f} us ({r['measured_rel']:.2f})  "
                  f"predicted {r['predicted_us']:7.1f} us ({r['predicted_rel']:.2f})", flush=True)
    rel = [abs(r["predicted_rel"] / r["measured_rel"] - 1) for r in rows]
    summary = {"rows": len(rows), "mean_abs_rel_error_pct": round(100 * float(np.mean(rel)), 1),
               "max_abs_rel_error_pct": round(100 * float(np.max(rel)), 1), "wall_s": round(time.perf_counter() - t0, 1)}
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps({"command": " ".join(["python benchmarks/atomic_units_24.py"] + (argv or sys.argv[1:])),
                                        "preset": args.preset, "spec_source": spec.source, "summary": summary,
                                        "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
