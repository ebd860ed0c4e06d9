"""The TensorSpec figures (gpusim/specs/tensor.py) from a run of the tensor-pipe
microbenchmarks (run.py's tensor_timing.json):

    python -m validate.tensor_timing.parse tensor_timing.json

- tensor.<type>_dense_*_per_cycle_per_sm: the highest per-SM rate over the warp counts of
  mma.sync and wgmma of that type (FP16 from f16 and bf16, INT8 from s8, FP8 from e4m3,
  TF32, FP64 from mma.sync);
- tensor.mma_latency_cycles: the f16 m16n8k16 dependent chain, cycles per instruction;
- tensor.wgmma_latency_cycles: one warpgroup's 64x128x16 f16 group of 4 (committed and
  waited) less 3 issue intervals at the measured rate: the last one's latency;
- tensor.shared_operand_bytes_per_cycle_per_sm: the highest ldmatrix.x4 rate;
- cp_async_bytes_per_cycle_per_sm: the highest cp.async rate (for the L1/LSU model).
"""
from __future__ import annotations

import json
import sys

RATE_FIELDS = {"f16": "tensor.fp16_dense_flop_per_cycle_per_sm", "bf16": "tensor.fp16_dense_flop_per_cycle_per_sm",
               "tf32": "tensor.tf32_dense_flop_per_cycle_per_sm", "e4m3": "tensor.fp8_dense_flop_per_cycle_per_sm",
               "s8": "tensor.int8_dense_op_per_cycle_per_sm", "f64": "tensor.fp64_flop_per_cycle_per_sm"}


def figures(doc: dict) -> dict:
    """{spec key or figure name: value} from a tensor_timing.json document."""
    out: dict = {}
    for r in doc["results"]:
        if "error" in r:                  # a case that could not launch (run.py records why)
            continue
        kind = r["kind"]
        if kind in ("mma_throughput", "wgmma"):
            if kind == "mma_throughput" and r["type"] == "e4m3":
                continue                  # sm_90 emulates fp8 mma.sync with f16 HMMAs: not the FP8 pipe's rate
            key = RATE_FIELDS[r["type"]]
            out[key] = max(out.get(key, 0.0), r["FLOP_per_cycle_per_sm"])
        elif kind == "mma_latency" and r["type"] == "f16":
            out["tensor.mma_latency_cycles"] = r["cycles_per_iteration"]
        elif kind == "ldmatrix":
            key = "tensor.shared_operand_bytes_per_cycle_per_sm"
            out[key] = max(out.get(key, 0.0), r["B_per_cycle_per_sm"])
        elif kind == "cp_async":
            out["cp_async_bytes_per_cycle_per_sm"] = max(out.get("cp_async_bytes_per_cycle_per_sm", 0.0),
                                                         r["B_per_cycle_per_sm"])
    one = [r for r in doc["results"] if "error" not in r and r["kind"] == "wgmma" and r["type"] == "f16" and r["n"] == 128
           and r["warpgroups_per_sm"] == 1]
    rate = out.get("tensor.fp16_dense_flop_per_cycle_per_sm")
    if one and rate:
        interval = 2 * 64 * 128 * 16 / rate
        out["tensor.wgmma_latency_cycles"] = one[0]["cycles_per_iteration"] - 3 * interval
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        for k, v in sorted(figures(json.load(f)).items()):
            print(f"{k:<48} {v:.1f}")
