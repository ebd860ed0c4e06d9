"""Volta (sm_70) preset: V100 SXM2 32GB (sources: the tags of `gpusim.specs.presets`, among
them [V100-WP], [Jia18], [Arafa19], [DEWING], [NVL-V100])."""
from __future__ import annotations

from gpusim.specs.gpu import GPUSpec
from gpusim.specs.interconnect import NVLinkSpec, PCIeSpec, SystemSpec
from gpusim.specs.presets._common import _LAUNCH, _NCCL, GiB, MiB, _limits
from gpusim.specs.tensor import TensorSpec
from gpusim.specs.fields import KiB
from gpusim.specs.parts import ClockSpec, HBMSpec, L1Spec, L2Spec, NoCSpec, PipeSpec as P, PipesSpec, SMSpec

V100 = GPUSpec(
    name="v100-datasheet",                 # preset name: the cited numbers alone
    marketing_name="NVIDIA Tesla V100 SXM2 32GB",  # [V100-WP]
    compute_capability=(7, 0),             # [CUDA-PG]
    sm_count=80,                           # [V100-WP] Table 1
    clocks=ClockSpec(
        sm_clock_mhz=1530.0,               # [V100-WP] Table 1 boost clock
        memory_clock_mhz=877.0,            # estimate: what V100 boards report (recalled); [V100-WP] 900 GB/s gives 879
        tensor_clock_mhz=1530.0,           # [TC-WP] V100's 125 TFLOP/s are quoted at its boost clock
        l2_clock_mhz=0.0,                  # estimate: not measured, the L2 taken at the SM clock (its bandwidths per SM cycle)
    ),
    sm=SMSpec(
        sub_partitions=4,                  # [V100-WP]
        issue_width_warp_inst_per_cycle=1,  # [V100-WP] one scheduler, one dispatch unit per partition
        max_threads_per_sm=2048,           # [CUDA-PG] 7.0
        max_warps_per_sm=64,               # [CUDA-PG] 7.0
        max_blocks_per_sm=32,              # [CUDA-PG] 7.0; [OCC]
        registers_per_sm=65536,            # [CUDA-PG]
        max_registers_per_thread=255,      # [CUDA-PG]
        register_allocation_unit=256,      # [OCC]
        warp_allocation_granularity=4,     # [OCC]
        shared_memory_per_sm_bytes=96 * KiB,  # [CUDA-PG] 96 KB
        shared_carveouts_bytes=tuple(k * KiB for k in (0, 8, 16, 32, 64, 96)),  # [CUDA-PG]; [OCC]
        shared_allocation_unit_bytes=256,  # [OCC] CC 7
        reserved_shared_per_block_bytes=0,  # [CUDA-PG] the 1 KB reserve starts at CC 8.0
        l1_shared_total_bytes=128 * KiB,   # [V100-WP] 128 KB combined
        shared_banks=32,                   # [CUDA-PG]
        shared_bank_width_bytes=4,         # [CUDA-PG]
        shared_latency_cycles=19,          # [Jia18]
        shared_wavefront_cycles=1,         # estimate: one 128-B wavefront per cycle
        shared_wavefront_latency_cycles=2.0,  # estimate: Hopper's [MEAS-BAR]
        shared_cas_round_cycles=3.25,      # estimate: as Hopper [MEAS-ATOM] (shared float adds as a CAS loop)
        barrier_latency_cycles=20,         # estimate: Hopper's [MEAS]
        barrier_arrival_cycles=2.0,        # estimate: Hopper's [MEAS-BAR]
        barrier_behind_shared=True,        # estimate: Hopper's [MEAS-SCAN-BAR]
        instruction_cache_line_bytes=128,  # [Jia18] 128-B instruction-cache lines (Volta L0/L1 i-caches)
        instruction_prefetch_lines=32,  # [MEAS-FE] a depth below 17 lines (L2 latency / 16.5 cycles per line) would not sustain the measured cold fetch rate
        instruction_fetch_bytes_per_cycle=7.76,  # [MEAS-FE] 128-B line per 16.5 cycles, cold straight-line code on H200
        constant_cache_line_bytes=64,  # [Jia18] 64-B lines in the constant caches
        constant_fill_cycles=0.0,  # estimate: not measured on this architecture; 0: the L2 hit latency
        parameter_fill_cycles=0.0,  # estimate: not measured on this architecture; 0: the L2 hit latency
        parameter_next_fill_cycles=0.0,  # estimate: not measured on this architecture; 0: as the first
        pipes=PipesSpec(
            alu=P(2.0, 4),                 # [V100-WP] 16 INT32 lanes per SMSP; [Arafa19] add 4
            fmaheavy=P(2.0, 4),            # [V100-WP] 16 FP32 lanes per SMSP (FP32 and IMAD share it); [Arafa19] fma 4
            fmalite=P(0.0, 4),             # [V100-WP] one FP32 pipe: no fmalite
            fp16=P(2.0, 6),                # [CUDA-PG] 128 fp16 results/clk/SM; [Arafa19] hfma 6
            fp64=P(4.0, 8),                # [V100-WP] 8 FP64 lanes per SMSP; [Arafa19] dfma 8
            xu=P(8.0, 19),                 # [CUDA-PG] 16/clk/SM; latency estimate: Hopper's [MEAS] ([Arafa19] ex2 22)
            lsu=P(4.0, 26),                # [V100-WP] 32 LD/ST per SM; latency estimate: Hopper's SHFL [MEAS]
            adu=P(2.0, 20),                # estimate: as Hopper
            cbu=P(2.0, 4),                 # estimate: not measured
            uniform=P(1.0, 4),             # estimate: Volta has no uniform datapath (sm_75+): unused
            tex=P(4.0, 4),                 # estimate: as the LSU's issue

            imad_wide_issue_interval_cycles=4.0,  # estimate: as Hopper [MEAS-PIPE] (a 64-bit result on 32-bit lanes)
            fp64_shares_alu_dispatch=False,  # estimate: not measured (Hopper's [MEAS-PIPE] is a measured exception)
        ),
        warp_scheduler="gto",              # estimate: policy choice
        stall_counts_from_compiler=True,  # [Jia18] Volta and newer: the compiler's stall count in each instruction's control bits
    ),
    tensor=TensorSpec(
        fp16_dense_flop_per_cycle_per_sm=1024.0,   # [TC-WP] 125 TFLOP/s / (80 x 1530 MHz)
        warp_mma_rate_fraction=1.0,                # estimate: HMMA is Volta's only tensor path ([V100-WP] peak)
        tf32_dense_flop_per_cycle_per_sm=0.0,      # [V100-WP] FP16 tensor cores only
        fp8_dense_flop_per_cycle_per_sm=0.0,       # [V100-WP]
        int8_dense_op_per_cycle_per_sm=0.0,        # [V100-WP] (INT8 tensor cores from Turing)
        fp64_flop_per_cycle_per_sm=0.0,            # [V100-WP]
        mma_latency_cycles=33.0,                   # estimate: as A100 [TC-LAT]
        wgmma_latency_cycles=128.0,                # estimate: no wgmma on sm_70, unused
        shared_operand_bytes_per_cycle_per_sm=128.0,  # [CUDA-PG] 32 banks x 4 B per cycle
        tma_request_interval_cycles=2.0,           # estimate: no TMA on sm_70, unused
        tma_fill_bytes_per_cycle=96.0,             # estimate: no TMA on sm_70, unused
        cp_async_fill_cycles=0.0,                  # [CUDA-PG] no cp.async before sm_80, unused
        cp_async_fill_wavefront_cycles=1.0,        # estimate: no cp.async before sm_80 [CUDA-PG], unused
    ),
    l1=L1Spec(
        line_bytes=128,                    # [NCU]
        sector_bytes=32,                   # [NCU]
        associativity=4,                   # estimate: undocumented
        hit_latency_cycles=28,             # [Jia18]; [DEWING] 36 with its 8-cycle loop
        mshr_entries=256,                  # estimate: undocumented
        bandwidth_bytes_per_cycle=128,     # estimate: one 128-B wavefront per cycle
        tag_lines_per_cycle=4,             # [NV-FORUM] GV100+: 4 sets x 4 sectors per cycle
        write_allocate=False,              # estimate: write-through [Jia18]
    ),
    l2=L2Spec(
        size_bytes=6 * MiB,                # [V100-WP] 6144 KB
        slices=64,                         # estimate: 8 per 512-bit controller [SSB], 8 controllers [V100-WP]
        associativity=16,                  # estimate: undocumented
        line_bytes=128,                    # [NCU]
        sector_bytes=32,                   # [NCU]
        hit_latency_cycles=193,            # [Jia18]; [DEWING] 221 - 8 = 213
        bandwidth_bytes_per_cycle_per_slice=32.0,  # [A100-WP] V100 L2 2048 B/clk over 64 slices
        write_bandwidth_bytes_per_cycle_per_slice=21.0,  # estimate: reads' 32 x H100's write/read ratio 35 / 53
        atomic_latency_cycles=40,          # estimate: not measured
        atomic_unit_cycles_per_pass=1.40,  # estimate: as Hopper [MEAS-ATOM] (not measured on this GPU)
        atomic_unit_granule_bytes=512,     # estimate: as Hopper before its hash was measured [MEAS-ATOM]
        atomic_unit_hash_masks=(),         # estimate: not measured on this GPU: each granule its own unit
        atomic_units=0,                    # estimate: not measured on this GPU
        atomic_near_slice_cycles_per_pass=1.5,  # estimate: as Hopper [MEAS-ATOM]
        atomic_int_sector_interval_cycles=1.46,  # estimate: as Hopper [MEAS-ATOM]
        atomic_float_sector_interval_cycles=3.5,  # estimate: as Hopper [MEAS-ATOM]
        partitions=1,                      # [V100-WP] one L2 shared by all SMs
        fabric_latency_cycles=100,         # estimate: unused with one partition
        fabric_bandwidth_bytes_per_cycle=1024.0,  # estimate: unused with one partition
        ecc_granule_bytes=32,              # estimate: as Hopper [NCU-DATA]
        join_queued_reads=False,           # estimate: as Hopper
        write_port=False,                  # estimate: as Hopper (a port of its own tried there and left off [MEAS-L2FILL])
        far_writes_dirty_at_writer=False,  # estimate: as Hopper (tried there and left off [MEAS-SCATTER])
        requests_per_cycle_per_slice=0.0,  # estimate: 0, bytes only (the V100's request rate is not measured)
        fill_cost_bytes_per_byte=0.0,      # estimate: 0, fills free (the V100's is not measured; the H200: 0.4 [MEAS-L2FILL])
        write_miss_read_wait_ns_per_gline_per_s=0.0,  # estimate: 0, no wait (not measured here; the H200: 12.7 [MEAS-WMISS])
        partial_lines_per_slice=0,         # estimate: no limit (not measured here; the H200 keeps 550 a slice [MEAS-PARTIAL])
    ),
    hbm=HBMSpec(
        stacks=4,                          # [V100-WP] four HBM2 stacks
        channels=64,                       # [JEDEC] 16 pseudo-channels per HBM2 stack x 4
        bus_width_bits=4096,               # [V100-WP] 8 x 512-bit controllers
        bandwidth_GBps=900.0,              # [V100-WP] 900 GB/s
        capacity_bytes=32 * GiB,           # [V100-WP] nominal 32 GB (SXM2 32GB part)
        latency_ns=156.0,                  # [DEWING] memory 460 - L2 221 = 239 cycles at 1530 MHz
        access_granularity_bytes=64,       # estimate: as H100
        min_access_bytes=32,               # estimate: a sector (not measured; H100/H200 measure 64, [MEAS-DRAM64])
        banks_per_channel=16,              # [DRAMSIM3] 4 bank groups of 4 (HBM2)
        row_bytes=1024,                    # [JEDEC] JESD235 1 KB page per pseudo-channel
        channel_interleave_bytes=256,      # estimate: 256-B channel chunks (a stream's rows still open; undocumented)
        t_rcd_ns=14.0,                     # [DRAMSIM3] HBM2 tRCD
        t_rp_ns=14.0,                      # [DRAMSIM3] HBM2 tRP
        t_ras_ns=34.0,                     # [DRAMSIM3] HBM2 tRAS
        t_wr_ns=16.0,                      # [DRAMSIM3] HBM2 tWR
        t_ccd_l_ns=2.0,                    # [DRAMSIM3] HBM2 tCCD_L, 2 tCK
        t_wtr_ns=22.0,                     # [DRAMSIM3] tWTR_L 8 + CL 14: bus idle from write data to read data
        t_rtw_ns=2.0,                      # estimate: 2 tCK of bus turnaround [DRAMSIM3]
        t_faw_ns=16.0,                     # estimate: as Hopper's datasheet presets (H100/H200 fit 18-20 ns)
        write_activation_share=1.0,        # estimate: writes' activations as reads' (not measured on HBM2/HBM2e; Hopper's HBM3 1.45, [MEAS-DRAMW])
        t_refi_ns=3900.0,                  # [DRAMSIM3] tREFI 3.9 us
        t_rfc_ns=350.0,                    # [RAM2] 8 Gb dies (8 GB 4-high HBM2 stacks [V100-WP])
        write_queue_bursts=16,             # estimate: as Hopper, undocumented
    ),
    noc=NoCSpec(
        bandwidth_bytes_per_cycle=2048.0,  # [A100-WP] V100 L2 read bandwidth 2048 B/clk
        latency_cycles=20,                 # estimate: part of the L2 hit latency
        gpcs=6,                            # [V100-WP] six GPCs
        gpc_merge_window_cycles=0.0,       # estimate: not measured on Volta, every read looked up
        gpc_merge_requests=4,              # estimate: as Hopper [MEAS-MERGE] (not used while the window is 0)
    ),
    launch=_LAUNCH,                        # estimates, see _LAUNCH
    limits=_limits(96),                    # [CUDA-PG] CC 7.0
    nvlink=NVLinkSpec(
        generation=2,                      # [NVL-V100]
        links=6,                           # [NVL-V100]
        link_bandwidth_GBps=25.0,          # [NVL-V100] 300 GB/s / 6 links / 2 directions
        data_efficiency=0.83,              # estimate: as measured on NVLink 4 [MEAS-NVL]
        latency_ns=900.0,                  # estimate: as NVLink 4
    ),
    pcie=PCIeSpec(
        generation=3,                      # [NVL-V100]
        lanes=16,                          # [PCIE]
        bandwidth_GBps=15.75,              # [PCIE] Gen3 x16
        latency_ns=1500.0,                 # estimate: as Gen5
    ),
    system=SystemSpec(
        gpu_count=1,                       # estimate: one GPU unless a system is asked for
        topology="direct",                 # [NVL-V100] DGX-1: links straight between GPUs, no switch
        switch_latency_ns=0.0,             # [NVL-V100] no switch
    ),
    nccl=_NCCL,                            # see _NCCL (fitted on H200; estimate here)
    source="preset v100-datasheet (gpusim/specs/presets/volta.py)",  # where these numbers are cited
)
