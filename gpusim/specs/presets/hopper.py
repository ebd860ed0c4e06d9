"""Hopper (sm_90) presets: H100 SXM5 and H200 SXM (sources: the tags of `gpusim.specs.presets`,
among them [H100-WP], [H100-DS], [H200-DS], [MEAS], [MEAS-FE], [MEAS-ATOM], [NCU-DATA], [MEAS-NVL], [MEAS-TC], [MEAS-CONST])."""
from __future__ import annotations

from gpusim.specs.gpu import GPUSpec
from gpusim.specs.interconnect import NVLinkSpec, PCIeSpec, SystemSpec
from gpusim.specs.presets._common import _LAUNCH, _NCCL, MiB, _limits
from gpusim.specs.tensor import TensorSpec
from gpusim.specs.fields import KiB
from gpusim.specs.parts import ClockSpec, HBMSpec, L1Spec, L2Spec, NoCSpec, PipeSpec as P, PipesSpec, SMSpec

_HOPPER_SM = SMSpec(
    sub_partitions=4,                      # [H100-WP] four SM partitions, one scheduler each
    issue_width_warp_inst_per_cycle=1,     # [H100-WP] one dispatch unit per partition
    max_threads_per_sm=2048,               # [CUDA-PG] 9.0; [MEAS]
    max_warps_per_sm=64,                   # [CUDA-PG] 9.0
    max_blocks_per_sm=32,                  # [CUDA-PG] 9.0; [OCC]; [MEAS]
    registers_per_sm=65536,                # [CUDA-PG] 64K 32-bit registers; [MEAS]
    max_registers_per_thread=255,          # [CUDA-PG]
    register_allocation_unit=256,          # [OCC] cudaOccRegAllocationGranularity
    warp_allocation_granularity=4,         # [OCC] cudaOccSubPartitionsPerMultiprocessor
    shared_memory_per_sm_bytes=228 * KiB,  # [CUDA-PG] 228 KB; [MEAS] 233472
    shared_carveouts_bytes=tuple(k * KiB for k in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)),  # [CUDA-PG]; [OCC]
    shared_allocation_unit_bytes=128,      # [OCC] cudaOccSMemAllocationGranularity, CC 9
    reserved_shared_per_block_bytes=1024,  # [CUDA-PG] 1 KB per block from CC 8.0; [MEAS]
    l1_shared_total_bytes=256 * KiB,       # [H100-WP] 256 KB combined L1/shared per SM
    shared_banks=32,                       # [CUDA-PG]
    shared_bank_width_bytes=4,             # [CUDA-PG]
    shared_latency_cycles=23,              # [MEAS] ld.shared chase, H100 and H200
    shared_wavefront_cycles=1,             # estimate: one 128-B wavefront per cycle (32 banks x 4 B, [CUDA-PG])
    shared_wavefront_latency_cycles=2.0,    # [MEAS-BAR] one warp's dependent shared loads 32-way conflicted: 97.0 cycles a step, 35.0 without; a read-modify-write 164.5 / 41.0; [MEAS-SMEM-PORT] one warp's independent ones 64.8 a load, two sub-partitions' 32.1 a SM
    shared_cas_round_cycles=3.25,          # [MEAS-ATOM] shared_lanes/f32_l32: 32 lanes of a warp on one word, 32 rounds of LDS + ATOMS.CAST.SPIN (64 wavefronts) a float add, 3.6 SM cycles a round with 64 warps an SM (issue and the rest included)
    barrier_latency_cycles=20,             # [MEAS] 20.7 cycles per __syncthreads with 4 warps
    barrier_arrival_cycles=2.0,            # [MEAS-BAR] 21 barrier phases: 42.6 / 66.8 / 104.1 cycles a phase with one block of 4 / 16 / 32 warps a SM
    barrier_behind_shared=True,            # [MEAS-SCAN-BAR] a barrier phase's shared accesses add to its barrier's time: one block, warp 0's four 8-way loads 139.5 cycles a phase against 111.4 conflict-free; 4 blocks 427.3 / 311.0 (H200)
    instruction_cache_line_bytes=128,  # [Jia18] 128-B instruction-cache lines (Volta L0/L1 i-caches)
    instruction_prefetch_lines=32,  # [MEAS-FE] a depth below 17 lines (L2 latency / 16.5 cycles per line) would not sustain the measured cold fetch rate
    instruction_fetch_bytes_per_cycle=7.76,  # [MEAS-FE] 128-B line per 16.5 cycles, cold straight-line code on H200
    constant_cache_line_bytes=64,  # [Jia18] 64-B lines in the constant caches
    constant_fill_cycles=0.0,      # [MEAS-CONST] measured 200 cycles a line of __constant__ data (4 / 16 lines 779 / 3,306 cold under Nsight's flushes, H200); 0 (the L2 hit latency) until the sampled launches' start-phase sensitivity is settled (docs/mechanisms_24.md section 41)
    parameter_fill_cycles=0.0,     # [MEAS-CONST] measured 96: a warp's first parameter line 100 cycles cold, 4 warm (H100 and H200, with or without Nsight's flushes); 0 as above
    parameter_next_fill_cycles=0.0,  # [MEAS-CONST] measured 24: 2 / 4 / 8 / 16 parameter lines 108 / 161 / 260 / 458 cycles cold, two lines 1 KiB apart 108; 0 as above
    pipes=PipesSpec(
        alu=P(2.0, 4),                     # [H100-WP] 16 INT32 lanes per SMSP; [MEAS] SHF 2.02, 4.15
        fmaheavy=P(2.0, 4),                # [NCU-PIPES] IMAD and FP32; [MEAS] IMAD 2.00, 4.12
        fmalite=P(2.0, 4),                 # [NCU-PIPES] FP32 only; [H100-WP] 32 FP32 lanes per SMSP in all; [MEAS] FFMA 1.03, 4.12
        fp16=P(0.0, 8),                    # [NCU-PIPES] HFMA2 runs on the FMA pipes on GH100; [MEAS] HFMA2 1.09, 8.09
        fp64=P(2.0, 8),                    # [H100-WP] 16 FP64 lanes per SMSP; [MEAS] DFMA 2.03, 8.06
        xu=P(8.0, 19),                     # [CUDA-PG] 16 results/clk/SM; [MEAS] MUFU.EX2 8.00, 19.0
        lsu=P(4.0, 26),                    # [Luo24] 8 LD/ST per SMSP; [MEAS] SHFL 26.0 (S2R: estimate, as SHFL)
        adu=P(2.0, 30),                    # [MEAS] BAR about 2 cycles per warp, (76.7 - 14.7) / 31; [MEAS-FE] indexed LDC 34 - 4 (its index shift)
        cbu=P(2.0, 4),                     # estimate: not measured
        uniform=P(2.0, 4),                 # [NCU-DATA] matmul_naive/large: 0.37 uniform warp inst/cycle/SMSP, 36% math_pipe_throttle, alu 0.17, fma 0.15 (only the uniform pipe near its limit); ubench_uniform.cu measures it; latency estimate: as the ALU
        tex=P(4.0, 4),                     # estimate: as the LSU's issue; latency from the memory units

        imad_wide_issue_interval_cycles=4.0,  # [MEAS-PIPE] IMAD.WIDE(.U32) 4 fmaheavy cycles, IMAD 2
        fp64_shares_alu_dispatch=True,     # [MEAS-PIPE] alu + fp64 busy cycles at most 0.90-1.03 of the SMSP's, alu + fmaheavy 1.74
    ),
    warp_scheduler="gto",                  # estimate: policy choice; NVIDIA does not document its scheduler
    stall_counts_from_compiler=True,  # [Jia18] Volta and newer: the compiler's stall count in each instruction's control bits
)
_HOPPER_TENSOR = TensorSpec(
    fp16_dense_flop_per_cycle_per_sm=4096.0,   # [TC-WP] 989.4 TFLOP/s / (132 x 1830 MHz)
    tf32_dense_flop_per_cycle_per_sm=2048.0,   # [TC-WP] 494.7 TFLOP/s
    fp8_dense_flop_per_cycle_per_sm=8192.0,    # [TC-WP] 1978.9 TFLOP/s
    int8_dense_op_per_cycle_per_sm=8192.0,     # [TC-WP] 1978.9 TOPS
    fp64_flop_per_cycle_per_sm=256.0,          # [TC-WP] 66.9 TFLOP/s / (132 x 1980 MHz)
    warp_mma_rate_fraction=0.66,               # [MEAS-TC] mma.sync at 16 warps/SM: f16 2,699, tf32 1,351, s8 5,390 of 4096/2048/8192
    mma_latency_cycles=24.3,                   # [MEAS-TC] f16 m16n8k16 dependent chain, H100
    wgmma_latency_cycles=120.4,                # [MEAS-TC] 64x128x16 f16, H100 (derived: a group of 4 less 3 issues)
    shared_operand_bytes_per_cycle_per_sm=128.0,  # [CUDA-PG] 32 banks x 4 B per cycle
    tma_request_interval_cycles=2.0,           # estimate: not measured; as the ADU's issue
    tma_fill_bytes_per_cycle=96.0,             # [MEAS-TMA] one bulk copy from the L2: 299 cycles at 1 KB, 347 / 380 / 465 at 4 / 8 / 16 KB (least squares 95.6 B/cycle)
    cp_async_fill_cycles=68.0,                 # [MEAS-TC] cp.async.cg 16 B round trip from the L2, one warp: 361.5 cycles, 293.8 without it
    cp_async_fill_wavefront_cycles=1.0,        # [NCU-FILL] one 128-B wavefront a cycle, as shared memory's
)
_HOPPER_L1 = L1Spec(
    line_bytes=128,                        # [NCU]
    sector_bytes=32,                       # [NCU]
    associativity=4,                       # estimate: undocumented; the model's choice
    hit_latency_cycles=32,                 # [MEAS] ld.global.ca chase, H100 and H200
    mshr_entries=1024,                     # estimate: undocumented; Little's law on the measured 4.1 TB/s H200
    #                                        stream read (data/measurements/h200.json) needs > 350 sectors in flight per SM
    bandwidth_bytes_per_cycle=128,         # [MEAS-L1GATHER] a wavefront: one sector of each of the 4 bank groups (32 lines in 32
    #                                        banks 8.0-8.6 cycles a request, in one bank 32.0, 8 lines of 4 sectors 8.0)
    tag_lines_per_cycle=4,                 # [MEAS-L1GATHER] 32 lines in 32 banks, consecutive, 2 or 16 apart: 8.0-8.6 cycles a request;
    #                                        8 / 16 lines in distinct bank groups 2.6 / 4.6; [NV-FORUM] "4 sets x 4 sectors per cycle"
    write_allocate=False,                  # estimate: global stores write through to L2 ([Jia18] on Volta)
)
_HOPPER_NOC_LATENCY = 20                   # estimate: one crossbar traversal, part of the L2 hit latency
# [MEAS-ATOM-HASH] which 256-B chunks share an atomic unit (validate/atomic_units_probe.py, H100,
# data/measurements/atomic_units_h100_run2.json; validate/atomic_banks_probe.py, H200): chunks 512 B apart
# (address bit 9) share one at every measured place, and so do chunks differing in address bits 8, 12
# and 16 together (1882 of 1884 pairs); every other difference splits them, like a random function
# (80 distinct units found over the first 2 MiB). The key: address bits 10-39 with 12 and 16 as their
# parities with bit 8; bit 9 enters none. So 256 int bins (1 KiB) take four units at 512 B mod 1 KiB
# and two at 0. Applied in the presets since the measured sets record where the GPU's allocator put
# each array (`validate measure`'s arg_addresses, placed by `gpusim.launch(device_addresses=)`):
# hist_global_atomic/bins256 (bins at 512 mod 1 KiB on both GPUs) +99 -> +0.7%; before that, with
# arrays where gpusim's heap put them, the hash had taken the mechanism suite's atomics from 12.1% to
# 17.9% MAPE (docs/mechanisms_24.md sections 9 and 38).
HOPPER_ATOMIC_HASH_MASKS = (0x1100, 0x10100) + tuple(1 << b for b in range(10, 40) if b not in (12, 16))
_HOPPER_FABRIC_LATENCY = 100               # estimate: one L2 partition crossing; gives the [MEAS] chase at 32 MiB 526 (H100)

_NVLINK4 = NVLinkSpec(
    generation=4,                          # [NVL-H100]
    links=18,                              # [NVL-H100]; [MEAS-NVL]
    link_bandwidth_GBps=26.5625,           # [MEAS-NVL] nvidia-smi nvlink -s (NVIDIA quotes 25 GB/s of payload)
    data_efficiency=0.83,                  # [MEAS-NVL] 396 GB/s peer copy / (18 x 26.5625)
    latency_ns=900.0,                      # estimate: undocumented; GPU memory system to a peer's L2, switch not included
)
_PCIE5 = PCIeSpec(
    generation=5,                          # [NVL-H100] [H200-DS]
    lanes=16,                              # [PCIE] x16
    bandwidth_GBps=63.0,                   # [PCIE] Gen5 x16 payload per direction
    latency_ns=1500.0,                     # estimate: GPU to GPU through the host bridge
)

H100 = GPUSpec(
    name="h100-datasheet",                 # preset name: the cited numbers alone
    marketing_name="NVIDIA H100 SXM5 80GB",  # [H100-WP]
    compute_capability=(9, 0),             # [CUDA-PG]
    sm_count=132,                          # [H100-WP] Table 3, SXM5; [MEAS]
    clocks=ClockSpec(
        sm_clock_mhz=1980.0,               # [MEAS] max boost (clock rate 1980000 kHz; the whitepaper had none final)
        memory_clock_mhz=2619.0,           # [MEAS] = 3352 GB/s / (5120 bits / 8 x 2)
        tensor_clock_mhz=1830.0,           # [TC-WP] the clock the dense tensor TFLOP/s are quoted at; [MEAS-CLK]
        l2_clock_mhz=1707.5,               # the H200's (same GH100 L2) [MEAS-L2CLK]; the H100's own 1,709.4 measured since (0.1%)
    ),
    sm=_HOPPER_SM,                         # cited above
    l1=_HOPPER_L1,                         # cited above
    tensor=_HOPPER_TENSOR,                 # cited above
    l2=L2Spec(
        size_bytes=50 * MiB,               # [H100-WP] 50 MB; [MEAS] 52428800
        slices=80,                         # estimate: 8 per 512-bit controller as A100 [SSB], 10 controllers [H100-WP]
        associativity=16,                  # estimate: undocumented
        line_bytes=128,                    # [NCU]
        sector_bytes=32,                   # [NCU]
        hit_latency_cycles=276,            # [MEAS] ld.global.cg chase over random lines (near hits: warmed copies)
        bandwidth_bytes_per_cycle_per_slice=58.3,  # [MEAS-XBAR] a L2 cycle: 132 SMs on regions of their own, 4,022 B a SM cycle at 1,979 MHz over 80 slices (50.3 B) at 1,707.5 MHz
        write_bandwidth_bytes_per_cycle_per_slice=40.6,  # [NCU-DATA] write_l2: 1.09 sectors/slice/SM cycle at 1,980 MHz (35.0 B), a L2 cycle
        atomic_latency_cycles=40,          # estimate: not measured
        atomic_unit_cycles_per_pass=1.40,  # [MEAS-ATOM] passes over the sectors of one granule: 1.39 (atomic_bins/i32_b32), 1.41 (i32_b8_s32B); validate calibrate fits it (histogram_global/large)
        atomic_unit_granule_bytes=256,     # [MEAS-ATOM-HASH] a 256-B chunk's atomics go to one unit; with the hash, hot sets of 1 line / 2 lines / 8 / 32 / 64 lines run 1 / 1 / 2 / 7.6 / 13-16 passes at a time [MEAS-ATOM] (atomic_bins i32_b32, _b8_s32B, _b8_s128B, _b32_s128B, _b256_s32B)
        atomic_unit_hash_masks=HOPPER_ATOMIC_HASH_MASKS,  # [MEAS-ATOM-HASH] chunks 512 B apart in one KiB share a unit (see above)
        atomic_units=0,                    # [MEAS-ATOM-HASH] each key its own unit: 80 measured, but a mixer over 80 would pair neighbouring chunks the GPU never pairs (l2_atomics.py)
        atomic_near_slice_cycles_per_pass=1.5,  # [MEAS-ATOM] no contention: 45 passes a cycle = 96 slices / (1.40 + 1.5 / 2), half the passes far (atomic_bins/i32_b131072); validate calibrate fits it (atomic_throughput/global_distinct)
        atomic_int_sector_interval_cycles=1.46,  # [MEAS-ATOM] one address, every SM: 1.46-1.48 cycles a pass (atomic_bins/i32_b1, atomic_hot/i32_a*_h1); validate calibrate fits it (atomic_throughput/global_same)
        atomic_float_sector_interval_cycles=3.5,  # [MEAS-ATOM] one address, float adds: 3.50 cycles a pass (atomic_hot/f32_a1_h1, f32_a32_h1, atomic_uniform/f32_s1)
        partitions=2,                      # [H100-WP] L2 in two partitions; [NCU-DATA] 1.50x lts sectors
        fabric_latency_cycles=_HOPPER_FABRIC_LATENCY,  # estimate: see _HOPPER_FABRIC_LATENCY
        fabric_bandwidth_bytes_per_cycle=2332.0,  # estimate: the far half of the slices' read total (80 x 58.3 / 2), a L2 cycle
        ecc_granule_bytes=32,              # [NCU-DATA] transpose_naive/large: a 4-B store takes 2 sector slots
        join_queued_reads=True,            # [MEAS-XBAR] every SM on one region: 0.30 lookups a sector; [MEAS-MERGE]: the GPUs merge within a GPC only (SMs of different GPCs 0.97-1.00), which this join does not keep to
        write_port=False,                  # [MEAS-L2FILL] tried True (docs/mechanisms_24.md section 27): the H200's stores mixed 8:1 with L2-resident loads right (-2%), 4:1 / 2:1 and held-out copies 15-30% fast
        far_writes_dirty_at_writer=False,  # [MEAS-SCATTER] off: tried in full simulation of the scatter probe (docs/mechanisms_24.md section 47), its DRAM bytes right above the L2 knee, its time not
        requests_per_cycle_per_slice=0.92,  # [MEAS-L2REQ] the H200's per slice and L2 cycle; the H100 measures 0.99 raw (134.7 1-sector requests a ns over 80 slices), which gpusim at 0.92 already exceeds (147.7): left
        fill_cost_bytes_per_byte=0.15,     # [MEAS-L2FILL] the H100's own: 8:1 / 4:1 within -1.3 / -0.5% (the H200's 0.4: +1.8 / +5.4%); its L2-bound GEMMs allow at most 0.17 (the TMA GEMM at 8192^3: 96% of the read peak beside 1.83 TB/s of fills, h100_tensor.json)
        write_miss_read_wait_ns_per_gline_per_s=17.4,  # [MEAS-WMISS] the H100's own: read misses 287 / 253 cycles longer per TB/s of 128-B stores that allocate their line (7.81 G lines a second; copy_latency_h100_run3.json / _run4.json, store_beside), stores that hit next to none
        partial_lines_per_slice=550,       # estimate: the H200's per slice ([MEAS-PARTIAL]; 44 K lines over 80 slices), not measured on the H100
    ),
    hbm=HBMSpec(
        stacks=5,                          # [H100-WP] five HBM3 stacks
        channels=160,                      # [JEDEC] 32 pseudo-channels per HBM3 stack x 5
        bus_width_bits=5120,               # [H100-WP] 10 x 512-bit controllers; [MEAS]
        bandwidth_GBps=3352.0,             # [H100-WP] Table 3; [H100-DS] 3.35 TB/s
        capacity_bytes=85017493504,        # [MEAS] totalGlobalMem of the 80 GB part [H100-DS]
        latency_ns=204.0,                  # [MEAS] DRAM 680.7 - L2 276.0 = 405 cycles at 1980 MHz
        access_granularity_bytes=64,       # estimate: 32-B bursts [JEDEC] fetched in pairs (sector promotion)
        min_access_bytes=64,               # [MEAS-DRAM64] a lone 32-B sector's fill or write takes a 64-B burst's time (stride_write/s128B against s32B)
        banks_per_channel=32,              # [SNPS] 16 banks per 4 dies of JESD238: 8-high HBM3 stacks [H100-WP]
        row_bytes=1024,                    # [JEDEC] JESD238 1 KB page per pseudo-channel
        channel_interleave_bytes=256,      # estimate: 256-B channel chunks (a stream's rows still open; undocumented)
        t_rcd_ns=14.0,                     # [DRAMSIM3] HBM2 tRCD; HBM3's array timing taken as equal (estimate)
        t_rp_ns=14.0,                      # [DRAMSIM3] HBM2 tRP
        t_ras_ns=34.0,                     # [DRAMSIM3] HBM2 tRAS
        t_wr_ns=16.0,                      # [DRAMSIM3] HBM2 tWR
        t_ccd_l_ns=2.0,                    # [DRAMSIM3] HBM2 tCCD_L, 2 tCK
        t_wtr_ns=22.0,                     # [DRAMSIM3] tWTR_L 8 + CL 14: bus idle from write data to read data
        t_rtw_ns=2.0,                      # estimate: 2 tCK of bus turnaround [DRAMSIM3], read data to write data
        t_faw_ns=16.0,                     # estimate: four activations per 16 ns; validate calibrate fits it (random_access/read)
        write_activation_share=1.45,       # [MEAS-DRAMW] random whole-sector writes 30.1 G bursts/s, reads of the same bursts 38.6 G (H200)
        t_refi_ns=3900.0,                  # [DRAMSIM3] tREFI 3.9 us
        t_rfc_ns=250.0,                    # [MEAS-TMA] fitted: the wait for a refresh in progress in 2-D TMA boxes' latency
        write_queue_bursts=16,             # estimate: controller write drain; fitted to [NCU-DATA] copy_hbm
    ),
    noc=NoCSpec(
        bandwidth_bytes_per_cycle=11520.0,  # estimate: above the 11,293 B a SM cycle 132 SMs pulled from one region [MEAS-XBAR]
        latency_cycles=_HOPPER_NOC_LATENCY,  # estimate: see _HOPPER_NOC_LATENCY
        gpcs=8,                            # [H100-WP] 8 GPCs (GH100); [MEAS-MERGE] the SMs clusters run on fall into 8 groups of 8-18 and some of 2
        gpc_merge_window_cycles=0.0,       # [MEAS-MERGE] off: measured 750 (a TPC's second SM paced 0 / 495 / 990 / 1,980 cycles behind merges 1.00 / 0.77 / 0.22 / 0.00 of its reads); on, with the join below off, the L2-bound GEMMs come out 6-17% slow (docs/mechanisms_24.md section 37)
        gpc_merge_requests=4,              # [MEAS-MERGE] 8-18 SMs of a GPC in step: 0.26-0.28 lookups a sector; 2 / 4 SMs: 0.50 / 0.25
    ),
    launch=_LAUNCH,                        # estimates, see _LAUNCH
    limits=_limits(227),                   # [CUDA-PG] CC 9.0
    nvlink=_NVLINK4,                       # cited above
    pcie=_PCIE5,                           # [PCIE]; [NVL-H100]
    system=SystemSpec(
        gpu_count=1,                       # estimate: one GPU unless a system is asked for (--gpus, system.gpu_count)
        topology="nvswitch",               # [NVL-H100] HGX: every GPU's links into NVSwitch
        switch_latency_ns=250.0,           # estimate: one switch traversal, part of the peer latency
    ),
    nccl=_NCCL,                            # see _NCCL
    source="preset h100-datasheet (gpusim/specs/presets/hopper.py)",  # where these numbers are cited
)

H200 = GPUSpec(
    name="h200-datasheet",                 # preset name: the cited numbers alone
    marketing_name="NVIDIA H200 SXM 141GB",  # [H200-DS]
    compute_capability=(9, 0),             # [CUDA-PG]; [MEAS]
    sm_count=132,                          # [MEAS]; same GH100 configuration as H100 SXM5 [H200-DS]
    clocks=ClockSpec(
        sm_clock_mhz=1980.0,               # [MEAS] max boost, nvidia-smi and clock rate
        memory_clock_mhz=3201.0,           # [MEAS] nvidia-smi max memory clock
        tensor_clock_mhz=1800.0,           # [MEAS-CLK] H200: mma.sync loops 1797-1815 MHz (the H100 SXM's 1830 of [TC-WP] is not reached)
        l2_clock_mhz=1707.5,               # [MEAS-L2CLK] lts__cycles_elapsed.avg.per_second 1.703-1.709 GHz whatever the SM clock
    ),
    sm=_HOPPER_SM,                         # [H200-DS] H100 compute; [MEAS] same latencies and rates
    l1=_HOPPER_L1,                         # [MEAS] same L1 hit latency as H100
    tensor=_HOPPER_TENSOR,                 # [H200-DS] H100 compute
    l2=L2Spec(
        size_bytes=60 * MiB,               # [MEAS] 62914560; full GH100 [H100-WP]; see the module docstring
        slices=96,                         # estimate: 8 per 512-bit controller [SSB], 12 controllers [H100-WP]
        associativity=16,                  # estimate: undocumented
        line_bytes=128,                    # [NCU]
        sector_bytes=32,                   # [NCU]
        hit_latency_cycles=284,            # [MEAS] ld.global.cg chase over random lines (near hits: warmed copies)
        bandwidth_bytes_per_cycle_per_slice=57.4,  # [MEAS-XBAR] a L2 cycle: 132 SMs on regions of their own, 4,753 B a SM cycle at 1,978 MHz over 96 slices (49.5 B) at 1,707.5 MHz
        write_bandwidth_bytes_per_cycle_per_slice=37.7,  # [NCU-DATA] write_l2: 1.005 sectors/slice/SM cycle at 1,980 MHz (32.5 B), a L2 cycle
        atomic_latency_cycles=40,          # estimate: not measured
        atomic_unit_cycles_per_pass=1.40,  # [MEAS-ATOM] passes over the sectors of one granule: 1.39 (atomic_bins/i32_b32), 1.41 (i32_b8_s32B); validate calibrate fits it (histogram_global/large)
        atomic_unit_granule_bytes=256,     # [MEAS-ATOM-HASH] a 256-B chunk's atomics go to one unit; with the hash, hot sets of 1 line / 2 lines / 8 / 32 / 64 lines run 1 / 1 / 2 / 7.6 / 13-16 passes at a time [MEAS-ATOM] (atomic_bins i32_b32, _b8_s32B, _b8_s128B, _b32_s128B, _b256_s32B)
        atomic_unit_hash_masks=HOPPER_ATOMIC_HASH_MASKS,  # [MEAS-ATOM-HASH] chunks 512 B apart in one KiB share a unit (see above)
        atomic_units=0,                    # [MEAS-ATOM-HASH] each key its own unit: 80 measured, but a mixer over 80 would pair neighbouring chunks the GPU never pairs (l2_atomics.py)
        atomic_near_slice_cycles_per_pass=1.5,  # [MEAS-ATOM] no contention: 45 passes a cycle = 96 slices / (1.40 + 1.5 / 2), half the passes far (atomic_bins/i32_b131072); validate calibrate fits it (atomic_throughput/global_distinct)
        atomic_int_sector_interval_cycles=1.46,  # [MEAS-ATOM] one address, every SM: 1.46-1.48 cycles a pass (atomic_bins/i32_b1, atomic_hot/i32_a*_h1); validate calibrate fits it (atomic_throughput/global_same)
        atomic_float_sector_interval_cycles=3.5,  # [MEAS-ATOM] one address, float adds: 3.50 cycles a pass (atomic_hot/f32_a1_h1, f32_a32_h1, atomic_uniform/f32_s1)
        partitions=2,                      # [H100-WP] GH100's L2 in two partitions; [NCU-DATA] 1.50x lts sectors
        fabric_latency_cycles=_HOPPER_FABRIC_LATENCY,  # estimate: see _HOPPER_FABRIC_LATENCY
        fabric_bandwidth_bytes_per_cycle=2755.0,  # estimate: the far half of the slices' read total (96 x 57.4 / 2), a L2 cycle
        ecc_granule_bytes=32,              # [NCU-DATA] transpose_naive/large: a 4-B store takes 2 sector slots
        join_queued_reads=True,            # [MEAS-XBAR] every SM on one region: 0.30 lookups a sector; [MEAS-MERGE]: the GPUs merge within a GPC only (SMs of different GPCs 0.97-1.00), which this join does not keep to
        write_port=False,                  # [MEAS-L2FILL] tried True (docs/mechanisms_24.md section 27): the H200's stores mixed 8:1 with L2-resident loads right (-2%), 4:1 / 2:1 and held-out copies 15-30% fast
        far_writes_dirty_at_writer=False,  # [MEAS-SCATTER] off: tried in full simulation of the scatter probe (docs/mechanisms_24.md section 47), its DRAM bytes right above the L2 knee, its time not
        requests_per_cycle_per_slice=0.92,  # [MEAS-L2REQ] 1-sector requests: 151.4 a ns over 96 slices at 1,707.5 MHz (0.924); 2 and 4 sectors: the bytes' peak
        fill_cost_bytes_per_byte=0.4,      # [MEAS-L2FILL] L2-resident loads mixed 8:1, 4:1, 2:1 with streamed ones: the slices' lookups fall as the fills rise, as if a byte filled took 0.3-0.5 of a byte looked up
        write_miss_read_wait_ns_per_gline_per_s=12.7,  # [MEAS-WMISS] read misses 198 / 195 cycles longer per TB/s of 128-B stores that allocate their line (7.81 G lines a second; copy_latency_h200_run5.json / _run6.json, store_beside); 32-B stores cost as much a line allocated, stores that hit none
        partial_lines_per_slice=550,       # [MEAS-PARTIAL] about 53 K lines with partly written sectors kept GPU-wide (96 slices), the rest completed by DRAM read-modify-writes
    ),
    hbm=HBMSpec(
        stacks=6,                          # estimate: 141 GB as six 24 GB HBM3e stacks on GH100's six sites [H100-WP]
        channels=188,                      # [JEDEC] 32-bit pseudo-channels in the 6016-bit bus [MEAS]
        bus_width_bits=6016,               # [MEAS] cudaDevAttrGlobalMemoryBusWidth
        bandwidth_GBps=4800.0,             # [H200-DS] 4.8 TB/s; [MEAS] 6016/8 x 2 x 3201 MHz = 4815
        capacity_bytes=150109880320,       # [MEAS] totalGlobalMem of the 141 GB part [H200-DS]
        latency_ns=205.0,                  # [MEAS] DRAM 690.8 - L2 284.4 = 406 cycles at 1980 MHz
        access_granularity_bytes=64,       # estimate: as H100
        min_access_bytes=64,               # [MEAS-DRAM64] as H100 (the H200's stride_write/s128B against s32B)
        banks_per_channel=32,              # [SNPS] 16 banks per 4 dies: 8-high stacks (estimate: 24 GB as 8 x 24 Gb)
        row_bytes=1024,                    # [JEDEC] JESD238 1 KB page per pseudo-channel
        channel_interleave_bytes=256,      # estimate: 256-B channel chunks (a stream's rows still open; undocumented)
        t_rcd_ns=14.0,                     # [DRAMSIM3] HBM2 tRCD; HBM3e's array timing taken as equal (estimate)
        t_rp_ns=14.0,                      # [DRAMSIM3] HBM2 tRP
        t_ras_ns=34.0,                     # [DRAMSIM3] HBM2 tRAS
        t_wr_ns=16.0,                      # [DRAMSIM3] HBM2 tWR
        t_ccd_l_ns=2.0,                    # [DRAMSIM3] HBM2 tCCD_L, 2 tCK
        t_wtr_ns=30.0,                     # estimate: HBM2's 22 [DRAMSIM3] longer at 6.4 Gb/s; fits [NCU-DATA] copy_hbm
        t_rtw_ns=2.0,                      # estimate: 2 tCK of bus turnaround [DRAMSIM3], read data to write data
        t_faw_ns=16.0,                     # estimate: as H100; validate calibrate fits it (random_access/read)
        write_activation_share=1.45,       # [MEAS-DRAMW] random whole-sector writes 30.1 G bursts/s, reads of the same bursts 38.6 G
        t_refi_ns=3900.0,                  # [DRAMSIM3] tREFI 3.9 us
        t_rfc_ns=265.0,                    # [MEAS-TMA] fitted: the wait for a refresh in progress in 2-D TMA boxes' latency
        write_queue_bursts=16,             # estimate: controller write drain; fitted to [NCU-DATA] copy_hbm
    ),
    noc=NoCSpec(
        bandwidth_bytes_per_cycle=11520.0,  # estimate: above the 11,449 B a SM cycle 132 SMs pulled from one region [MEAS-XBAR]
        latency_cycles=_HOPPER_NOC_LATENCY,  # estimate: see _HOPPER_NOC_LATENCY
        gpcs=8,                            # [H100-WP] 8 GPCs (GH100); [MEAS-MERGE] the SMs clusters run on fall into 8 groups of 8-18 and some of 2
        gpc_merge_window_cycles=0.0,       # [MEAS-MERGE] off: measured 750 (a TPC's second SM paced 0 / 495 / 990 / 1,980 cycles behind merges 1.00 / 0.77 / 0.22 / 0.00 of its reads); on, with the join below off, the L2-bound GEMMs come out 6-17% slow (docs/mechanisms_24.md section 37)
        gpc_merge_requests=4,              # [MEAS-MERGE] 8-18 SMs of a GPC in step: 0.26-0.28 lookups a sector; 2 / 4 SMs: 0.50 / 0.25
    ),
    launch=_LAUNCH,                        # estimates, see _LAUNCH
    limits=_limits(227),                   # [CUDA-PG] CC 9.0; [MEAS] 232448
    nvlink=_NVLINK4,                       # cited above; [MEAS-NVL] 18 links at 26.562 GB/s
    pcie=_PCIE5,                           # [PCIE]; [H200-DS]
    system=SystemSpec(
        gpu_count=1,                       # estimate: one GPU unless a system is asked for
        topology="nvswitch",               # [NVL-H100] HGX H200; [MEAS-NVL] NV18 between every pair
        switch_latency_ns=250.0,           # estimate: one switch traversal, part of the peer latency
    ),
    nccl=_NCCL,                            # see _NCCL
    source="preset h200-datasheet (gpusim/specs/presets/hopper.py): H100 compute, H200 memory",  # where these numbers are cited
)
