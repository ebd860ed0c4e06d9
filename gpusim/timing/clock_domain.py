"""The SM clock a launch runs at: the GPU's clock management, as the timing model sees it.

Hopper boosts its SMs to `clocks.sm_clock_mhz` (1980 MHz) with CUDA-core work, but NVIDIA
quotes its dense tensor TFLOP/s at a lower clock (H100 SXM5 and H200: 989.4 FP16 TFLOP/s =
132 SMs x 4096 FLOP/cycle x 1830 MHz; FP64 tensor at the full 1980) and Nsight measures it:
kernels that issue tensor instructions ran at a median 1783-1803 MHz against 1971-2015 for
CUDA-core SGEMMs on the same GPUs (the presets' [MEAS-CLK]). So a kernel whose SASS holds a
reduced-precision tensor instruction (`TENSOR_CLOCKED`: HMMA, IMMA, BMMA, HGMMA, IGMMA,
QGMMA, BGMMA; not DMMA) is timed at `clocks.tensor_mhz` (`ClockSpec.tensor_clock_mhz`,
never above the boost clock) for its whole duration: every cycle count the units convert
from nanoseconds (HBM and peer latency, bandwidth per cycle) and the cycles-to-time of
`gpu__time_duration.sum` use it, and `sm__cycles_elapsed.avg.per_second` reports it.

The L2 has a clock of its own: Nsight's `lts__cycles_elapsed.avg.per_second` stays at
1.706-1.709 GHz on an H200 while the SM clock of the same kernels ranges 1.53-1.98 GHz
(data/measurements/l2_clock_h200.json). So where a preset sets `clocks.l2_clock_mhz`, its
L2 slices' read and write bandwidths and the partition fabric's are per L2 cycle, and
`launch_spec` restates them per SM cycle at the launch's SM clock (`GPUSpec.in_sm_cycles`): a
tensor kernel at 1.55 GHz gets 1.10 times the L2 bytes a SM cycle that a CUDA-core kernel at
1.98 GHz gets, as the probe and the Triton GEMMs measure. The restated spec has
`l2_clock_mhz` 0 (its numbers are SM cycles now), so a second restatement changes nothing.
The L2's latencies and atomic pass times stay in SM cycles as measured and fitted (at the
boost clock): only the bandwidths are restated.

Not modelled: the power limit that takes the heaviest GEMMs lower still (1522-1700 MHz
under Nsight on 4096^3 and 8192^3 Triton and TMA GEMMs; run back to back, the H200's TMA,
mma.sync and Triton f16/bf16 GEMMs at 8192^3 hold 688-696 W of its 700 W at 1388-1620 MHz
with nvidia-smi's `sw_power_cap` reason active: data/measurements/power_probe_h200.json),
and a clock that changes within a kernel.
"""
from __future__ import annotations

import dataclasses

from gpusim.specs.gpu import GPUSpec

TENSOR_CLOCKED = frozenset(("HMMA", "IMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA"))


def issues_tensor_instructions(instructions) -> bool:
    """Whether a SASS listing holds an instruction that runs the SMs at the tensor clock."""
    return any(x.base in TENSOR_CLOCKED for x in instructions)


def launch_spec(spec: GPUSpec, instructions) -> GPUSpec:
    """`spec` at the clock a kernel of these SASS `instructions` runs at, its L2 bandwidths
    per SM cycle of that clock (module docstring)."""
    mhz = spec.clocks.tensor_mhz if issues_tensor_instructions(instructions) else spec.clocks.sm_clock_mhz
    if mhz != spec.clocks.sm_clock_mhz:
        spec = dataclasses.replace(spec, clocks=dataclasses.replace(spec.clocks, sm_clock_mhz=mhz))
    return spec.in_sm_cycles()
