"""Named GPU presets: h100, h200, a100, v100, one module per architecture generation
(`hopper.py`, `ampere.py`, `volta.py`; `_common.py` for what they share). Every number cites
its source in the comment on its line, by the tags listed here; variants come from
`overrides.apply` or `dataclasses.replace`, never by editing a preset.

What it models: the parts list the simulator reads (SM count, clocks, per-SM limits,
pipeline issue intervals and latencies, cache geometry and latencies, HBM). What it
does not: clusters, MIG, power or current-limit throttling (clocks are the
maximum boost the GPU ran at, or the lower tensor clock for a kernel that issues
reduced-precision tensor instructions: `ClockSpec.tensor_clock_mhz`, [MEAS-CLK]).

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
  data/measurements/h200_mechanisms.json and h100_mechanisms.json (docs/mechanisms_24.md):
  `lts__d_atomic_input_cycles_active` equals the passes (at most one lane per address a
  sector) on every size; SM cycles per pass GPU-wide by hot set (H200; H100 within 3%).
  validate/mechanisms/shared_atomics.py likewise: shared float adds are a compare-and-swap loop
  (LDS, FADD, ATOMS.CAST.SPIN) of as many rounds as the most lanes of a warp in one bank
  (`sm__sass_inst_executed_op_shared_atom`: 32 a warp on one word, 3.6 on 32 random words of 4096).
- [MEAS-CONST] this project's constant-cache probe (validate/constant_cache_probe.py; H200 and H100,
  2026-11-27, data/measurements/constant_cache_h200.json and _h100.json with Nsight's CSVs and the
  warps' clocks under Nsight): one warp's chain of dependent IMADs, each with a constant operand in
  a line not read before, timed by its own clock. Parameters (bank 0), both GPUs, with or without
  Nsight's cache flushes: 1 / 2 / 4 / 8 / 16 lines 100 / 108 / 161 / 260 / 458 cycles cold against
  4 a line warm; two lines 1 KiB apart 108. `__constant__` data (bank 3), 64 B apart: 4 / 16 lines
  779 / 3,306 (H200), 822 / 3,210 (H100) cycles under Nsight's flushes, 310 / 1,159 once the data
  was read by a launch before (no flush).
- [MEAS-ATOM-HASH] this project's placement probes of global atomics: validate/atomic_banks_probe.py
  (H200, data/measurements/atomic_banks_h200.json: 256 int bins 316 us at offsets 0/256/768 mod 1024,
  166 us at 512; 64 bins in one 256-B half 347 us, over both halves 183) and
  validate/atomic_units_probe.py (H100, data/measurements/atomic_units_h100_run2.json: every 256-B chunk
  of a 2-MiB page tested against the units found so far, 79 us on two units, 155-159 on one;
  80 units; one unit for chunks 512 B apart and for chunks differing in address bits 8, 12, 16);
  where the measured sets' arrays lay (events-only replays recording each argument's device address,
  data/measurements/address_replays/, merged by validate/address_merge.py): the placement the hash
  is applied at in `validate compare` (docs/mechanisms_24.md section 38).
- [MEAS-PIPE] this project's mechanism microbenchmarks of 64-bit integer and FP64 arithmetic
  (validate/mechanisms/arith64.py) measured with Nsight Compute on the H200 and the H100
  (data/measurements/h200_mechanisms.json, h100_mechanisms.json; docs/mechanisms_24.md):
  `sm__pipe_fmaheavy_cycles_active` / `sm__inst_executed_pipe_fmaheavy` is 3.52 on
  i64_chains/wide (32 IMAD.WIDE.U32 and 10 IMAD.MOV/VIADD a loop pass: 4 and 2 cycles) and
  2.67 on i64_chains/mad (one IMAD.WIDE.U32 and two IMAD a step: (4 + 2 + 2) / 3), both GPUs;
  and (validate/mechanisms/latency64.py, *_mechanisms_latency64.json) the alu and fp64 pipes'
  busy cycles (`sm__pipe_{alu,fp64}_cycles_active`) add up to 0.87-1.03 of the SMSP's cycles on
  every FP64-bound size (DFMA chains x warps, DADD, DMUL, f64_fma) while alu + fmaheavy reach 1.74.
- [MEAS-L1GATHER] this project's L1 gather probe (validate/l1_gather_probe.py,
  data/measurements/l1_gather_h200.json, H200, 32 warps a SM loading words of a 64-KiB
  L1-resident table): cycles a request a SM for lanes 128 or 256 B apart (32 lines, every word
  in one 4-B bank) 32.0; 132, 260 or 2,052 B apart (32 lines, 32 banks) 8.0-8.6; 136 / 160 B
  (32 lines, 2 / 8 words a bank) 8.9 / 9.6; 32 B (8 lines, 8 sectors of each bank group) 8.0;
  2 / 4 / 8 / 16 lines of whole bank groups 1.9 / 1.9 / 2.6 / 4.6; 32 random words of 16 / 64 KiB
  9.3 / 10.2. So the tag stage looks up 4 lines a cycle, whichever they are, and a data wavefront
  carries one sector of each of the 4 bank groups (sector index mod 4). The earlier strides
  (validate/mechanisms/strides.py, *_mechanisms.json: 4..1024 B apart 3.0, 4.3, 8.6, 16.6, 32.7 ...
  cycles, taken then as one line a cycle) had every lane's word in one bank group and agree.
- [DEWING] github.com/markdewing/AI_kernels latency/README.md: V100 chase L1 36, L2 221,
  memory 460 cycles; GH200 L1 40, L2 281, memory 690 (8 above [MEAS] on a Hopper L1).
- [SSB] github.com/smallscientist1/cuda_microbenchmark: A100 has 8 L2 slices per
  framebuffer partition, 10 partitions (ncu); H100 SXM5 L2 reads at 8.4 TB/s (cp.async).
- [NCU-DATA] this project's Nsight Compute measurements, data/measurements/h100.json and
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
  (data/measurements/h200x4_multi.json, `python -m validate measure-multi`): `nvidia-smi
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
- [MEAS-CLK] the clock a kernel runs at, clocks not locked: data/measurements/tensor_clock_h100.json
  (`python -m validate.tensor_clock_probe`, H100 SXM, 2026-11-24: clock64 over %globaltimer per
  block): mma.sync FP16 and INT8 loops of 20 ms at 4 and 16 warps/SM exactly 1830 MHz (1 s: 1843-1851),
  FFMA loops 1980-2025 MHz, no power or thermal clock-event reason active; and Nsight's
  sm__cycles_elapsed.max / gpu__time_duration.sum on the tensor sets (h{100,200}_tensor.json):
  CUDA-core SGEMMs 1971-2015 MHz, the 41 kernels that issue tensor instructions a median 1803
  (H100) and 1783 MHz (H200), range 1542-1935 (the heaviest GEMMs lower: not modelled); on an H200 (data/measurements/tensor_clock_h200.json, same
  command, driver 580.159.04, 2026-11-24 20:11 UTC) the same loops of 20 ms run at 1797-1815 MHz
  (FP16 1797, INT8 1798-1815; 1 s: 1813), FFMA at 1979-1980 MHz: the H200 preset's tensor clock
  is 1800 MHz, below the 1830 its datasheet's tensor TFLOP/s imply.
- [MEAS-TMA] one TMA copy's latency, data/measurements/tma_latency_h200.json (`python -m
  validate.tensor_timing.tma_latency`, H200, driver 580.159.04, 2026-11-24 20:29 UTC: one thread, a
  `cp.async.bulk` or 2-D `cp.async.bulk.tensor` into shared memory waited for on its mbarrier,
  %clock64 around the pair): from the L2 294-299 cycles up to 1 KB (the ld.global.cg chase: 286),
  347 / 380 / 465 at 4 / 8 / 16 KB, tensor copies alike (367 / 396 / 465); from DRAM 691-760 up to
  1 KB, 944 at 16 KB; on an H100 (tma_latency_h100.json, 20:32 UTC) 325-332 up to 1 KB (chase 292), 360 /
  400 / 476 at 4 / 8 / 16 KB (about 105 B/cycle).
- [MEAS-L2REQ] a slice's line requests, data/measurements/l2_request_rate_h200.json (`python -m
  validate.l2_request_rate_probe --out ...`, H200, 2026-11-26): every SM loading an L2-resident buffer with
  ld.global.cg, 32 sectors a warp load over 32 / 16 / 8 lines: 151 / 281 / 279 sectors a ns. On an H100
  (l2_request_rate_h100.json, the same day): 135 / 241 / 239 (0.99 1-sector requests a slice and L2 cycle);
  gpusim's h100 at the H200's 0.92 gives 148 / 248 / 246 (benchmarks/results/l2_request_rate_check_h100.json:
  its far lines' requests take the fabric, not their home slice, so the parameter is not the probe's raw rate).
- [MEAS-L2FILL] what a DRAM fill takes of a slice, data/measurements/l2_fill_h200.json and
  l2_fill_h200_ncu.csv (`python -m validate.l2_fill_probe --out ...`, H200, driver 580.159.04, 2026-11-26,
  Nsight's times and counters for the same launches): every SM's warps loading 128-B lines with
  ld.global.cg, 8 / 4 / 2 L2-resident lines to one streamed from DRAM: 274 / 268 / 239 sectors a ns looked
  up for SMs while 31 / 54 / 80 a ns are filled (282 / 161 / 108 us; resident lines alone 262, all
  lookups with the fabric's 292 / 306 / 305); gpusim with fills free 271 / 152 / 91 us, with a filled
  byte costing 0.4 of a looked-up one 283 / 165 / 104 (0.33: 281 / 163 / 102; 0.5: 287 / 168 / 107).
  On an H100 (l2_fill_h100.json, l2_fill_h100_ncu.csv, the same day): 326 / 185 / 143 us, gpusim at 0.4 332 /
  195 / 122; at 2:1 and 1:1 the H100 also loses resident lines to the stream (L2 hit rate 41% and 22% where 67%
  and 50% of the loads are resident), which gpusim's L2 does not. At 0.15 (the H100's preset since 2026-11-26):
  322 / 184 / 113 us (-1.3 / -0.5 / -21%); the H100's L2-bound GEMMs allow at most 0.17-0.27 (the TMA GEMM and
  Triton's f16/bf16 at 8192^3 deliver 96-97% of [MEAS-XBAR]'s read peak to their SMs beside 0.8-1.8 TB/s of
  fills, data/measurements/h100_tensor.json; docs/mechanisms_24.md section 27). The H200's stores mixed with
  resident loads (l2_fill_h200_stores.json) are what `l2.write_port` was tried against (off: section 27).
- [MEAS-SCATTER] lines written from SMs of both L2 partitions, `python -m validate.scatter_capacity_probe --out ...`
  (data/measurements/scatter_capacity_h200.json, 2026-11-27, and scatter_capacity_h100.json, 2026-11-28, with
  Nsight's CSVs; driver 580.159.04): every int32 of an 8-128 MiB array stored once in a random order, each line
  from SMs of both partitions (`shared`) or from one SM (`own`): DRAM bytes written over the array 0.46 / 2.72 /
  6.77 (`shared`, H200, 8 / 32 / 64 MiB) against 0.02 / 1.14 / 2.64 (`own`); `shared` at A MiB writes back about
  what `own` does at 2A (docs/mechanisms_24.md sections 34 and 47). `l2.far_writes_dirty_at_writer` (a far
  line's stores dirty in the writer's copy) was tried against it in full simulation and left off.
- [MEAS-WMISS] what stores that miss the L2 cost the reads that miss it, `python -m validate.copy_latency_probe
  --out ...` (driver 580.159.04, 2026-11-27; data/measurements/copy_latency_h200_run5.json and _run6.json on an
  H200, copy_latency_h100_run3.json on an H100; docs/mechanisms_24.md sections 44-45): 16 warps a SM chase 128-B
  lines through 512 MiB while 16 store a line every `gap` cycles. The readers' cycles a step beside 0 / 0.13 /
  0.27 / 0.54 / 1.07 / 1.73 TB/s of stores that miss the L2: 702 / 728 / 751 / 783 / 899 / 1,041 (H200), about
  190 more per TB/s (7.81 G lines a second: 12.3 ns per G a second); H100 737 / 775 / 803 / 860 / 1,005 / 1,249,
  290 (18.7 ns). Stores of one 32-B sector, as many a second, cost as much as whole lines (725 / 752 / 817 / 834 /
  929 at the same store rates): the wait goes with write requests that miss, not bytes. Stores that hit (a warp's
  own 8 lines) cost next to nothing (698-711); readers of L2-resident lines wait 308 -> 383 at most; reads whose
  victims are dirty wait 18-24 more (the DRAM's write-backs are not it).
- [MEAS-DRAM64] the smallest DRAM access, from the mechanism suite's partial-sector stores
  (data/measurements/h{100,200}_mechanisms.json, `validate/mechanisms/strides.py`, Nsight, driver 580.159.04,
  2026-11-24): 4-B stores one a 128-B line (`stride_write/s128B`: each 64-B burst holds one dirty sector,
  filled and written back as 32 B, `dram__bytes_read` and `_write` 32 B a store) take 105.9 us on the H100
  and 88.3 on the H200, where stores one a 32-B sector (`s32B`: both sectors of each burst, as many stores
  and DRAM bytes) take 43.7 and 31.0: counted in 64-B bursts, both run at 2.6-2.7 TB/s (H100) and 3.1-3.7
  (H200), in bytes s128B at half that. So a lone sector's fill or write takes a burst's time
  (`hbm.min_access_bytes` = 64); the bytes counted stay 32. Checked on `stride_copy/s128B` and `write_s128B`
  (`python benchmarks/mechanisms_24.py compare --data data/measurements/h100_mechanisms.json --repredict --only
  '^stride_'`: H100 s128B writes -31.8 -> -12.2%, copies -31.3 -> -9.5%; H200 -23.8 -> -20.3%, -26.7 -> -14.0%).
- [MEAS-XBAR] the L2 under every SM, data/measurements/crossbar_probe_h{100,200}_run3.json (`python -m
  validate.tensor_timing.crossbar_probe`, H100 and H200, driver 580.159.04, 2026-11-25: one block a SM
  pulling 64 KiB a round by cp.async.cg, Nsight counters beside): 132 SMs each reading a region of
  its own take 2,151 cycles a round on the H100 and 1,820 on the H200 (4.0 and 4.75 KB a cycle at
  1.98 GHz, one L2 lookup per sector read), every SM reading one region 766 and 756 (11.3 and 11.4
  KB a cycle delivered, 0.30 lookups a sector: reads of sectors still queued at a slice join
  them); one SM alone 528 and 530; rows 16 B off a 32-B boundary (`pitch80`) read a sector once
  for each shared sector it fills (functional/copy_counts.py `copy_pieces`). The L2 runs on its own
  clock ([MEAS-L2CLK]). In the Hopper presets (2026-11-25): the slices at the measured 50.3 / 49.5 B a
  SM cycle at 1,979 MHz, stated per L2 cycle (58.3 / 57.4 B at 1,707.5 MHz: `clocks.l2_clock_mhz`,
  timing/clock_domain.py restates them per SM cycle at each launch's clock), no longer fitted
  to `bandwidth/read_l2` (which hits in L1: 16.2 M of its 16.8 M sectors, and is bound by its
  issue, not the L2); joining of reads queued at a slice (`l2.join_queued_reads`,
  gpusim/timing/memory/l2_queue.py; the GPUs merge within a GPC only, [MEAS-MERGE]); the crossbar at
  11,520 B a SM cycle, above what the one-region runs delivered. Predicted (`python -m validate.tensor_timing.crossbar_probe
  --predict h100 data/measurements/crossbar_probe_h100_run3.json`): own 2,174 cycles a round
  (2,151 measured), one region 761 (766), pitch 80 3,267 (3,592); H200 (`--predict h200 ...h200_run3.json`)
  1,844 (1,820), 765 (756), 2,767 (3,084): benchmarks/results/crossbar_probe_check_h{100,200}.json. Before (slices fitted to 73.6 B, crossbar 5,120 B, no joining): 1,691,
  1,689, 2,535 (benchmarks/results/crossbar_probe_check_h100.json at d450dad).
- [MEAS-MERGE] reads merged within a GPC, data/measurements/request_merge_h100.json (`python -m
  validate.request_merge_probe`, H100, driver 580.159.04, 2026-11-27: one block a SM reading 256 KiB
  by `ld.global.v4`, `ld.global.cg.v4` or `cp.async.cg`, regions read into the L2 by a launch before,
  SMs sharing regions by their `%smid`, GPCs found by cluster launches; Nsight counters beside). Two
  SMs of a TPC, or of two TPCs of one GPC, reading one region in step: the L2 looks up 0.50 of the
  sectors their L1s receive; four SMs of two TPCs of a GPC 0.25; 8-18 SMs of a GPC, or all 132 on one
  region, 0.26-0.32; SMs of different GPCs 0.97-1.00; the second SM of a TPC paced 0 / 250 / 500 /
  1,000 ns behind 0.50 / 0.62 / 0.89 / 1.00 (the H200 alike, data/measurements/request_merge_h200.json).
  Modelled (gpusim/timing/memory/gpc_merge.py): `noc.gpcs` 8 ([H100-WP]), `noc.gpc_merge_window_cycles`
  750 measured (between the lags that merge 77% and 22%), `noc.gpc_merge_requests` 4; predicted with
  `python -m validate.request_merge_probe --predict h100:noc.gpc_merge_window_cycles=750,l2.join_queued_reads=false
  data/measurements/request_merge_h100.json` (benchmarks/results/request_merge_check_h100.json). The Hopper
  presets keep the window at 0 and the join on (2026-11-27): merging on made the L2-bound GEMMs 6-17% slow
  (benchmarks/results/gpc_merge_experiment.json, docs/mechanisms_24.md section 37).
- [MEAS-L2CLK] the L2's clock, data/measurements/l2_clock_h200.json (Nsight
  `lts__cycles_elapsed.avg.per_second` beside `sm__cycles_elapsed.avg.per_second`, H200, driver
  580.159.04, 2026-11-25, clocks not locked, five tensor-set GEMMs): the L2 at 1.706-1.709 GHz
  while the SMs ran at 1.527-1.975 GHz; the probe's 132-SM runs 1.703-1.708 GHz at 1.97-1.98 GHz.
  The H100's L2 clock, taken as the H200's (the same GH100 L2), measured since: 1.704-1.710 GHz, median
  1.7094 over 41 Nsight'd kernels (data/measurements/gemm_parts_h100.json, l2_share_h100*.json, 2026-11-26),
  0.1% from the preset's 1,707.5 MHz, whose per-cycle L2 rates ([MEAS-XBAR]) are divided by it, so left as is.
- [MEAS-BAR] barrier phases and conflicted shared accesses, data/measurements/scan_phases_h100.json
  (`python -m validate.scan_phases_probe`, H100, driver 580.159.04, 2026-11-24, Nsight's
  sm__cycles_elapsed.max over 336 `__syncthreads` phases a block with one FFMA between): 42.4 /
  66.9 / 104.3 cycles a phase with one block of 4 / 16 / 32 warps a SM (about 2 cycles a warp's
  arrival), 53.3 / 90.1 / 155.5 with 4 x 4, 8 x 4, 4 x 16 warps; one warp's chain of dependent
  shared loads 35.0 cycles a step conflict-free, 97.0 with all 32 lanes in one bank (2 cycles a
  further wavefront, where the strided-load microbenchmarks' throughput is 1), a read-modify-write
  41.0 / 164.5.
- [MEAS-DRAMW] scattered DRAM writes, data/measurements/dram_write_h200_run2.json (`python -m
  validate.dram_write_probe $OUT`, H200, driver 580.159.04, 2026-11-28, Nsight): 2^23 random 64-B bursts of a
  1 GiB array written as whole 32-B sectors (two lanes' 16 B in one instruction, no fill) in 278.9 us, as whole
  bursts in 291.3, read in 217.3 (30.1 / 28.8 / 38.6 G bursts a second): a write's row activation takes about
  1.45 times a read's share of the activation window, fitted on the sector and burst cases (gpusim +2.6 / -4.4%,
  reads -1.4%; docs/mechanisms_24.md section 48).
- [MEAS-PARTIAL] lines with partly written sectors, data/measurements/dram_write_h200_run4.json (`python -m
  validate.dram_write_probe $OUT`, H200, driver 580.159.04, 2026-11-28, Nsight): 2^K threads each one 4-byte
  store into its own 128-B line (a random or in-order line of a 2^K-line region, which the L2 holds): no DRAM
  traffic up to 2^15 lines; at 2^16 / 2^17 / 2^18 / 2^19 lines 2.9 / 52.9 / 199.9 / 457.3 K sectors read from DRAM and
  about as many written within the kernel, so 52-75 K lines stay partly written and the L2 completes the others
  by a read-modify-write at the DRAM; two or four partial sectors a line keep 43-50 K lines (run 3's whole-sector
  and 16-B pairs none). 550 a slice fits runs 3-4's twelve partial cases' DRAM reads best of 500 / 550 / 600 / 700
  (docs/mechanisms_24.md section 49).
- [MEAS-SCAN-BAR] barrier phases with conflicted shared loads, data/measurements/scan_phases_h200_run9.json
  (`python -m validate.scan_phases_probe $OUT`, H200, driver 580.159.04, 2026-11-28; runs 6-8 on the H100
  alike): warp 0 of a block of 16 warps four 8-way loads a phase, the others idle at the barrier: 139.5 cycles
  a phase against 111.4 with conflict-free loads at one block a SM, 427.3 against 311.0 at four; the textbook
  scan 478.5 cycles a phase at 4 blocks a SM (docs/mechanisms_24.md section 48).
- [MEAS-SMEM-PORT] shared-memory accesses of 1 to 32 warps, data/measurements/shared_banks_h100.json
  (`python -m validate.shared_banks_probe`, H100, driver 580.159.04, 2026-11-24, 40 kernels timed by
  Nsight): one warp's independent 32-way conflicted loads or stores 64.8 cycles each (2 a
  wavefront), two warps on two sub-partitions 32.1 a SM, 4 to 32 warps 32.0 (1 a wavefront, the
  path's rate); warps on one bank or on banks of their own alike (same/diff 1.00 at every count and
  degree), loads and stores alike, one block of 16 warps as 4 blocks of 4.
- [TC-LAT] tensor instruction latencies: estimates of the order the microbenchmark papers
  report for dependent chains (Sun et al., "Dissecting Tensor Cores via Microbenchmarks",
  IEEE TPDS 2023, arXiv:2206.02874, on A100; [Luo24] on an H800 for mma.sync and wgmma):
  about 33 cycles for HMMA m16n8k16, about 128 for HGMMA 64x128x16; the papers' tables were
  not reachable from here, and validate/tensor_timing measures them on the H100/H200.
- [MEAS-TC] data/measurements/tensor_timing_h100.json (validate/tensor_timing, an H100 SXM,
  2026-11-23): an f16 m16n8k16 mma.sync dependent chain 24.3 cycles per instruction (bf16,
  tf32 m16n8k8, s8 m16n8k32 the same); one warpgroup's group of four 64x128x16 f16 wgmma
  (committed, waited) 312.8 cycles, 120.4 of them the last one's latency at the measured
  4,087 FLOP/cycle/SM (which confirms [TC-WP]'s 4096; FP8 and INT8 wgmma 8,174 of 8192).
  The cp.async round trip (16 B per thread, L2-resident source, one warp, committed and
  waited each iteration) 361.5 cycles against 293.8 for the same loop with the round trip
  of a load: 68 cycles from the sectors' return to the group's completion (the bytes'
  write into shared memory through the L1's data path, and the arrival).
- [MEAS-TMA] data/measurements/tma_latency_h{100,200}_run2.json (validate/tensor_timing/tma_latency.py,
  2026-11-25): one TMA copy of a 2-D box from DRAM takes longer the more 128-B rows it has, at
  every row pitch from 128 B to 64 KB (H100: about 820 cycles for 8 rows, 1,000-1,100 for 32,
  1,150-1,250 for 64, 1,250-1,300 for 128; a single line about 750), where a deterministic DRAM
  latency gives each row the same time and the box about that of its slowest row (860-900).
  A copy ends when its last line is back, and the more channels it touches the likelier one
  of them is refreshing: the tail is the wait for a refresh in progress. tRFC fitted to the
  box latencies with `benchmarks/tma_latency_check.py` (mean absolute difference over the
  60 single-block DRAM copies, model at t_rfc_ns 200 / 240 / 320: 83 / 66 / 104 cycles on the
  H100; 220 / 260 / 300: 101 / 80 / 88 on the H200); the refresh's share of each channel's bus
  it implies (6.4% and 6.8%, was 11.5% at 450) brings the calibration's HBM stream bandwidth
  within 1% on both GPUs (was 4.8% short on each; the presets' comments).
- [NCU-FILL] data/measurements/h100_tensor.json (Nsight Compute on an H100 SXM, 2026-11): a
  cp.async's fill of shared memory takes sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts
  wavefronts of the L1's data path, 12.75 per 512-B LDGSTS.BYPASS of cuda_mma_* (rows padded to 80
  and 144 B: per SASS line 15 for the 64-B rows of A, 10.5 for the 128-B rows of B,
  data/measurements/sass_stalls_h100/cuda_mma_double_n1024_sass.csv) and 4.00 of the Triton
  GEMMs' swizzled tiles; `gpusim.functional.copy_counts.fill_wavefronts` is the rule that gives
  all three, and the data path takes one wavefront a cycle ([CUDA-PG], as for LDS/LDSM).
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
from gpusim.specs.presets._common import GiB, MiB  # noqa: F401  (re-exported)
from gpusim.specs.presets.ampere import A100
from gpusim.specs.presets.hopper import H100, H200
from gpusim.specs.presets.volta import V100

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
    spec = calibrated.load(key)
    if spec is not None:
        return spec
    if key in DATASHEETS:
        return DATASHEETS[key]
    if f"{key}-datasheet" in DATASHEETS:
        return DATASHEETS[f"{key}-datasheet"]
    raise ConfigError(f"unknown GPU preset {name!r}; known presets: {', '.join(names())} (or a .toml spec file)")


def names() -> list[str]:
    """Every preset name `get` accepts (aliases aside)."""
    from gpusim.specs import calibrated  # a cycle: the calibrated presets are built from these
    return sorted(set(GPUS) | set(DATASHEETS) | set(calibrated.available()))
