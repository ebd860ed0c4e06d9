"""Ampere (sm_80) preset: A100 80GB SXM (sources: the tags of `gpusim.specs.presets`, among
them [A100-WP], [A100-DS], [Abdelkhalik22], [SSB], [NVL-A100])."""
from __future__ import annotations

from gpusim.specs.gpu import GPUSpec
from gpusim.specs.interconnect import NVLinkSpec, PCIeSpec, SystemSpec
from gpusim.specs.presets._common import _LAUNCH, _NCCL, GiB, MiB, _limits
from gpusim.specs.tensor import TensorSpec
from gpusim.specs.fields import KiB
from gpusim.specs.parts import ClockSpec, HBMSpec, L1Spec, L2Spec, NoCSpec, PipeSpec as P, PipesSpec, SMSpec

A100 = GPUSpec(
    name="a100-datasheet",                 # preset name: the cited numbers alone
    marketing_name="NVIDIA A100 SXM4 80GB",  # [A100-DS]
    compute_capability=(8, 0),             # [CUDA-PG]
    sm_count=108,                          # [A100-WP] Table 3
    clocks=ClockSpec(
        sm_clock_mhz=1410.0,               # [A100-WP] boost clock
        memory_clock_mhz=1593.0,           # [A100-DS] derived: 2039 GB/s / (5120 bits / 8 x 2)
        tensor_clock_mhz=1410.0,           # [TC-WP] A100's tensor TFLOP/s are quoted at its boost clock
        l2_clock_mhz=0.0,                  # estimate: not measured, the L2 taken at the SM clock (its bandwidths per SM cycle)
    ),
    sm=SMSpec(
        sub_partitions=4,                  # [A100-WP]
        issue_width_warp_inst_per_cycle=1,  # [A100-WP] one dispatch unit per partition
        max_threads_per_sm=2048,           # [CUDA-PG] 8.0
        max_warps_per_sm=64,               # [CUDA-PG] 8.0
        max_blocks_per_sm=32,              # [CUDA-PG] 8.0; [OCC]
        registers_per_sm=65536,            # [CUDA-PG]
        max_registers_per_thread=255,      # [CUDA-PG]
        register_allocation_unit=256,      # [OCC]
        warp_allocation_granularity=4,     # [OCC]
        shared_memory_per_sm_bytes=164 * KiB,  # [CUDA-PG] 164 KB
        shared_carveouts_bytes=tuple(k * KiB for k in (0, 8, 16, 32, 64, 100, 132, 164)),  # [CUDA-PG]; [OCC]
        shared_allocation_unit_bytes=128,  # [OCC] CC 8
        reserved_shared_per_block_bytes=1024,  # [CUDA-PG] 1 KB per block from CC 8.0
        l1_shared_total_bytes=192 * KiB,   # [A100-WP] 192 KB combined
        shared_banks=32,                   # [CUDA-PG]
        shared_bank_width_bytes=4,         # [CUDA-PG]
        shared_latency_cycles=23,          # [Abdelkhalik22] shared load 23
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
            alu=P(2.0, 4),                 # [A100-WP] 16 INT32 lanes per SMSP; latency estimate as Volta [Arafa19]
            fmaheavy=P(2.0, 4),            # [A100-WP] 16 FP32 lanes per SMSP (FP32 and IMAD share it); [Abdelkhalik22] 4
            fmalite=P(0.0, 4),             # [NCU-PIPES] GA100 has one FMA pipe: no fmalite
            fp16=P(1.0, 6),                # [CUDA-PG] 256 fp16 results/clk/SM (own pipe); latency estimate: Volta's [Arafa19]
            fp64=P(4.0, 8),                # [A100-WP] 8 FP64 lanes per SMSP; latency estimate as V100, H100
            xu=P(8.0, 19),                 # [CUDA-PG] 16/clk/SM; latency estimate: Hopper's [MEAS]
            lsu=P(4.0, 26),                # [A100-WP] 32 LD/ST per SM; latency estimate: Hopper's SHFL [MEAS]
            adu=P(2.0, 20),                # estimate: as Hopper
            cbu=P(2.0, 4),                 # estimate: not measured
            uniform=P(2.0, 4),             # estimate: as Hopper
            tex=P(4.0, 4),                 # estimate: as the LSU's issue

            imad_wide_issue_interval_cycles=4.0,  # estimate: as Hopper [MEAS-PIPE] (a 64-bit result on 32-bit lanes)
            fp64_shares_alu_dispatch=False,  # estimate: not measured (Hopper's [MEAS-PIPE] is a measured exception)
        ),
        warp_scheduler="gto",              # estimate: policy choice
        stall_counts_from_compiler=True,  # [Jia18] Volta and newer: the compiler's stall count in each instruction's control bits
    ),
    tensor=TensorSpec(
        fp16_dense_flop_per_cycle_per_sm=2048.0,   # [TC-WP] 312 TFLOP/s / (108 x 1410 MHz)
        warp_mma_rate_fraction=1.0,                # estimate: mma.sync is Ampere's only tensor path ([A100-WP] peaks)
        tf32_dense_flop_per_cycle_per_sm=1024.0,   # [TC-WP] 156 TFLOP/s
        fp8_dense_flop_per_cycle_per_sm=0.0,       # [A100-WP] no FP8 tensor instructions
        int8_dense_op_per_cycle_per_sm=4096.0,     # [TC-WP] 624 TOPS
        fp64_flop_per_cycle_per_sm=128.0,          # [TC-WP] 19.5 TFLOP/s
        mma_latency_cycles=33.0,                   # [TC-LAT] estimate (Sun et al.'s A100)
        wgmma_latency_cycles=128.0,                # estimate: no wgmma on sm_80, unused
        shared_operand_bytes_per_cycle_per_sm=128.0,  # [CUDA-PG] 32 banks x 4 B per cycle
        tma_request_interval_cycles=2.0,           # estimate: no TMA on sm_80, unused
        tma_fill_bytes_per_cycle=96.0,             # estimate: no TMA on sm_80, unused
        cp_async_fill_cycles=68.0,                 # estimate: as Hopper's [MEAS-TC] (cp.async from sm_80)
        cp_async_fill_wavefront_cycles=1.0,        # estimate: as Hopper's [NCU-FILL] (cp.async from sm_80)
    ),
    l1=L1Spec(
        line_bytes=128,                    # [NCU]
        sector_bytes=32,                   # [NCU]
        associativity=4,                   # estimate: undocumented
        hit_latency_cycles=33,             # [Abdelkhalik22]
        mshr_entries=256,                  # estimate: undocumented
        bandwidth_bytes_per_cycle=128,     # estimate: one 128-B wavefront per cycle
        tag_lines_per_cycle=4,             # [NV-FORUM] GV100+: 4 sets x 4 sectors per cycle
        write_allocate=False,              # estimate: write-through, as Volta [Jia18]
    ),
    l2=L2Spec(
        size_bytes=40 * MiB,               # [A100-WP] 40 MB
        slices=80,                         # [SSB] 8 slices x 10 framebuffer partitions (ncu)
        associativity=16,                  # estimate: undocumented
        line_bytes=128,                    # [NCU]
        sector_bytes=32,                   # [NCU]
        hit_latency_cycles=200,            # [Abdelkhalik22]
        bandwidth_bytes_per_cycle_per_slice=64.0,  # [A100-WP] 5120 B/clk over 80 slices
        write_bandwidth_bytes_per_cycle_per_slice=42.0,  # estimate: reads' 64 x H100's write/read ratio 35 / 53
        atomic_latency_cycles=40,          # estimate: not measured
        atomic_unit_cycles_per_pass=1.40,  # estimate: as Hopper [MEAS-ATOM] (not measured on this GPU)
        atomic_unit_granule_bytes=512,     # estimate: as Hopper before its hash was measured [MEAS-ATOM]
        atomic_unit_hash_masks=(),         # estimate: not measured on this GPU: each granule its own unit
        atomic_units=0,                    # estimate: not measured on this GPU
        atomic_near_slice_cycles_per_pass=1.5,  # estimate: as Hopper [MEAS-ATOM]
        atomic_int_sector_interval_cycles=1.46,  # estimate: as Hopper [MEAS-ATOM]
        atomic_float_sector_interval_cycles=3.5,  # estimate: as Hopper [MEAS-ATOM]
        partitions=2,                      # [A100-WP] L2 divided into two partitions
        fabric_latency_cycles=100,         # estimate: as Hopper
        fabric_bandwidth_bytes_per_cycle=2560.0,  # estimate: the far half of the slices' total (5120 / 2)
        ecc_granule_bytes=32,              # estimate: as Hopper [NCU-DATA]
        join_queued_reads=False,           # estimate: as Hopper
        write_port=False,                  # estimate: as Hopper (a port of its own tried there and left off [MEAS-L2FILL])
        far_writes_dirty_at_writer=False,  # estimate: as Hopper (tried there and left off [MEAS-SCATTER])
        requests_per_cycle_per_slice=0.0,  # estimate: 0, bytes only (the A100's request rate is not measured; the H200: 0.92)
        fill_cost_bytes_per_byte=0.0,      # estimate: 0, fills free (the A100's is not measured; the H200: 0.4 [MEAS-L2FILL])
        write_miss_read_wait_ns_per_gline_per_s=0.0,  # estimate: 0, no wait (not measured here; the H200: 12.7 [MEAS-WMISS])
        partial_lines_per_slice=0,         # estimate: no limit (not measured here; the H200 keeps 550 a slice [MEAS-PARTIAL])
    ),
    hbm=HBMSpec(
        stacks=5,                          # [A100-WP] five active HBM2e stacks
        channels=80,                       # [JEDEC] 16 pseudo-channels per HBM2e stack x 5
        bus_width_bits=5120,               # [A100-WP] 10 x 512-bit controllers
        bandwidth_GBps=2039.0,             # [A100-DS] 2,039 GB/s
        capacity_bytes=80 * GiB,           # [A100-DS] nominal 80 GB; the driver reports a little less
        latency_ns=180.0,                  # estimate: between V100 [DEWING] and H100 [MEAS]; see below
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
        t_rfc_ns=450.0,                    # [RAM2] 16 Gb dies (16 GB 8-high HBM2e stacks [A100-DS])
        write_queue_bursts=16,             # estimate: as Hopper, undocumented
    ),
    noc=NoCSpec(
        bandwidth_bytes_per_cycle=5120.0,  # [A100-WP] L2 read bandwidth 5120 B/clk
        latency_cycles=20,                 # estimate: part of the L2 hit latency
        gpcs=7,                            # [A100-WP] seven GPCs in the A100's GA100
        gpc_merge_window_cycles=0.0,       # estimate: not measured on Ampere, every read looked up
        gpc_merge_requests=4,              # estimate: as Hopper [MEAS-MERGE] (not used while the window is 0)
    ),
    launch=_LAUNCH,                        # estimates, see _LAUNCH
    limits=_limits(163),                   # [CUDA-PG] CC 8.0
    nvlink=NVLinkSpec(
        generation=3,                      # [NVL-A100]
        links=12,                          # [NVL-A100]
        link_bandwidth_GBps=25.0,          # [NVL-A100] 600 GB/s / 12 links / 2 directions
        data_efficiency=0.83,              # estimate: as measured on NVLink 4 [MEAS-NVL]
        latency_ns=900.0,                  # estimate: as NVLink 4
    ),
    pcie=PCIeSpec(
        generation=4,                      # [A100-DS]
        lanes=16,                          # [PCIE]
        bandwidth_GBps=31.5,               # [PCIE] Gen4 x16
        latency_ns=1500.0,                 # estimate: as Gen5
    ),
    system=SystemSpec(
        gpu_count=1,                       # estimate: one GPU unless a system is asked for
        topology="nvswitch",               # [NVL-A100] HGX A100
        switch_latency_ns=250.0,           # estimate: as NVSwitch 3
    ),
    nccl=_NCCL,                            # see _NCCL (fitted on H200; estimate here)
    source="preset a100-datasheet (gpusim/specs/presets/ampere.py)",  # where these numbers are cited
)
# A100 HBM latency: [Abdelkhalik22]'s global 290 vs L2 200 cycles would leave only 64 ns
# beyond an L2 hit, far under V100's ~156 ns [DEWING] and H100's 204 ns [MEAS]; not used.
