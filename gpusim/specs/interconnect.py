"""Sub-specs of the links between GPUs and of the collective library that uses them.

`NVLinkSpec` (one GPU's NVLink ports), `PCIeSpec` (its host link, the fallback between GPUs
without NVLink), `SystemSpec` (how many GPUs of this kind form the simulated system and how
they are joined) and `NCCLSpec` (the parameters of NCCL's algorithms and protocols that
decide a collective's time). Units are in the field names; bandwidths are per direction.
Defaults are the H100/H200 SXM values cited in `presets/`; every field is used by
`gpusim.interconnect` (a field the model did not honour would be refused, not kept).
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.errors import ConfigError
from gpusim.specs.fields import _integer, _nonnegative, _positive, bounded, check_ranges

TOPOLOGIES = ("nvswitch", "direct", "pcie")


def _fraction(obj, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if not (isinstance(v, (int, float)) and 0 < v <= 1):
            raise ConfigError(f"{type(obj).__name__}.{n} must lie in (0, 1], got {v!r}")


@dataclass(frozen=True)
class NVLinkSpec:
    generation: int = bounded(4, 1, 16)          # NVLink generation (2: V100, 3: A100, 4: H100/H200)
    links: int = bounded(18, 0, 1024)            # NVLinks of one GPU
    link_bandwidth_GBps: float = bounded(26.5625, 0.001, 1e5)  # one link, one direction, signalling rate
    data_efficiency: float = bounded(0.83, 0.001, 1.0)  # payload share of the link rate a copy stream reaches (packet headers)
    latency_ns: float = bounded(900.0, 0.001, 1e7)  # one-way, GPU to a peer's L2 over the links (+ switch_latency_ns)

    def __post_init__(self) -> None:
        _integer(self, "generation", "links")
        _positive(self, "generation", "link_bandwidth_GBps", "latency_ns")
        _nonnegative(self, "links")
        _fraction(self, "data_efficiency")
        check_ranges(self)

    @property
    def bandwidth_GBps(self) -> float:
        """Payload bandwidth of all of a GPU's links, one direction."""
        return self.links * self.link_bandwidth_GBps * self.data_efficiency


@dataclass(frozen=True)
class PCIeSpec:
    generation: int = bounded(5, 1, 16)          # PCIe generation of the GPU's host link
    lanes: int = bounded(16, 1, 64)              # lanes of that link
    bandwidth_GBps: float = bounded(63.0, 0.001, 1e5)  # payload bandwidth, one direction (128b/130b coding, TLP overhead)
    latency_ns: float = bounded(1500.0, 0.001, 1e7)  # one-way, GPU to GPU through the host bridge

    def __post_init__(self) -> None:
        _integer(self, "generation", "lanes")
        _positive(self, "generation", "lanes", "bandwidth_GBps", "latency_ns")
        check_ranges(self)


@dataclass(frozen=True)
class SystemSpec:
    gpu_count: int = bounded(1, 1, 1024)         # GPUs of this kind in the simulated system
    topology: str = "nvswitch"                   # nvswitch (links into switches), direct (split over peers), pcie
    switch_latency_ns: float = bounded(250.0, 0.0, 1e7)  # added by one NVSwitch traversal (topology nvswitch)

    def __post_init__(self) -> None:
        _integer(self, "gpu_count")
        _positive(self, "gpu_count")
        _nonnegative(self, "switch_latency_ns")
        if self.topology not in TOPOLOGIES:
            raise ConfigError(f"SystemSpec.topology must be one of {', '.join(TOPOLOGIES)}, got {self.topology!r}")
        check_ranges(self)


@dataclass(frozen=True)
class NCCLSpec:
    max_channels: int = bounded(24, 1, 1024)     # rings/trees NCCL builds (one thread block each per GPU)
    threads_per_channel: int = bounded(512, 1, 1024)  # threads of a channel's block (NCCL_LL_MAX_NTHREADS)
    channel_threshold_bytes_per_thread: int = bounded(8, 1, 1 << 20)  # fewer channels below channels x threads x this (x ranks for LL)
    slices_per_step: int = bounded(8, 1, 1024)   # NCCL_STEPS: buffer slots a channel pipelines per step
    simple_efficiency: float = bounded(0.89, 0.001, 1.0)  # Simple: share of the link payload rate a channel's copies reach
    ll_efficiency: float = bounded(0.40, 0.001, 1.0)  # LL: 8-byte lines of 4 data bytes + flag, x the copy rate
    ll128_efficiency: float = bounded(0.88, 0.001, 1.0)  # LL128: 128-byte lines of 120 data bytes, x the copy rate
    tree_efficiency: float = bounded(0.84, 0.001, 1.0)  # a chain's (intra-node tree's) rate relative to a ring step's
    channel_bandwidth_GBps: float = bounded(26.7, 0.001, 1e5)  # one channel's copy rate (one thread block moving the data; LL/LL128 rings: x the protocol's payload share, as it copies whole lines)
    launch_latency_ns: float = bounded(4000.0, 0.0, 1e9)  # a collective's fixed cost: kernel launch and final sync
    ll_base_latency_ns: float = bounded(1000.0, 0.0, 1e9)  # LL's fixed cost beyond launch (NCCL's baseLat)
    ll128_base_latency_ns: float = bounded(7600.0, 0.0, 1e9)  # LL128's fixed cost beyond launch
    simple_base_latency_ns: float = bounded(8400.0, 0.0, 1e9)  # Simple's fixed cost beyond launch
    ll_step_latency_ns: float = bounded(500.0, 0.0, 1e9)  # one ring/tree step in LL (flag polling), beyond the link latency
    ll128_step_latency_ns: float = bounded(850.0, 0.0, 1e9)  # one step in LL128
    simple_step_latency_ns: float = bounded(3000.0, 0.0, 1e9)  # Simple chains (broadcast/reduce, tree) and p2p flows: the sync that opens a hop or flow
    simple_slice_sync_ns: float = bounded(3000.0, 0.0, 1e9)  # Simple rings: one NCCL slice's fixed cost to its channel (slot wait, barriers, copy-loop fill and drain, flag); 2 per 2 MiB chunk loop of a channel and ring step (tuning.simple_ring_syncs), overlapped by the link
    p2p_latency_ns: float = bounded(3000.0, 0.0, 1e9)  # a send/recv group's fixed cost beyond launch
    p2p_channel_bandwidth_GBps: float = bounded(20.0, 0.001, 1e5)  # one p2p channel's send rate (its block also runs the receive)
    p2p_receive_bandwidth_GBps: float = bounded(40.0, 0.001, 1e5)  # one p2p channel copying a landed chunk from its buffer to the user's
    p2p_warp_bandwidth_GBps: float = bounded(2.6, 0.001, 1e5)  # one send warp of a p2p channel: a channel whose warps other works share sends at min(p2p_channel_bandwidth_GBps, its send warps x this)
    p2p_chunk_bytes: int = bounded(512 << 10, 1024, 1 << 30)  # Simple send/recv step over NVLink (NCCL_P2P_NVL_CHUNKSIZE)
    p2p_ll_threshold_bytes: int = bounded(16384, 0, 1 << 30)  # send/recv of at most 32 channels x this run LL (NCCL_P2P_LL_THRESHOLD)
    launch_skew_per_gpu_ns: float = bounded(1900.0, 0.0, 1e9)  # one process launching every GPU's kernel: delay per further GPU
    dram_bytes_per_link_byte: float = bounded(3.0, 0.0, 100.0)  # DRAM traffic of a collective per byte its links carry (gpusim.System: a kernel beside it gets the rest of the DRAM)

    def __post_init__(self) -> None:
        _integer(self, "max_channels", "threads_per_channel", "channel_threshold_bytes_per_thread",
                 "slices_per_step", "p2p_chunk_bytes", "p2p_ll_threshold_bytes")
        _positive(self, "max_channels", "threads_per_channel", "channel_threshold_bytes_per_thread",
                  "slices_per_step")
        _fraction(self, "simple_efficiency", "ll_efficiency", "ll128_efficiency", "tree_efficiency")
        _positive(self, "channel_bandwidth_GBps", "p2p_channel_bandwidth_GBps", "p2p_receive_bandwidth_GBps",
                  "p2p_warp_bandwidth_GBps")
        _nonnegative(self, "dram_bytes_per_link_byte", "launch_latency_ns", "ll_base_latency_ns", "ll128_base_latency_ns",
                     "simple_base_latency_ns", "ll_step_latency_ns", "ll128_step_latency_ns", "launch_skew_per_gpu_ns",
                     "simple_step_latency_ns", "simple_slice_sync_ns", "p2p_latency_ns")
        check_ranges(self)

    def efficiency(self, protocol: str) -> float:
        return {"simple": self.simple_efficiency, "ll": self.ll_efficiency, "ll128": self.ll128_efficiency}[protocol]

    def base_latency_ns(self, protocol: str) -> float:
        return {"simple": self.simple_base_latency_ns, "ll": self.ll_base_latency_ns,
                "ll128": self.ll128_base_latency_ns}[protocol]

    def step_latency_ns(self, protocol: str) -> float:
        return {"simple": self.simple_step_latency_ns, "ll": self.ll_step_latency_ns,
                "ll128": self.ll128_step_latency_ns}[protocol]
