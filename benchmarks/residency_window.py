"""How long sampled timing takes a line to stay in the whole L2 after a touch, for the launches whose blocks
validate/tensor_timing/block_drift.py timed on the GPUs (docs/mechanisms_24.md section 43).

The sample's shared footprint (gpusim/timing/sampling/warming.py) estimates the residency window w, a share of
the kernel, from the launch's regions and the L2's capacity; times the predicted duration it is a time, to set
beside the residency time at which the GPU's own block times give the GPU's DRAM fetches of B
(`python -m validate.tensor_timing.block_drift --fetches data/measurements/block_drift_h100.json`).

    python benchmarks/residency_window.py --preset h100 [--set h100_tensor] [NAME ...]
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings

from gpusim.api import resolve_gpu
from gpusim.timing.engine import TimingEngine
from validate.datadir import DATA_DIR
from validate.predict import measurement_environment, predict

DEFAULT = ("cuda_mma_single/n4096", "cuda_mma_double/n4096", "cuda_wmma_f16/n4096", "cuda_mma_double/n8192",
           "cuda_wmma_f16/n8192")


def windows(setname: str, preset: str, names) -> list[dict]:
    data = json.loads((DATA_DIR / f"{setname}.json").read_text())
    env = measurement_environment(data)
    seen = []
    original = TimingEngine._warm_shared

    def keep(self, frac):                  # the engine's footprint, once it has made it
        original(self, frac)
        seen.append(getattr(self, "footprint", None))

    TimingEngine._warm_shared = keep
    rows = []
    try:
        for name in names:
            k = next(k for k in data["kernels"] if k["name"] == name)
            seen.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row = predict(k, resolve_gpu(preset), env)          # as `validate compare` predicts it
            if row.error:
                raise SystemExit(f"{name}: {row.error}")
            us = row.predicted["gpu__time_duration.sum"] / 1e3
            fp = seen[-1] if seen else None
            w = None if fp is None else float(fp.window)
            rows.append({"launch": name, "predicted_us": round(us, 1), "window_share": w,
                         "residency_us": None if w is None else round(w * us, 1)})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        TimingEngine._warm_shared = original
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="h100")
    ap.add_argument("--set", default="h100_tensor", help="the measured set the launches come from")
    ap.add_argument("names", nargs="*", default=list(DEFAULT))
    a = ap.parse_args(argv)
    windows(a.set, a.preset, a.names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
