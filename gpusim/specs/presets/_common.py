"""What every preset shares: the launch overheads, the launch limits by opt-in shared memory,
and NCCL's parameters (sources: the tags of `gpusim.specs.presets`)."""
from __future__ import annotations

from gpusim.specs.interconnect import NCCLSpec
from gpusim.specs.limits import LaunchLimits
from gpusim.specs.fields import KiB
from gpusim.specs.parts import LaunchSpec

MiB = 1024 * KiB
GiB = 1024 * MiB

_LAUNCH = LaunchSpec(
    kernel_launch_overhead_ns=2500.0,      # estimate: host launch to first block, not measured yet
    kernel_fixed_ns=1800.0,                # estimate: front end and drain inside gpu__time_duration
    block_dispatch_cycles=40,              # estimate: one block start per SM
)


def _limits(optin_kib: int) -> LaunchLimits:
    return LaunchLimits(
        warp_size_threads=32,                        # [CUDA-PG] all compute capabilities
        max_threads_per_block=1024,                  # [CUDA-PG]
        max_block_dims=(1024, 1024, 64),             # [CUDA-PG]
        max_grid_dims=(2**31 - 1, 65535, 65535),     # [CUDA-PG]
        max_shared_bytes_per_block_static=48 * KiB,  # [CUDA-PG] 48 KB without opt-in
        max_shared_bytes_per_block_optin=optin_kib * KiB,  # [CUDA-PG] 96/163/227 KB for 7.0/8.0/9.0; [MEAS] 232448
    )



# NCCL's algorithm/protocol parameters: the structure (per-protocol efficiency and per-step
# latency, channel count from a per-thread threshold, 8 pipelined slots per step) follows
# NCCL's src/graph/tuning.cc and enqueue.cc as read; the numbers are estimates of this
# shape, fitted on H200 by `python -m validate calibrate-multi` into the calibrated preset.
_NCCL = NCCLSpec(
    max_channels=24,                       # [MEAS-NVL] NCCL 2.28.9 log: 24 channels on 2 and 4 H200s
    threads_per_channel=512,               # estimate: NCCL_LL_MAX_NTHREADS as read in NCCL's source
    channel_threshold_bytes_per_thread=8,  # estimate: NCCL's LL thread threshold; reproduces [MEAS-NVL] channel counts
    slices_per_step=8,                     # estimate: NCCL_STEPS
    simple_efficiency=0.89,                # estimate: [MEAS-NVL] ring all_reduce 353 GB/s busbw / 397 GB/s link payload
    ll_efficiency=0.40,                    # estimate: half the line is flags; [MEAS-NVL] forced LL at 1 GiB
    ll128_efficiency=0.88,                 # estimate: 120 of 128 bytes data; [MEAS-NVL] forced LL128
    tree_efficiency=0.84,                  # estimate: [MEAS-NVL] forced Tree/Simple on 4 GPUs
    channel_bandwidth_GBps=26.7,           # estimate: [MEAS-NVL] ring steps that also copy into the local output
    launch_latency_ns=4000.0,              # estimate: [MEAS-NVL] 64 KiB calls on 2 and 4 GPUs
    ll_base_latency_ns=1000.0,             # estimate: as above (NCCL's own baseLat tables give the shape)
    ll128_base_latency_ns=7600.0,          # estimate: as above
    simple_base_latency_ns=8400.0,         # estimate: as above
    ll_step_latency_ns=500.0,              # estimate: per extra step from 2 to 4 GPUs, [MEAS-NVL]
    ll128_step_latency_ns=850.0,           # estimate: as above
    simple_step_latency_ns=3000.0,         # estimate: as above
    simple_slice_sync_ns=3000.0,           # estimate: one Simple slice's sync in a ring (NCCL prims_simple.h: slot wait, barriers, flag); calibrate-multi fits it
    p2p_latency_ns=3000.0,                 # estimate: [MEAS-NVL] 64 KiB send_recv
    p2p_channel_bandwidth_GBps=20.0,       # estimate: [MEAS-NVL] send_recv on 4 GPUs, 8 channels per peer at 160 GB/s
    p2p_receive_bandwidth_GBps=40.0,       # estimate: [MEAS-NVL] send_recv tails (a chunk's copy out of the buffer)
    p2p_warp_bandwidth_GBps=2.6,           # calibrated: [MEAS-NVL] all_to_all on 2 H200s at 1 GiB, 32 channels each shared by two works: 1623 us, 10.4 GB/s per channel over 4 send worker warps
    p2p_chunk_bytes=512 << 10,             # NCCL's NCCL_P2P_NVL_CHUNKSIZE default; [MEAS-NVL] log: "P2P Chunksize set to 524288"
    p2p_ll_threshold_bytes=16384,          # estimate: NCCL_P2P_LL_THRESHOLD default read in NCCL 2.28 (x 32 channels: LL to 512 KiB per peer)
    launch_skew_per_gpu_ns=1900.0,         # estimate: [MEAS-NVL] 64 KiB send_recv 9.3 us on 2 GPUs, 13.1 on 4
    dram_bytes_per_link_byte=3.0,          # estimate: [NCCL-ISSUES] #1428 "at least 2x ... it can be 3x" (FIFO landing, read back, output)
)
