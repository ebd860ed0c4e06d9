"""Named GPU presets: h100, h200, a100, v100. Every number cites its source in the
comment on its line; variants come from `overrides.apply` or `dataclasses.replace`,
never by editing a preset.

What it models: the parts list the simulator reads (SM count, clocks, per-SM limits,
pipeline issue intervals and latencies, cache geometry and latencies, HBM). What it
does not: clusters, MIG, power or clock throttling (clocks are the
maximum boost the GPU ran at).

Sources (the tags the comments use):
- [V100-WP] NVIDIA Tesla V100 GPU Architecture whitepaper (2017): Table 1, Volta SM section
  (per SM partition 16 FP32, 8 FP64, 16 INT32; per SM 32 LD/ST, 16 SFU), 6144 KB L2,
  4 HBM2 stacks, 8 512-bit controllers, 900 GB/s.
- [A100-WP] NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): Table 3 and the SM
  section (64 FP32, 64 INT32, 32 FP64 per SM in 4 partitions; 192 KB L1/shared); 40 MB L2
  whose read bandwidth is 5120 B/clk against V100's 2048 (2.3x at their clocks).
- [A100-DS] NVIDIA A100 datasheet: A100 80GB SXM, 80 GB HBM2e, 2,039 GB/s.
- [H100-WP] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): Table 3 and the SM
  section (128 FP32, 64 INT32, 64 FP64 per SM; 256 KB L1/shared); H100 SXM5: 132 SMs,
  50 MB L2, 5 HBM3 stacks, 10 512-bit controllers, 3352 GB/s; full GH100: 60 MB L2, 12
  controllers, 6 HBM sites.
- [H100-DS] NVIDIA H100 datasheet: SXM 80 GB at 3.35 TB/s; FP32 67, FP64 34 TFLOP/s.
- [H200-DS] NVIDIA H200 datasheet (2024): 141 GB HBM3e at 4.8 TB/s; compute as H100 SXM.
- [CUDA-PG] CUDA C++ Programming Guide: "Technical Specifications per Compute Capability";
  arithmetic-instruction throughput table (results per clock per SM for CC 7.0/8.0/9.0:
  fp32 64/64/128, fp64 32/32/64, fp16 128/256/256, int32 64, special functions 16, warp
  shuffle 32); compute-capability sections (carve-outs; 1 KB reserved per block from 8.0).
- [OCC] cuda_occupancy.h (CUDA 13.0): shared allocation granularity (256 B for CC 7, 128 B
  for 8 and 9), register allocation 256 per warp, 4 sub-partitions (so warps are allocated
  in 4s), 32 blocks per SM for 7.0/8.0/9.0, and the carve-out sizes.
- [NCU] Nsight Compute Kernel Profiling Guide, Memory Tables: L1 and L2 lines are 128 B of
  four 32-B sectors.
- [NV-FORUM] NVIDIA developer forums, answers by NVIDIA's G. Smith on L1TEX ("Pascal L1
  cache", "How does the LSU execute load/store instructions in the Ampere architecture"):
  on GV100 and later the L1TEX tag stage resolves 4 sets x 4 sectors per cycle and keeps
  generating wavefronts until every thread of the request is handled.
- [JEDEC] JESD235 (HBM2/2E: 16 pseudo-channels of 64 bits per stack) and JESD238 (HBM3:
  32 pseudo-channels of 32 bits per stack).
- [Jia18] Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking"
  (arXiv:1804.06826): V100 L1 hit 28, shared 19, L2 hit 193 cycles. Recalled: the report
  was not reachable from here; [DEWING]'s V100 L1 figure is 28 plus its 8-cycle loop.
- [Arafa19] Arafa et al., "Low Overhead Instruction Latency Characterization for NVIDIA
  GPGPUs" (HPEC 2019), Volta table as shipped in PPT-GPU's arch_latencies_config.py:
  add/fma 4, dfma 8, hfma 6, ex2 22 cycles (PTX level).
- [Abdelkhalik22] Abdelkhalik et al., "Demystifying the Nvidia Ampere Architecture through
  Microbenchmarking and Instruction-level Analysis" (HPEC 2022, arXiv:2208.11174), A100:
  L1 33, L2 200, global 290, shared load 23 cycles; FP32 add/fma 4. Read in a summary that
  quotes the paper (a GPU MODE lecture's notes); the paper was not reachable from here.
- [Luo24] Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture"
  (IPDPS 2024): their Fig. 1 SM partition (16 INT32, 32 FP32, 16 FP64, 8 LD/ST) matches
  [H100-WP]; their latencies are of an H800 PCIe, so the Hopper presets use [MEAS].
- [NCU-PIPES] Nsight Compute Kernel Profiling Guide, "Pipelines", and NVIDIA's forum answer
  quoted in gpusim/frontend/sass/opcodes.py: GH100 and GA10x have two FP32 pipes, fmaheavy
  (also IMAD) and fmalite, 16 lanes each per SMSP; GA100 and GV100 one FMA pipe for FP32
  and IMAD; Hopper runs FP16x2 on the FMA pipes, GA100/GV100 on an fp16 pipe. Checked on
  this project's H100/H200 per-pipe counters (benchmarks/sass_pipes.py).
- [MEAS] measured by this project on this workplace's H100 80GB HBM3 (SXM5) and H200,
  2026-11-21, clocks as found (SM at 1980 MHz while running): one-thread pointer chases
  (clock64) and dependent/independent instruction chains: ubench.cu and its outputs
  ubench_h100.txt, ubench_h200.txt (committed beside the validation data). H100 | H200:
  shared 23 | 23, L1 hit 32 | 32, L2 hit (ld.cg, random lines) 276 | 284, DRAM 680-691 |
  689-697 cycles; FFMA 4.1, DFMA 8.1, IMAD 4.1, SHF 4.2, HFMA2 8.1, MUFU.EX2 19.0, SHFL
  26.0 cycles latency; issue intervals per SMSP FFMA 1.03, DFMA 2.03, IMAD 2.00, SHF 2.02,
  HFMA2 1.09, MUFU 8.00, SHFL 4.00 cycles; __syncthreads 20.7 cycles with 4 warps; device
  attributes clock 1980 MHz, memory clock 2619 | 3201 MHz, bus 5120 | 6016 bits, L2
  52428800 | 62914560 B, memory 85017493504 | 150109880320 B, shared per SM 233472,
  opt-in 232448, reserved per block 1024.
- [MEAS-FE] measured by this project on the H200, 2026-11-22: ubench_frontend.cu and its output
  ubench_frontend_h200.txt (beside the validation data): a dependent indexed constant load
  (IMAD.SHL + LDC c[0x3][R]) 34.0 cycles; 2048 independent FADDs (256 instruction lines)
  4494 cycles on first execution and 2307 once the code is cached.
- [MEAS-ATOM] this project's mechanism microbenchmarks of global atomics
  (validate/mechanisms/atomics.py) measured with Nsight Compute on the H200 and the H100,
  validate/data/h200_mechanisms.json and h100_mechanisms.json (docs/mechanisms_24.md):
  `lts__d_atomic_input_cycles_active` equals the passes (at most one lane per address a
  sector) on every size; SM cycles per pass GPU-wide by hot set (H200; H100 within 3%).
- [DEWING] github.com/markdewing/AI_kernels latency/README.md: V100 chase L1 36, L2 221,
  memory 460 cycles; GH200 L1 40, L2 281, memory 690 (8 above [MEAS] on a Hopper L1).
- [SSB] github.com/smallscientist1/cuda_microbenchmark: A100 has 8 L2 slices per
  framebuffer partition, 10 partitions (ncu); H100 SXM5 L2 reads at 8.4 TB/s (cp.async).
- [NCU-DATA] this project's Nsight Compute measurements, validate/data/h100.json and
  h200.json (161 kernels each): lts__t_sectors_op_* are 1.50x the L1's miss and store
  sectors (the far L2 partition counts them again); bandwidth/write_l2 keeps 1.09 (H100)
  and 1.005 (H200) lts write sectors per slice per cycle busy; transpose_naive/large's
  4-byte stores run at half that.
- [DRAMSIM3] DRAMsim3 (github.com/umd-memsys/DRAMsim3) configs/HBM2_8Gb_x128.ini (tCK 1 ns):
  tRCD 14, tRP 14, tRAS 34, tWR 16, tCCD_L 2, tWTR_L 8, CL 14, CWL 4 ns, tREFI 3.9 us,
  4 bank groups of 4 banks.
- [RAM2] Ramulator 2 (github.com/CMU-SAFARI/ramulator2) src/dram/impl/HBM3.cpp: all-bank
  refresh tRFC 160 / 260 / 350 / 450 ns for 2 / 4 / 8 / 16 Gb dies.
- [SNPS] Synopsys technical bulletin "HBM3 IP" (2022): JESD238 HBM3 has 48 banks per
  pseudo-channel in a 12-high stack and 64 in a 16-high one (16 per four dies).
- [NVL-H100] NVIDIA H100 whitepaper and datasheet: fourth-generation NVLink, 18 links per
  GPU, 900 GB/s total (450 per direction); HGX H100/H200 8-GPU boards join every GPU's 18
  links to four third-generation NVSwitch chips. [H200-DS]: H200 SXM has the same 900 GB/s
  NVLink; PCIe Gen5 128 GB/s (64 per direction) for both.
- [NVL-A100] [A100-WP]: third-generation NVLink, 12 links, 600 GB/s total (25 GB/s per link
  per direction); HGX A100 8-GPU boards use six second-generation NVSwitch chips; PCIe Gen4.
- [NVL-V100] [V100-WP]: second-generation NVLink, 6 links, 300 GB/s total (25 GB/s per link
  per direction); DGX-1 joins 8 V100s in a hybrid cube-mesh of direct links (no switch);
  PCIe Gen3 x16 (16 GB/s per direction).
- [PCIE] PCI-SIG: Gen3 8 GT/s, Gen4 16 GT/s, Gen5 32 GT/s per lane, 128b/130b coding; x16
  payload about 15.75 / 31.5 / 63 GB/s per direction before packet overhead.
- [MEAS-NVL] measured by this project on this workplace's 4 x H200 machine, 2026-11-22
  (validate/data/h200x4_multi.json, `python -m validate measure-multi`): `nvidia-smi
  topo -m` NV18 between every pair, `nvidia-smi nvlink -s` 18 links at 26.562 GB/s; a
  peer copy 0 -> 1 of 1 GiB at 396 GB/s (0.83 of 18 x 26.5625); NCCL 2.28.9 builds 24
  channels, chooses Ring always (NVLS off), LL/LL128/Simple by size; its log and the
  forced-protocol runs give the NCCL figures of the calibrated h200 preset.
- [NCCL-ISSUES] NCCL's maintainer (S. Jeaugey) in NVIDIA/nccl issues: #181 and #689 (NCCL's
  blocks use all of an SM's registers: 640 threads at -maxrregcount 96, so they never share an
  SM with a compute kernel), #1428 (a collective's DRAM traffic is "at least 2x" its link
  bandwidth, "it can be 3x" with the user's buffers).
- [TC-WP] tensor throughput per SM per cycle, from the whitepapers' dense tensor TFLOP/s
  divided by SMs x the clock they are quoted at: [H100-WP] H100 SXM5 989.4 FP16/BF16, 494.7
  TF32, 1978.9 FP8 TFLOP/s and 1978.9 INT8 TOPS = 132 SMs x 1830 MHz x 4096 / 2048 / 8192 /
  8192; FP64 tensor 66.9 TFLOP/s = 132 x 1980 MHz x 256 (the whitepaper quotes FP64 at the
  1980 MHz boost); [A100-WP] 312 FP16, 156 TF32, 624 INT8, 19.5 FP64 = 108 x 1410 MHz x 2048
  / 1024 / 4096 / 128, no FP8; [V100-WP] 125 TFLOP/s FP16 = 80 x 1530 MHz x 1024, no TF32,
  FP8, INT8 (Turing's) or FP64 tensor instructions. [H200-DS]: the same GH100 SMs.
- [TC-LAT] tensor instruction latencies: estimates of the order the microbenchmark papers
  report for dependent chains (Sun et al., "Dissecting Tensor Cores via Microbenchmarks",
  IEEE TPDS 2023, arXiv:2206.02874, on A100; [Luo24] on an H800 for mma.sync and wgmma):
  about 33 cycles for HMMA m16n8k16, about 128 for HGMMA 64x128x16; the papers' tables were
  not reachable from here, and validate/tensor_timing measures them on the H100/H200.
- [MEAS-TC] validate/data/tensor_timing_h100.json (validate/tensor_timing, an H100 SXM,
  2026-11-23): an f16 m16n8k16 mma.sync dependent chain 24.3 cycles per instruction (bf16,
  tf32 m16n8k8, s8 m16n8k32 the same); one warpgroup's group of four 64x128x16 f16 wgmma
  (committed, waited) 312.8 cycles, 120.4 of them the last one's latency at the measured
  4,087 FLOP/cycle/SM (which confirms [TC-WP]'s 4096; FP8 and INT8 wgmma 8,174 of 8192).
  The cp.async round trip (16 B per thread, L2-resident source, one warp, committed and
  waited each iteration) 361.5 cycles against 293.8 for the same loop with the round trip
  of a load: 68 cycles from the sectors' return to the group's completion (the bytes'
  write into shared memory through the L1's data path, and the arrival).
- "estimate": a modelling choice or extrapolation; the comment says from what.

H200's L2 is 60 MiB: the device reports 62914560 B [MEAS] (PyTorch said 60 MB on these
H200s and 50 MB on the H100s), the full GH100 die has 60 MB beside 12 memory controllers
[H100-WP], and H200's six HBM3e stacks use all twelve where H100 SXM5 enables ten and 50 MB.
The H200 datasheet states no L2 size.
"""
from __future__ import annotations

from gpusim.errors import ConfigError
from gpusim.specs.describe import describe  # noqa: F401  (re-exported: presets.describe(spec))
from gpusim.specs.gpu import GPUSpec
from gpusim.specs.interconnect import NCCLSpec, NVLinkSpec, PCIeSpec, SystemSpec
from gpusim.specs.limits import LaunchLimits
from gpusim.specs.tensor import TensorSpec
from gpusim.specs.units import (KiB, ClockSpec, HBMSpec, L1Spec, L2Spec, LaunchSpec, NoCSpec, PipeSpec as P,
                                PipesSpec, SMSpec)

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


# ----------------------------------------------------------------------------------- Hopper (sm_90)
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
    barrier_latency_cycles=20,             # [MEAS] 20.7 cycles per __syncthreads with 4 warps
    instruction_cache_line_bytes=128,  # [Jia18] 128-B instruction-cache lines (Volta L0/L1 i-caches)
    instruction_prefetch_lines=32,  # [MEAS-FE] a depth below 17 lines (L2 latency / 16.5 cycles per line) would not sustain the measured cold fetch rate
    instruction_fetch_bytes_per_cycle=7.76,  # [MEAS-FE] 128-B line per 16.5 cycles, cold straight-line code on H200
    constant_cache_line_bytes=64,  # [Jia18] 64-B lines in the constant caches
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
        uniform=P(1.0, 4),                 # estimate: one uniform instruction per cycle per SMSP, latency as the ALU
        tex=P(4.0, 4),                     # estimate: as the LSU's issue; latency from the memory units
    ),
    warp_scheduler="gto",                  # estimate: policy choice; NVIDIA does not document its scheduler
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
    cp_async_fill_cycles=68.0,                 # [MEAS-TC] cp.async.cg 16 B round trip from the L2, one warp: 361.5 cycles, 293.8 without it
)
_HOPPER_L1 = L1Spec(
    line_bytes=128,                        # [NCU]
    sector_bytes=32,                       # [NCU]
    associativity=4,                       # estimate: undocumented; the model's choice
    hit_latency_cycles=32,                 # [MEAS] ld.global.ca chase, H100 and H200
    mshr_entries=1024,                     # estimate: undocumented; Little's law on the measured 4.1 TB/s H200
    #                                        stream read (validate/data/h200.json) needs > 350 sectors in flight per SM
    bandwidth_bytes_per_cycle=128,         # estimate: one 128-B wavefront per cycle, as shared memory
    tag_banks=4,                           # [NV-FORUM] GV100+ tag stage: 4 sets x 4 sectors per cycle; bank = line mod 4
    #                                        is the model's choice, fits [NCU-DATA] gemv_rowmajor (0.94 lines/cycle)
    write_allocate=False,                  # estimate: global stores write through to L2 ([Jia18] on Volta)
)
_HOPPER_NOC_LATENCY = 20                   # estimate: one crossbar traversal, part of the L2 hit latency
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

H100 = GPUSpec(
    name="h100-datasheet",                 # preset name: the cited numbers alone
    marketing_name="NVIDIA H100 SXM5 80GB",  # [H100-WP]
    compute_capability=(9, 0),             # [CUDA-PG]
    sm_count=132,                          # [H100-WP] Table 3, SXM5; [MEAS]
    clocks=ClockSpec(
        sm_clock_mhz=1980.0,               # [MEAS] max boost (clock rate 1980000 kHz; the whitepaper had none final)
        memory_clock_mhz=2619.0,           # [MEAS] = 3352 GB/s / (5120 bits / 8 x 2)
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
        bandwidth_bytes_per_cycle_per_slice=53.0,  # [SSB] L2-resident reads at 8.4 TB/s over 80 slices
        write_bandwidth_bytes_per_cycle_per_slice=35.0,  # [NCU-DATA] write_l2: 1.09 sectors/slice/cycle
        atomic_latency_cycles=40,          # estimate: not measured
        atomic_unit_cycles_per_pass=1.40,  # [MEAS-ATOM] passes over the sectors of one granule: 1.39 (atomic_bins/i32_b32), 1.41 (i32_b8_s32B); validate calibrate fits it (histogram_global/large)
        atomic_unit_granule_bytes=512,     # [MEAS-ATOM] hot sets of 1 line / 2 lines / 8 / 32 / 64 lines run 1 / 1 / 2 / 7.6 / 13-16 passes at a time (atomic_bins i32_b32, _b8_s32B, _b8_s128B, _b32_s128B, _b256_s32B)
        atomic_near_slice_cycles_per_pass=1.5,  # [MEAS-ATOM] no contention: 45 passes a cycle = 96 slices / (1.40 + 1.5 / 2), half the passes far (atomic_bins/i32_b131072); validate calibrate fits it (atomic_throughput/global_distinct)
        atomic_int_sector_interval_cycles=1.46,  # [MEAS-ATOM] one address, every SM: 1.46-1.48 cycles a pass (atomic_bins/i32_b1, atomic_hot/i32_a*_h1); validate calibrate fits it (atomic_throughput/global_same)
        atomic_float_sector_interval_cycles=3.5,  # [MEAS-ATOM] one address, float adds: 3.50 cycles a pass (atomic_hot/f32_a1_h1, f32_a32_h1, atomic_uniform/f32_s1)
        partitions=2,                      # [H100-WP] L2 in two partitions; [NCU-DATA] 1.50x lts sectors
        fabric_latency_cycles=_HOPPER_FABRIC_LATENCY,  # estimate: see _HOPPER_FABRIC_LATENCY
        fabric_bandwidth_bytes_per_cycle=2120.0,  # estimate: the far half of the slices' read total (80 x 53 / 2)
        ecc_granule_bytes=32,              # [NCU-DATA] transpose_naive/large: a 4-B store takes 2 sector slots
    ),
    hbm=HBMSpec(
        stacks=5,                          # [H100-WP] five HBM3 stacks
        channels=160,                      # [JEDEC] 32 pseudo-channels per HBM3 stack x 5
        bus_width_bits=5120,               # [H100-WP] 10 x 512-bit controllers; [MEAS]
        bandwidth_GBps=3352.0,             # [H100-WP] Table 3; [H100-DS] 3.35 TB/s
        capacity_bytes=85017493504,        # [MEAS] totalGlobalMem of the 80 GB part [H100-DS]
        latency_ns=204.0,                  # [MEAS] DRAM 680.7 - L2 276.0 = 405 cycles at 1980 MHz
        access_granularity_bytes=64,       # estimate: 32-B bursts [JEDEC] fetched in pairs (sector promotion)
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
        t_refi_ns=3900.0,                  # [DRAMSIM3] tREFI 3.9 us
        t_rfc_ns=450.0,                    # [RAM2] 16 Gb dies (16 GB 8-high HBM3 stacks [H100-WP])
        write_queue_bursts=16,             # estimate: controller write drain; fitted to [NCU-DATA] copy_hbm
    ),
    noc=NoCSpec(
        bandwidth_bytes_per_cycle=5120.0,  # estimate: the L2 slices' total; [SSB] reads 8.4 TB/s = 4260 B/cycle
        latency_cycles=_HOPPER_NOC_LATENCY,  # estimate: see _HOPPER_NOC_LATENCY
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
    source="preset h100-datasheet (gpusim/specs/presets.py)",  # where these numbers are cited
)

H200 = GPUSpec(
    name="h200-datasheet",                 # preset name: the cited numbers alone
    marketing_name="NVIDIA H200 SXM 141GB",  # [H200-DS]
    compute_capability=(9, 0),             # [CUDA-PG]; [MEAS]
    sm_count=132,                          # [MEAS]; same GH100 configuration as H100 SXM5 [H200-DS]
    clocks=ClockSpec(
        sm_clock_mhz=1980.0,               # [MEAS] max boost, nvidia-smi and clock rate
        memory_clock_mhz=3201.0,           # [MEAS] nvidia-smi max memory clock
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
        bandwidth_bytes_per_cycle_per_slice=53.0,  # estimate: as H100 [SSB]
        write_bandwidth_bytes_per_cycle_per_slice=32.5,  # [NCU-DATA] write_l2: 1.005 sectors/slice/cycle
        atomic_latency_cycles=40,          # estimate: not measured
        atomic_unit_cycles_per_pass=1.40,  # [MEAS-ATOM] passes over the sectors of one granule: 1.39 (atomic_bins/i32_b32), 1.41 (i32_b8_s32B); validate calibrate fits it (histogram_global/large)
        atomic_unit_granule_bytes=512,     # [MEAS-ATOM] hot sets of 1 line / 2 lines / 8 / 32 / 64 lines run 1 / 1 / 2 / 7.6 / 13-16 passes at a time (atomic_bins i32_b32, _b8_s32B, _b8_s128B, _b32_s128B, _b256_s32B)
        atomic_near_slice_cycles_per_pass=1.5,  # [MEAS-ATOM] no contention: 45 passes a cycle = 96 slices / (1.40 + 1.5 / 2), half the passes far (atomic_bins/i32_b131072); validate calibrate fits it (atomic_throughput/global_distinct)
        atomic_int_sector_interval_cycles=1.46,  # [MEAS-ATOM] one address, every SM: 1.46-1.48 cycles a pass (atomic_bins/i32_b1, atomic_hot/i32_a*_h1); validate calibrate fits it (atomic_throughput/global_same)
        atomic_float_sector_interval_cycles=3.5,  # [MEAS-ATOM] one address, float adds: 3.50 cycles a pass (atomic_hot/f32_a1_h1, f32_a32_h1, atomic_uniform/f32_s1)
        partitions=2,                      # [H100-WP] GH100's L2 in two partitions; [NCU-DATA] 1.50x lts sectors
        fabric_latency_cycles=_HOPPER_FABRIC_LATENCY,  # estimate: see _HOPPER_FABRIC_LATENCY
        fabric_bandwidth_bytes_per_cycle=2544.0,  # estimate: the far half of the slices' read total (96 x 53 / 2)
        ecc_granule_bytes=32,              # [NCU-DATA] transpose_naive/large: a 4-B store takes 2 sector slots
    ),
    hbm=HBMSpec(
        stacks=6,                          # estimate: 141 GB as six 24 GB HBM3e stacks on GH100's six sites [H100-WP]
        channels=188,                      # [JEDEC] 32-bit pseudo-channels in the 6016-bit bus [MEAS]
        bus_width_bits=6016,               # [MEAS] cudaDevAttrGlobalMemoryBusWidth
        bandwidth_GBps=4800.0,             # [H200-DS] 4.8 TB/s; [MEAS] 6016/8 x 2 x 3201 MHz = 4815
        capacity_bytes=150109880320,       # [MEAS] totalGlobalMem of the 141 GB part [H200-DS]
        latency_ns=205.0,                  # [MEAS] DRAM 690.8 - L2 284.4 = 406 cycles at 1980 MHz
        access_granularity_bytes=64,       # estimate: as H100
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
        t_refi_ns=3900.0,                  # [DRAMSIM3] tREFI 3.9 us
        t_rfc_ns=450.0,                    # [RAM2] 16 Gb dies; 24 Gb ones not listed (estimate: as 16 Gb)
        write_queue_bursts=16,             # estimate: controller write drain; fitted to [NCU-DATA] copy_hbm
    ),
    noc=NoCSpec(
        bandwidth_bytes_per_cycle=6144.0,  # estimate: the L2 slices' total
        latency_cycles=_HOPPER_NOC_LATENCY,  # estimate: see _HOPPER_NOC_LATENCY
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
    source="preset h200-datasheet (gpusim/specs/presets.py): H100 compute, H200 memory",  # where these numbers are cited
)

# ----------------------------------------------------------------------------------- Ampere (sm_80)
A100 = GPUSpec(
    name="a100-datasheet",                 # preset name: the cited numbers alone
    marketing_name="NVIDIA A100 SXM4 80GB",  # [A100-DS]
    compute_capability=(8, 0),             # [CUDA-PG]
    sm_count=108,                          # [A100-WP] Table 3
    clocks=ClockSpec(
        sm_clock_mhz=1410.0,               # [A100-WP] boost clock
        memory_clock_mhz=1593.0,           # [A100-DS] derived: 2039 GB/s / (5120 bits / 8 x 2)
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
        barrier_latency_cycles=20,         # estimate: Hopper's [MEAS]
        instruction_cache_line_bytes=128,  # [Jia18] 128-B instruction-cache lines (Volta L0/L1 i-caches)
        instruction_prefetch_lines=32,  # [MEAS-FE] a depth below 17 lines (L2 latency / 16.5 cycles per line) would not sustain the measured cold fetch rate
        instruction_fetch_bytes_per_cycle=7.76,  # [MEAS-FE] 128-B line per 16.5 cycles, cold straight-line code on H200
        constant_cache_line_bytes=64,  # [Jia18] 64-B lines in the constant caches
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
            uniform=P(1.0, 4),             # estimate: as Hopper
            tex=P(4.0, 4),                 # estimate: as the LSU's issue
        ),
        warp_scheduler="gto",              # estimate: policy choice
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
        cp_async_fill_cycles=68.0,                 # estimate: as Hopper's [MEAS-TC] (cp.async from sm_80)
    ),
    l1=L1Spec(
        line_bytes=128,                    # [NCU]
        sector_bytes=32,                   # [NCU]
        associativity=4,                   # estimate: undocumented
        hit_latency_cycles=33,             # [Abdelkhalik22]
        mshr_entries=256,                  # estimate: undocumented
        bandwidth_bytes_per_cycle=128,     # estimate: one 128-B wavefront per cycle
        tag_banks=4,                       # [NV-FORUM] GV100+: 4 sets x 4 sectors per cycle
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
        atomic_unit_granule_bytes=512,     # estimate: as Hopper [MEAS-ATOM]
        atomic_near_slice_cycles_per_pass=1.5,  # estimate: as Hopper [MEAS-ATOM]
        atomic_int_sector_interval_cycles=1.46,  # estimate: as Hopper [MEAS-ATOM]
        atomic_float_sector_interval_cycles=3.5,  # estimate: as Hopper [MEAS-ATOM]
        partitions=2,                      # [A100-WP] L2 divided into two partitions
        fabric_latency_cycles=100,         # estimate: as Hopper
        fabric_bandwidth_bytes_per_cycle=2560.0,  # estimate: the far half of the slices' total (5120 / 2)
        ecc_granule_bytes=32,              # estimate: as Hopper [NCU-DATA]
    ),
    hbm=HBMSpec(
        stacks=5,                          # [A100-WP] five active HBM2e stacks
        channels=80,                       # [JEDEC] 16 pseudo-channels per HBM2e stack x 5
        bus_width_bits=5120,               # [A100-WP] 10 x 512-bit controllers
        bandwidth_GBps=2039.0,             # [A100-DS] 2,039 GB/s
        capacity_bytes=80 * GiB,           # [A100-DS] nominal 80 GB; the driver reports a little less
        latency_ns=180.0,                  # estimate: between V100 [DEWING] and H100 [MEAS]; see below
        access_granularity_bytes=64,       # estimate: as H100
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
        t_refi_ns=3900.0,                  # [DRAMSIM3] tREFI 3.9 us
        t_rfc_ns=450.0,                    # [RAM2] 16 Gb dies (16 GB 8-high HBM2e stacks [A100-DS])
        write_queue_bursts=16,             # estimate: as Hopper, undocumented
    ),
    noc=NoCSpec(
        bandwidth_bytes_per_cycle=5120.0,  # [A100-WP] L2 read bandwidth 5120 B/clk
        latency_cycles=20,                 # estimate: part of the L2 hit latency
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
    source="preset a100-datasheet (gpusim/specs/presets.py)",  # where these numbers are cited
)
# A100 HBM latency: [Abdelkhalik22]'s global 290 vs L2 200 cycles would leave only 64 ns
# beyond an L2 hit, far under V100's ~156 ns [DEWING] and H100's 204 ns [MEAS]; not used.

# ----------------------------------------------------------------------------------- Volta (sm_70)
V100 = GPUSpec(
    name="v100-datasheet",                 # preset name: the cited numbers alone
    marketing_name="NVIDIA Tesla V100 SXM2 32GB",  # [V100-WP]
    compute_capability=(7, 0),             # [CUDA-PG]
    sm_count=80,                           # [V100-WP] Table 1
    clocks=ClockSpec(
        sm_clock_mhz=1530.0,               # [V100-WP] Table 1 boost clock
        memory_clock_mhz=877.0,            # estimate: what V100 boards report (recalled); [V100-WP] 900 GB/s gives 879
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
        barrier_latency_cycles=20,         # estimate: Hopper's [MEAS]
        instruction_cache_line_bytes=128,  # [Jia18] 128-B instruction-cache lines (Volta L0/L1 i-caches)
        instruction_prefetch_lines=32,  # [MEAS-FE] a depth below 17 lines (L2 latency / 16.5 cycles per line) would not sustain the measured cold fetch rate
        instruction_fetch_bytes_per_cycle=7.76,  # [MEAS-FE] 128-B line per 16.5 cycles, cold straight-line code on H200
        constant_cache_line_bytes=64,  # [Jia18] 64-B lines in the constant caches
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
        ),
        warp_scheduler="gto",              # estimate: policy choice
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
        cp_async_fill_cycles=0.0,                  # [CUDA-PG] no cp.async before sm_80, unused
    ),
    l1=L1Spec(
        line_bytes=128,                    # [NCU]
        sector_bytes=32,                   # [NCU]
        associativity=4,                   # estimate: undocumented
        hit_latency_cycles=28,             # [Jia18]; [DEWING] 36 with its 8-cycle loop
        mshr_entries=256,                  # estimate: undocumented
        bandwidth_bytes_per_cycle=128,     # estimate: one 128-B wavefront per cycle
        tag_banks=4,                       # [NV-FORUM] GV100+: 4 sets x 4 sectors per cycle
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
        atomic_unit_granule_bytes=512,     # estimate: as Hopper [MEAS-ATOM]
        atomic_near_slice_cycles_per_pass=1.5,  # estimate: as Hopper [MEAS-ATOM]
        atomic_int_sector_interval_cycles=1.46,  # estimate: as Hopper [MEAS-ATOM]
        atomic_float_sector_interval_cycles=3.5,  # estimate: as Hopper [MEAS-ATOM]
        partitions=1,                      # [V100-WP] one L2 shared by all SMs
        fabric_latency_cycles=100,         # estimate: unused with one partition
        fabric_bandwidth_bytes_per_cycle=1024.0,  # estimate: unused with one partition
        ecc_granule_bytes=32,              # estimate: as Hopper [NCU-DATA]
    ),
    hbm=HBMSpec(
        stacks=4,                          # [V100-WP] four HBM2 stacks
        channels=64,                       # [JEDEC] 16 pseudo-channels per HBM2 stack x 4
        bus_width_bits=4096,               # [V100-WP] 8 x 512-bit controllers
        bandwidth_GBps=900.0,              # [V100-WP] 900 GB/s
        capacity_bytes=32 * GiB,           # [V100-WP] nominal 32 GB (SXM2 32GB part)
        latency_ns=156.0,                  # [DEWING] memory 460 - L2 221 = 239 cycles at 1530 MHz
        access_granularity_bytes=64,       # estimate: as H100
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
        t_refi_ns=3900.0,                  # [DRAMSIM3] tREFI 3.9 us
        t_rfc_ns=350.0,                    # [RAM2] 8 Gb dies (8 GB 4-high HBM2 stacks [V100-WP])
        write_queue_bursts=16,             # estimate: as Hopper, undocumented
    ),
    noc=NoCSpec(
        bandwidth_bytes_per_cycle=2048.0,  # [A100-WP] V100 L2 read bandwidth 2048 B/clk
        latency_cycles=20,                 # estimate: part of the L2 hit latency
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
    source="preset v100-datasheet (gpusim/specs/presets.py)",  # where these numbers are cited
)

DATASHEETS: dict[str, GPUSpec] = {p.name: p for p in (H100, H200, A100, V100)}
GPUS = ("h100", "h200", "a100", "v100")          # the short names a user types
PRESETS = DATASHEETS                             # the cited presets (calibrated ones are TOML files, calibrated/)
ALIASES = {f"{g}-calibrated": g for g in GPUS}   # earlier name of the calibrated presets


def get(name: str | GPUSpec) -> GPUSpec:
    """The preset named `name` (case-insensitive), or `name` itself if it is a spec.

    `h200` is the calibrated H200 where `gpusim/specs/calibrated/h200.toml` exists (fitted
    to the committed measurements by `python -m validate calibrate`), else the cited
    datasheet preset; `h200-datasheet` is always the cited one. Other calibrated files
    (e.g. `h100-from-h200`, the H200 calibration moved onto the H100 datasheet) load by
    their file name."""
    if isinstance(name, GPUSpec):
        return name
    key = ALIASES.get(str(name).lower(), str(name).lower())
    from gpusim.specs import calibrated  # a cycle: the calibrated presets are built from these
    if calibrated.path(key) is not None:
        return calibrated.load(key)
    if key in DATASHEETS:
        return DATASHEETS[key]
    if f"{key}-datasheet" in DATASHEETS:
        return DATASHEETS[f"{key}-datasheet"]
    raise ConfigError(f"unknown GPU preset {name!r}; known presets: {', '.join(names())} (or a .toml spec file)")


def names() -> list[str]:
    """Every preset name `get` accepts (aliases aside)."""
    from gpusim.specs import calibrated  # a cycle: the calibrated presets are built from these
    return sorted(set(GPUS) | set(DATASHEETS) | set(calibrated.available()))
