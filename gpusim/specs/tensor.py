"""The tensor pipe of an SM as an architect varies it: dense tensor-core throughput per
type, the latency of its instructions, the shared-memory bandwidth its operands come
through, and the TMA unit's request rate. A frozen parts list with units in the field
names (as in `parts.py`); the timing model turns each field into issue intervals and latencies
of the SASS tensor and async-copy instructions (`gpusim/timing/tensor_pipe.py`), the
roofline into its tensor ceilings (`gpusim/viz/roofline.py`).

Throughputs are per SM per cycle for the dense (not 2:4 sparse) instructions; the SM's
sub-partitions share them equally (one tensor core each). A rate of 0 means the
architecture has no tensor instructions of that type (A100: FP8; V100: TF32, FP8, INT8,
FP64); a kernel that issues one on such a spec is refused.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.errors import ConfigError
from gpusim.specs.fields import _nonnegative, _positive, bounded, check_ranges

TYPES = ("fp16", "tf32", "fp8", "int8", "fp64")     # the rates below, by the operand type of an instruction


@dataclass(frozen=True)
class TensorSpec:
    fp16_dense_flop_per_cycle_per_sm: float = bounded(4096.0, 1.0, 1e6)  # FP16/BF16 inputs (FP32 or FP16 accumulate): HMMA, HGMMA
    tf32_dense_flop_per_cycle_per_sm: float = bounded(2048.0, 0.0, 1e6)  # TF32 inputs: HMMA.*.TF32, HGMMA.*.TF32; 0: none
    fp8_dense_flop_per_cycle_per_sm: float = bounded(8192.0, 0.0, 1e6)  # FP8 E4M3/E5M2 inputs: QGMMA, HMMA.*.E4M3; 0: none
    int8_dense_op_per_cycle_per_sm: float = bounded(8192.0, 0.0, 1e6)  # INT8 inputs (INT4 at twice this): IMMA, IGMMA; 0: none
    fp64_flop_per_cycle_per_sm: float = bounded(256.0, 0.0, 1e6)  # FP64 tensor instructions: DMMA; 0: none
    warp_mma_rate_fraction: float = bounded(1.0, 0.01, 1.0)  # share of the dense rate warp-level mma.sync (HMMA, IMMA) reaches; wgmma reaches it all
    mma_latency_cycles: float = bounded(33.0, 1.0, 100_000.0)  # warp-level HMMA m16n8k16 (FP16, FP32 accumulate): issue to dependent issue
    wgmma_latency_cycles: float = bounded(128.0, 1.0, 100_000.0)  # warpgroup HGMMA 64x128x16 (FP16, FP32 accumulate): issue to result
    shared_operand_bytes_per_cycle_per_sm: float = bounded(128.0, 1.0, 65_536.0)  # shared memory read by ldmatrix (LDSM) and wgmma operand fetch
    tma_request_interval_cycles: float = bounded(2.0, 0.0, 100_000.0)  # cycles between two requests (UTMALDG, UTMASTG, UBLKCP) a sub-partition sends the TMA unit
    tma_fill_bytes_per_cycle: float = bounded(96.0, 0.0, 65_536.0)  # bytes the TMA unit writes into shared memory a cycle, a load's after its first sector is back (L2 hit latency); 0: not limited
    cp_async_fill_cycles: float = bounded(0.0, 0.0, 100_000.0)  # cp.async (LDGSTS): from its sectors' return to its bytes in shared memory, counted for its group
    cp_async_fill_wavefront_cycles: float = bounded(1.0, 0.0, 1000.0)  # cycles each wavefront of a cp.async's fill of shared memory holds the SM's shared-memory data path; 0: fills take none of it

    def __post_init__(self) -> None:
        _positive(self, "fp16_dense_flop_per_cycle_per_sm", "warp_mma_rate_fraction", "mma_latency_cycles", "wgmma_latency_cycles",
                  "shared_operand_bytes_per_cycle_per_sm")
        _nonnegative(self, "tf32_dense_flop_per_cycle_per_sm", "fp8_dense_flop_per_cycle_per_sm",
                     "int8_dense_op_per_cycle_per_sm", "fp64_flop_per_cycle_per_sm", "tma_request_interval_cycles", "tma_fill_bytes_per_cycle",
                     "cp_async_fill_cycles", "cp_async_fill_wavefront_cycles")
        check_ranges(self)

    def rate(self, kind: str) -> float:
        """Dense operations per cycle per SM of operand type `kind` (one of TYPES)."""
        if kind not in TYPES:
            raise ConfigError(f"tensor type must be one of {', '.join(TYPES)}, got {kind!r}")
        return getattr(self, f"{kind}_dense_op_per_cycle_per_sm" if kind == "int8" else
                       "fp64_flop_per_cycle_per_sm" if kind == "fp64" else f"{kind}_dense_flop_per_cycle_per_sm")
