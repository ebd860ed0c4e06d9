"""Broadcast and reduce on 2 GPUs, out-of-place (as `validate measure-multi` calls them) and
in-place, 1-64 MiB: whether NCCL's in-place path (no local copy at the root) explains why
reduce measures 1-2 us faster than broadcast at 1-8 MiB (DEVIATIONS.md, issue 8's misses).
Run on a 2-GPU machine (device kind nvidia-h200-x2), from the repository root:

    NCCL_NVLS_ENABLE=0 python benchmarks/nccl_inplace_probe.py --out FILE

Timing is `validate.measure_nccl.Ranks.timed` (CUDA graphs of up to 200 calls), each
configuration twice, interleaved. Writes one record per (op, placement, size, round) with
provenance (GPU names, driver, NCCL version, date, command). Only numpy and cupy are needed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from validate.measure_nccl import Ranks  # noqa: E402

SIZES = [1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 64 << 20]


class PlacedRanks(Ranks):
    """Ranks whose calls read and write one buffer per GPU while `in_place` (NCCL's in-place case)."""
    in_place = False

    def bufs(self, nbytes: int):
        pairs = super().bufs(nbytes)
        return tuple((s, s) for s, _ in pairs) if self.in_place else pairs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    from cupy.cuda import nccl  # GPU machine only: CuPy / the CUDA driver are not installed on CPU machines
    ranks = PlacedRanks(2)
    records = []
    for rnd in range(a.rounds):
        for placement in ("out_of_place", "in_place"):
            ranks.in_place = placement == "in_place"
            for op in ("broadcast", "reduce"):
                for size in SIZES:
                    rec = ranks.timed(op, size)
                    rec.update({"placement": placement, "round": rnd})
                    records.append(rec)
                    print(f"{op:10s} {placement:12s} {size >> 20:3d} MiB {rec['time_us']:9.2f} us "
                          f"busbw {rec['busbw_GBps']:6.1f}", flush=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    prov = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "NCCL_NVLS_ENABLE=0 python benchmarks/nccl_inplace_probe.py " + " ".join(sys.argv[1:]),
            "nvidia_smi": smi, "nccl_version": nccl.get_version(),
            "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}}
    with open(a.out, "w") as f:
        json.dump({"provenance": prov, "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
