"""The parts of a GPU as sub-specs: clock, pipes, SM, L1, L2, HBM, network on chip and
launch costs, each a frozen parts list with units in its field names.

Every field has a default (the H100 SXM5 value, cited in `presets/`), a one-line
description in the comment beside it and, for numbers, its valid range beside the default
(`bounded`, `fields.py`). Validation runs on construction (`__post_init__`): the rules
first, then `check_ranges`; an invalid value is a `ConfigError` naming the field, the value
and the rule or range it breaks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpusim.errors import ConfigError
from gpusim.specs.fields import (GiB, KiB, MiB, _integer, _nonnegative, _positive, _power_of_two, bounded,
                                 check_ranges)


@dataclass(frozen=True)
class ClockSpec:
    sm_clock_mhz: float = bounded(1980.0, 50.0, 10000.0)  # SM clock used to turn cycles into time (boost)
    memory_clock_mhz: float = bounded(2619.0, 50.0, 20000.0)  # HBM data clock, informational
    tensor_clock_mhz: float = bounded(1830.0, 0.0, 10000.0)  # SM clock while a kernel issues reduced-precision tensor instructions (HMMA, IMMA, HGMMA, IGMMA, QGMMA): the one the dense tensor TFLOP/s are quoted at; at most sm_clock_mhz; 0: sm_clock_mhz
    l2_clock_mhz: float = bounded(0.0, 0.0, 10000.0)  # the L2's own clock, whatever the SMs run at: the L2 slices' and partition fabric's bandwidths are then per L2 cycle (timing/clock_domain.py); 0: the L2 runs at the SM clock, those bandwidths per SM cycle

    def __post_init__(self) -> None:
        _positive(self, "sm_clock_mhz", "memory_clock_mhz")
        _nonnegative(self, "tensor_clock_mhz", "l2_clock_mhz")
        check_ranges(self)

    @property
    def tensor_mhz(self) -> float:
        """The SM clock of a kernel that issues reduced-precision tensor instructions
        (`timing/clock_domain.py`): the tensor clock, never above the boost clock."""
        return min(self.sm_clock_mhz, self.tensor_clock_mhz) if self.tensor_clock_mhz > 0 else self.sm_clock_mhz


@dataclass(frozen=True)
class PipeSpec:
    """One execution pipe of a sub-partition (SMSP), Nsight Compute's pipe names."""
    issue_interval_cycles: float = bounded(1.0, 0.0, 1024.0)  # cycles between two warp instructions on this pipe of one SMSP (32 / lanes); 0: the architecture has no such pipe
    latency_cycles: int = bounded(4, 1, 10_000)  # cycles from issue until a dependent instruction may issue

    def __post_init__(self) -> None:
        _nonnegative(self, "issue_interval_cycles")
        _positive(self, "latency_cycles")
        check_ranges(self)


@dataclass(frozen=True)
class PipesSpec:
    """The SMSP's pipes a SASS instruction issues to (`gpusim.frontend.sass.opcodes`).
    FP32 instructions go to whichever of fmaheavy and fmalite is free; IMAD only to
    fmaheavy; half-precision pairs to the fp16 pipe, or (fp16 interval 0) to the FMA pipes
    with the fp16 latency. Memory instructions' latency comes from the memory units. The
    tensor pipe's intervals and latencies come per instruction from `GPUSpec.tensor`
    (`specs/tensor.py`)."""
    alu: PipeSpec = PipeSpec(2.0, 4)             # integer and logic: IADD3, LOP3, SHF, ISETP, SEL, MOV, FSETP, FMNMX
    fmaheavy: PipeSpec = PipeSpec(2.0, 4)        # FP32 and integer multiply-add (IMAD, VIADD)
    fmalite: PipeSpec = PipeSpec(2.0, 4)         # FP32 only (FADD, FMUL, FFMA); interval 0: none (FP32 shares fmaheavy)
    fp16: PipeSpec = PipeSpec(0.0, 8)            # HADD2, HMUL2, HFMA2; interval 0: run on the FMA pipes
    fp64: PipeSpec = PipeSpec(2.0, 8)            # DADD, DMUL, DFMA, DSETP
    xu: PipeSpec = PipeSpec(8.0, 19)             # MUFU, conversions I2F/F2I/F2F, POPC, FLO, BREV
    lsu: PipeSpec = PipeSpec(4.0, 26)            # loads, stores, atomics, SHFL, S2R (latency: SHFL and S2R results)
    adu: PipeSpec = PipeSpec(2.0, 20)            # LDC, S2UR, BAR, indirect branches (latency: LDC and S2UR results)
    cbu: PipeSpec = PipeSpec(2.0, 4)             # BRA, EXIT, BSSY, BSYNC, WARPSYNC, CALL, RET
    uniform: PipeSpec = PipeSpec(2.0, 4)         # the uniform datapath: UIADD3, ULOP3, UMOV, ULDC, ...
    tex: PipeSpec = PipeSpec(4.0, 4)             # TEX, TLD, SULD, SUST (latency from the memory units)
    imad_wide_issue_interval_cycles: float = bounded(4.0, 0.25, 1024.0)  # cycles an IMAD.WIDE(.U32) (64-bit result: two passes) keeps its pipe of one SMSP
    fp64_shares_alu_dispatch: bool = True        # FP64 and ALU instructions take turns on one dispatch: a DFMA keeps the alu pipe busy for its interval too

    def __post_init__(self) -> None:
        _positive(self, "imad_wide_issue_interval_cycles")
        if not isinstance(self.fp64_shares_alu_dispatch, bool):
            raise ConfigError(f"PipesSpec.fp64_shares_alu_dispatch must be true or false, got {self.fp64_shares_alu_dispatch!r}")
        check_ranges(self)

    def of(self, pipe: str) -> PipeSpec:
        return getattr(self, pipe)


@dataclass(frozen=True)
class SMSpec:
    sub_partitions: int = bounded(4, 1, 16)      # SMSPs per SM, each with its own warp scheduler
    issue_width_warp_inst_per_cycle: int = bounded(1, 1, 8)  # warp instructions one scheduler issues per cycle
    max_threads_per_sm: int = bounded(2048, 32, 65_536)  # resident threads per SM
    max_warps_per_sm: int = bounded(64, 1, 2048)  # resident warps per SM
    max_blocks_per_sm: int = bounded(32, 1, 1024)  # resident thread blocks per SM
    registers_per_sm: int = bounded(65536, 256, 1 << 24)  # 32-bit registers
    max_registers_per_thread: int = bounded(255, 1, 1024)  # ptxas limit per thread
    register_allocation_unit: int = bounded(256, 1, 65_536)  # registers allocated per warp in multiples of this
    warp_allocation_granularity: int = bounded(4, 1, 64)  # CUDA occupancy calculator's warp allocation granularity
    shared_memory_per_sm_bytes: int = bounded(228 * KiB, 1, 64 * MiB)  # largest carve-out for shared memory
    shared_carveouts_bytes: tuple[int, ...] = (0, 8 * KiB, 16 * KiB, 32 * KiB, 64 * KiB, 100 * KiB, 132 * KiB,
                                               164 * KiB, 196 * KiB, 228 * KiB)  # shared sizes the driver can pick
    shared_allocation_unit_bytes: int = bounded(128, 1, 65_536)  # shared memory per block rounds up to this
    reserved_shared_per_block_bytes: int = bounded(1024, 0, 65_536)  # system use per block (CC >= 8.0)
    l1_shared_total_bytes: int = bounded(256 * KiB, 1, 64 * MiB)  # unified L1 + shared capacity per SM
    shared_banks: int = bounded(32, 1, 1024)     # shared-memory banks
    shared_bank_width_bytes: int = bounded(4, 1, 64)  # bytes per bank per cycle
    shared_latency_cycles: int = bounded(23, 1, 10_000)  # shared load, no conflict, to dependent use
    shared_wavefront_cycles: int = bounded(1, 0, 1000)  # cycles each wavefront of a shared access holds the SM's shared data path (0: as 1)
    shared_wavefront_latency_cycles: float = bounded(2.0, 0.0, 1000.0)  # cycles a sub-partition's wavefront takes: to the result per further wavefront, and its port to the data path (issue_loop.shared_access)
    shared_cas_round_cycles: float = bounded(2.0, 0.0, 1000.0)  # shared data path per round of a compare-and-swap loop (its LDS and ATOMS.CAST.SPIN)
    barrier_latency_cycles: int = bounded(20, 1, 100_000)  # last arrival to release of a CTA barrier
    barrier_arrival_cycles: float = bounded(2.0, 0.0, 1000.0)  # the SM's barrier unit takes one warp's arrival at a CTA barrier every this many cycles (all its blocks' warps); 0: at once
    barrier_behind_shared: bool = False         # a warp's barrier arrival leaves its sub-partition's shared-memory queue in
    #                                              order: after the shared accesses issued there before it have had the data
    #                                              path, holding that queue until the barrier unit takes it (sm.py `_arrive`)
    instruction_cache_line_bytes: int = bounded(128, 16, 4096)  # instruction-cache line (8 SASS instructions of 16 B)
    instruction_prefetch_lines: int = bounded(32, 0, 4096)  # lines kept requested ahead of the line a warp uses
    instruction_fetch_bytes_per_cycle: float = bounded(7.76, 0.01, 4096.0)  # an SM's instruction fetch stream (cold code)
    constant_cache_line_bytes: int = bounded(64, 4, 4096)  # constant-cache line (kernel parameters, __constant__ data)
    constant_fill_cycles: float = bounded(0.0, 0.0, 100_000.0)  # a missing constant line of banks other than 0 (fetch.py); 0: the L2 hit latency
    parameter_fill_cycles: float = bounded(0.0, 0.0, 100_000.0)  # an SM's first missing bank-0 line (parameters, launch constants); 0: the L2 hit latency
    parameter_next_fill_cycles: float = bounded(0.0, 0.0, 100_000.0)  # each later missing bank-0 line; 0: as the first
    pipes: PipesSpec = field(default_factory=PipesSpec)
    warp_scheduler: str = "gto"                  # warp scheduling policy name (gpusim.timing.policies)
    stall_counts_from_compiler: bool = True     # after each issue the warp waits the stall count ptxas wrote in the
    #                                              instruction's control bits (sm_70+); False: only the latency table spaces
    #                                              fixed-latency dependencies (issue_loop.py)

    def __post_init__(self) -> None:
        _positive(self, "sub_partitions", "issue_width_warp_inst_per_cycle", "max_threads_per_sm", "max_warps_per_sm",
                  "max_blocks_per_sm", "registers_per_sm", "max_registers_per_thread", "register_allocation_unit",
                  "warp_allocation_granularity", "shared_memory_per_sm_bytes", "shared_allocation_unit_bytes",
                  "l1_shared_total_bytes", "shared_latency_cycles", "barrier_latency_cycles",
                  "instruction_fetch_bytes_per_cycle")
        _nonnegative(self, "reserved_shared_per_block_bytes", "shared_wavefront_cycles", "instruction_prefetch_lines",
                     "barrier_arrival_cycles", "shared_wavefront_latency_cycles", "constant_fill_cycles",
                     "parameter_fill_cycles", "parameter_next_fill_cycles")
        _power_of_two(self, "instruction_cache_line_bytes", "constant_cache_line_bytes")
        _integer(self, "instruction_prefetch_lines")
        _integer(self, "sub_partitions", "max_threads_per_sm", "max_warps_per_sm", "max_blocks_per_sm",
                 "registers_per_sm", "max_registers_per_thread", "shared_memory_per_sm_bytes", "l1_shared_total_bytes")
        _power_of_two(self, "shared_banks", "shared_bank_width_bytes")
        if not isinstance(self.barrier_behind_shared, bool):
            raise ConfigError(f"SMSpec.barrier_behind_shared must be true or false, got {self.barrier_behind_shared!r}")
        if not isinstance(self.stall_counts_from_compiler, bool):
            raise ConfigError(f"SMSpec.stall_counts_from_compiler must be true or false, got {self.stall_counts_from_compiler!r}")
        if self.shared_memory_per_sm_bytes > self.l1_shared_total_bytes:
            raise ConfigError(f"SMSpec.shared_memory_per_sm_bytes ({self.shared_memory_per_sm_bytes}) cannot exceed "
                              f"l1_shared_total_bytes ({self.l1_shared_total_bytes})")
        c = self.shared_carveouts_bytes
        if not (isinstance(c, tuple) and c and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in c)
                and all(a < b for a, b in zip(c, c[1:]))):
            raise ConfigError(f"SMSpec.shared_carveouts_bytes must be a non-empty, strictly increasing tuple of "
                              f"byte counts >= 0, got {c!r}")
        check_ranges(self)

    def carveout_bytes(self, shared_bytes_per_sm: int) -> int:
        """The shared-memory carve-out the driver picks for `shared_bytes_per_sm`: the
        smallest supported size that holds it, capped at `shared_memory_per_sm_bytes`.
        The rest of `l1_shared_total_bytes` is L1 data cache."""
        for size in self.shared_carveouts_bytes:
            if shared_bytes_per_sm <= size <= self.shared_memory_per_sm_bytes:
                return size
        return self.shared_memory_per_sm_bytes


@dataclass(frozen=True)
class L1Spec:
    line_bytes: int = bounded(128, 16, 4096)     # tag granularity
    sector_bytes: int = bounded(32, 4, 4096)     # fill and valid granularity
    associativity: int = bounded(4, 1, 1024)     # ways (the data-cache part is l1_shared_total - shared carve-out)
    hit_latency_cycles: int = bounded(32, 1, 10_000)  # global load hit, to dependent use
    mshr_entries: int = bounded(256, 1, 1 << 20)  # outstanding missed sectors per SM
    bandwidth_bytes_per_cycle: int = bounded(128, 1, 65_536)  # L1 <-> SM datapath (one wavefront per cycle)
    tag_lines_per_cycle: int = bounded(4, 1, 64)  # tag stage: distinct lines of a request looked up per cycle
    write_allocate: bool = False                 # global stores: write-through, no write-allocate

    def __post_init__(self) -> None:
        _power_of_two(self, "line_bytes", "sector_bytes", "associativity")
        _positive(self, "hit_latency_cycles", "mshr_entries", "bandwidth_bytes_per_cycle", "tag_lines_per_cycle")
        if self.sector_bytes > self.line_bytes:
            raise ConfigError("L1Spec.sector_bytes cannot exceed line_bytes")
        if self.bandwidth_bytes_per_cycle % self.sector_bytes:
            raise ConfigError(f"L1Spec.bandwidth_bytes_per_cycle ({self.bandwidth_bytes_per_cycle}) must be a whole "
                              f"number of sectors ({self.sector_bytes} B): a wavefront carries one sector of each bank group")
        check_ranges(self)


@dataclass(frozen=True)
class L2Spec:
    size_bytes: int = bounded(50 * 1024 * KiB, 1024, 16 * GiB)  # capacity of all slices together
    slices: int = bounded(80, 1, 4096)           # independent L2 banks the address hash spreads sectors over
    associativity: int = bounded(16, 1, 1024)    # ways per set
    line_bytes: int = bounded(128, 16, 4096)     # tag granularity
    sector_bytes: int = bounded(32, 4, 4096)     # fill and valid granularity
    hit_latency_cycles: int = bounded(276, 1, 100_000)  # load that hits L2, SM clock cycles, to dependent use
    bandwidth_bytes_per_cycle_per_slice: float = bounded(64.0, 0.01, 65536.0)  # data returned per cycle by one slice (L2 cycles where clocks.l2_clock_mhz is set, else SM cycles)
    write_bandwidth_bytes_per_cycle_per_slice: float = bounded(35.0, 0.01, 65536.0)  # data written (stores) per cycle by one slice (L2 cycles where clocks.l2_clock_mhz is set)
    atomic_latency_cycles: int = bounded(40, 0, 100_000)  # extra cycles for a read-modify-write at the slice
    atomic_unit_cycles_per_pass: float = bounded(1.5, 0.001, 10000.0)  # a slice's atomic unit per pass (one sector's read-modify-write, at most one lane per address)
    atomic_unit_granule_bytes: int = bounded(512, 1, 1 << 30)  # aligned block whose atomics all go to one slice's atomic unit
    atomic_unit_hash_masks: tuple[int, ...] = ()  # address-bit masks: bit i of a granule's unit key is the parity of (address & mask i); () = each granule its own unit
    atomic_units: int = bounded(0, 0, 1 << 20)   # atomic units the keys are spread over (a fixed mixer, key mod units); 0 = the key is the unit
    atomic_near_slice_cycles_per_pass: float = bounded(1.5, 0.001, 10000.0)  # a far line's atomic pass at its near slice (looked up, forwarded)
    atomic_int_sector_interval_cycles: float = bounded(0.0, 0.0, 10000.0)  # an integer pass holds its sector this long (the next pass on it waits)
    atomic_float_sector_interval_cycles: float = bounded(0.0, 0.0, 10000.0)  # a floating-point pass holds its sector this long
    partitions: int = bounded(2, 1, 64)          # L2 partitions; an SM's near one caches copies of lines homed in the far one
    fabric_latency_cycles: int = bounded(100, 1, 100_000)  # one crossing of the fabric between partitions (a far access crosses twice)
    fabric_bandwidth_bytes_per_cycle: float = bounded(2120.0, 0.01, 1e6)  # data across the partition fabric, all partitions together (L2 cycles where clocks.l2_clock_mhz is set)
    ecc_granule_bytes: int = bounded(32, 1, 4096)  # L2 data ECC word: a write covering part of one costs the slice a read too
    write_port: bool = False                     # a slice takes written data on a port of its own at write_bandwidth_bytes_per_cycle_per_slice beside its reads' bandwidth; False: a written byte books the reads' bandwidth (bandwidth / write_bandwidth bytes)
    far_writes_dirty_at_writer: bool = False     # a store to a line homed in another partition leaves its bytes dirty in the writer's near copy (written back to DRAM when that copy is evicted) and clean at the home; False: write-through, only homes dirty (l2_partitions.py)
    join_queued_reads: bool = False              # a read finding the same sectors still queued at its slice shares that lookup (l2_queue.py)
    requests_per_cycle_per_slice: float = bounded(0.0, 0.0, 64.0)  # line requests a slice looks up per cycle whatever their sectors: a read's lookup takes at least one request's share of the slice's bandwidth; 0 = bytes only (L2 cycles where clocks.l2_clock_mhz is set)
    fill_cost_bytes_per_byte: float = bounded(0.0, 0.0, 16.0)  # a DRAM fill books this many bytes of its home slice's bandwidth per byte it writes into the slice (0 = fills are free)
    write_miss_read_wait_ns_per_gline_per_s: float = bounded(0.0, 0.0, 10000.0)  # a read that misses the L2 goes on to DRAM this many ns later per G lines a second that writes allocate in the L2 (GPU-wide; each slice judges the rate from its own; 0 = no wait)
    partial_lines_per_slice: int = bounded(0, 0, 1 << 20)  # lines with partly written sectors a slice keeps; one more completes its least recently written one by a DRAM read-modify-write (the line stays, whole and clean); 0 = no limit (completed when evicted)

    def __post_init__(self) -> None:
        for flag in ("join_queued_reads", "write_port", "far_writes_dirty_at_writer"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"L2Spec.{flag} must be true or false, got {getattr(self, flag)!r}")
        _positive(self, "atomic_unit_cycles_per_pass", "atomic_near_slice_cycles_per_pass")
        _positive(self, "size_bytes", "slices", "hit_latency_cycles", "bandwidth_bytes_per_cycle_per_slice",
                  "write_bandwidth_bytes_per_cycle_per_slice", "partitions", "fabric_latency_cycles",
                  "fabric_bandwidth_bytes_per_cycle")
        _integer(self, "size_bytes", "slices", "partitions", "fabric_latency_cycles", "atomic_units")
        if self.atomic_units and not self.atomic_unit_hash_masks:
            raise ConfigError(f"L2Spec.atomic_units ({self.atomic_units}) needs atomic_unit_hash_masks (the key it "
                              f"spreads over the units)")
        _nonnegative(self, "requests_per_cycle_per_slice", "fill_cost_bytes_per_byte", "write_miss_read_wait_ns_per_gline_per_s", "atomic_latency_cycles", "atomic_int_sector_interval_cycles",
                     "atomic_float_sector_interval_cycles")
        _power_of_two(self, "associativity", "line_bytes", "sector_bytes", "ecc_granule_bytes", "atomic_unit_granule_bytes")
        if self.sector_bytes > self.line_bytes:
            raise ConfigError("L2Spec.sector_bytes cannot exceed line_bytes")
        m = self.atomic_unit_hash_masks
        if not (isinstance(m, tuple) and all(isinstance(x, int) and not isinstance(x, bool) and 0 < x < 1 << 64 for x in m)):
            raise ConfigError(f"L2Spec.atomic_unit_hash_masks must be a tuple of positive 64-bit address masks, got {m!r}")
        low = [x for x in m if x & (self.atomic_unit_granule_bytes - 1)]
        if low:
            raise ConfigError(f"L2Spec.atomic_unit_hash_masks: mask {low[0]:#x} has address bits below "
                              f"atomic_unit_granule_bytes ({self.atomic_unit_granule_bytes}): a granule would "
                              f"span two units")
        if self.atomic_unit_granule_bytes < self.line_bytes:
            raise ConfigError(f"L2Spec.atomic_unit_granule_bytes ({self.atomic_unit_granule_bytes}) cannot be below "
                              f"line_bytes ({self.line_bytes})")
        if self.ecc_granule_bytes > self.sector_bytes:
            raise ConfigError(f"L2Spec.ecc_granule_bytes ({self.ecc_granule_bytes}) cannot exceed sector_bytes "
                              f"({self.sector_bytes})")
        if self.slices % self.partitions:
            raise ConfigError(f"L2Spec.slices ({self.slices}) must divide evenly into {self.partitions} partitions")
        set_bytes = self.line_bytes * self.associativity
        if self.size_bytes % set_bytes:
            lo = self.size_bytes // set_bytes * set_bytes
            raise ConfigError(f"L2Spec.size_bytes must be a whole number of sets (a multiple of line_bytes * "
                              f"associativity = {set_bytes}), got {self.size_bytes}; nearest: {lo} or {lo + set_bytes}")
        if self.size_bytes // set_bytes < self.slices:
            raise ConfigError(f"L2Spec.size_bytes ({self.size_bytes}) must give every one of the {self.slices} "
                              f"slices at least one set of {set_bytes} bytes")
        check_ranges(self)

    @property
    def sets(self) -> int:
        """Sets across all slices (they need not divide evenly among the slices)."""
        return self.size_bytes // (self.line_bytes * self.associativity)


@dataclass(frozen=True)
class HBMSpec:
    stacks: int = bounded(5, 1, 64)              # HBM stacks (sites populated and enabled)
    channels: int = bounded(160, 1, 16_384)      # independent channels (pseudo-channels) across all stacks
    bus_width_bits: int = bounded(5120, 1, 1 << 20)  # DRAM interface width, all channels together
    bandwidth_GBps: float = bounded(3352.0, 0.001, 1e6)  # peak, all channels together
    capacity_bytes: int = bounded(85017493504, MiB, 1 << 50)  # device memory cudaMalloc can use
    latency_ns: float = bounded(204.0, 1.0, 1e6)  # added beyond an L2 miss, unloaded
    access_granularity_bytes: int = bounded(64, 1, 4096)  # DRAM burst; a 32-byte sector request moves this much
    min_access_bytes: int = bounded(32, 1, 4096)  # smallest DRAM access: a fill or write of fewer bytes (a lone sector) takes the bank and bus this long
    banks_per_channel: int = bounded(32, 1, 1024)  # banks of one pseudo-channel, each with one row buffer
    row_bytes: int = bounded(1024, 32, MiB)      # row (page) of a pseudo-channel, in one bank
    channel_interleave_bytes: int = bounded(256, 1, MiB)  # contiguous bytes of one channel before the address moves to the next
    t_rcd_ns: float = bounded(14.0, 0.0, 1e5)    # tRCD: activate to column command
    t_rp_ns: float = bounded(14.0, 0.0, 1e5)     # tRP: precharge to activate
    t_ras_ns: float = bounded(34.0, 0.0, 1e5)    # tRAS: activate to precharge, at least
    t_wr_ns: float = bounded(16.0, 0.0, 1e5)     # tWR: last write data to precharge (write recovery)
    t_ccd_l_ns: float = bounded(2.0, 0.0, 1e5)   # tCCD_L: column command to column command in one bank (32 B each)
    t_wtr_ns: float = bounded(22.0, 0.0, 1e5)    # tWTR (+ write latency): data bus idle from a write to a read
    t_rtw_ns: float = bounded(2.0, 0.0, 1e5)     # tRTW: data bus idle from a read to a write
    t_faw_ns: float = bounded(0.0, 0.0, 1e5)     # tFAW: at most 4 row activations per pseudo-channel in this window (0: no limit)
    write_activation_share: float = bounded(1.0, 0.0, 100.0)  # a row activation for a write takes this many times a read's share (t_faw / 4) of the tFAW window
    t_refi_ns: float = bounded(3900.0, 1.0, 1e9)  # tREFI: interval between all-bank refreshes of a pseudo-channel
    t_rfc_ns: float = bounded(450.0, 0.0, 1e8)   # tRFC: an all-bank refresh blocks its pseudo-channel this long
    write_queue_bursts: int = bounded(16, 1, 65_536)  # writes a controller collects per channel before draining them together

    def __post_init__(self) -> None:
        _positive(self, "stacks", "channels", "bus_width_bits", "bandwidth_GBps", "capacity_bytes", "latency_ns",
                  "access_granularity_bytes", "min_access_bytes", "banks_per_channel", "row_bytes", "t_refi_ns",
                  "write_queue_bursts")
        _integer(self, "stacks", "channels", "bus_width_bits", "capacity_bytes", "access_granularity_bytes", "min_access_bytes",
                 "banks_per_channel", "row_bytes", "write_queue_bursts")
        _nonnegative(self, "t_rcd_ns", "t_rp_ns", "t_ras_ns", "t_wr_ns", "t_ccd_l_ns", "t_wtr_ns", "t_rtw_ns",
                     "t_rfc_ns", "t_faw_ns", "write_activation_share")
        _power_of_two(self, "row_bytes", "channel_interleave_bytes")
        _integer(self, "channel_interleave_bytes")
        if not self.access_granularity_bytes <= self.channel_interleave_bytes <= self.row_bytes:
            raise ConfigError(f"HBMSpec.channel_interleave_bytes ({self.channel_interleave_bytes}) must lie between "
                              f"access_granularity_bytes ({self.access_granularity_bytes}) and row_bytes ({self.row_bytes})")
        if self.min_access_bytes > self.access_granularity_bytes:
            raise ConfigError(f"HBMSpec.min_access_bytes ({self.min_access_bytes}) must not exceed "
                              f"access_granularity_bytes ({self.access_granularity_bytes}): no access is larger than a burst")
        if self.t_rfc_ns >= self.t_refi_ns:
            raise ConfigError(f"HBMSpec.t_rfc_ns ({self.t_rfc_ns}) must be below t_refi_ns ({self.t_refi_ns}): "
                              f"refresh would leave no time for accesses")
        if self.latency_ns * 1.0 < self.t_rcd_ns + self.t_rp_ns:
            raise ConfigError(f"HBMSpec.latency_ns ({self.latency_ns}) is the latency of a row miss and must cover "
                              f"t_rp_ns + t_rcd_ns ({self.t_rp_ns + self.t_rcd_ns})")
        check_ranges(self)


@dataclass(frozen=True)
class NoCSpec:
    bandwidth_bytes_per_cycle: float = bounded(5120.0, 0.01, 2e7)  # SM <-> L2 crossbar, all SMs together
    latency_cycles: int = bounded(20, 1, 100_000)  # one traversal
    gpcs: int = bounded(1, 1, 1024)              # GPCs the SMs are grouped in (consecutive SM ids, as the block dispatcher fills them; a GPU of fewer SMs has one SM a GPC); read by GPC read merging only
    gpc_merge_window_cycles: float = bounded(0.0, 0.0, 1e7)  # a read of sectors another SM of its GPC read is served by that read's lookup until this long after that read reached the L2 (0 = every read is looked up)
    gpc_merge_requests: int = bounded(4, 1, 1024)  # reads one L2 lookup serves within a GPC, its own included (with gpc_merge_window_cycles > 0)

    def __post_init__(self) -> None:
        _positive(self, "bandwidth_bytes_per_cycle", "latency_cycles", "gpcs", "gpc_merge_requests")
        _integer(self, "gpcs", "gpc_merge_requests")
        _nonnegative(self, "gpc_merge_window_cycles")
        check_ranges(self)


@dataclass(frozen=True)
class LaunchSpec:
    kernel_launch_overhead_ns: float = bounded(2500.0, 0.0, 1e9)  # host-visible launch to first block (what gpu__time_duration excludes: 0)
    kernel_fixed_ns: float = bounded(1800.0, 0.0, 1e9)  # fixed cost inside gpu__time_duration (front end, drain)
    block_dispatch_cycles: float = bounded(40.0, 0.0, 1e6)  # an SM accepts at most one new block every this many cycles

    def __post_init__(self) -> None:
        _nonnegative(self, "kernel_launch_overhead_ns", "kernel_fixed_ns", "block_dispatch_cycles")
        check_ranges(self)
