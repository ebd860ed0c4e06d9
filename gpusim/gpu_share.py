"""One GPU's SMs and DRAM bandwidth on `gpusim.System`'s timeline, shared by the kernels,
collectives and copies that run on it at the same time.

- SMs: a collective runs one thread block per channel, and each of those blocks holds an SM
  to itself (NCCL builds its kernels for 640 threads with 96 registers each, the whole
  register file, so "NCCL CTAs won't share an SM with compute kernels": NCCL's maintainer in
  NVIDIA/nccl#689 and #181). A kernel beside it keeps `sm_count - channels` SMs: a kernel
  that used `sms_used` SMs alone (its grid, at most every SM) runs at
  min(1, free SMs / sms_used) of its speed alone, its work as a fluid that speeds up again
  when the collective ends.
- DRAM: a collective moves each byte its links carry through the GPU's DRAM about
  `nccl.dram_bytes_per_link_byte` times (the peer's stores land in this GPU's FIFO, its
  channels read them back and write the output; "at least 2x ... it can be 3x": NVIDIA/nccl
  #1428), a peer copy its bytes once at each end, both at their average rate alone. A
  kernel's DRAM rate alone is its dram__bytes_read.sum + dram__bytes_write.sum over its time
  alone; it gets what they leave of `hbm.bandwidth_GBps` and slows by the missing share.
- Collectives and copies keep their own speed: what a kernel takes from them (DRAM, the
  order in which the block scheduler hands out SMs when a collective arrives behind a
  many-wave kernel) is not modelled (DEVIATIONS.md, row "concurrency").
"""
from __future__ import annotations


class GPUShare:
    """The collectives and copies running on one GPU now, and a kernel's speed beside them."""

    def __init__(self, env, sm_count: int, dram_GBps: float):
        self.env, self.sm_count, self.dram_GBps = env, int(sm_count), float(dram_GBps)
        self.users: dict[object, tuple[int, float]] = {}     # token -> (SMs held, DRAM GB/s)
        self.changed = env.event()

    def enter(self, token, sms: int, dram_GBps: float) -> None:
        self.users[token] = (int(sms), float(dram_GBps))
        self._signal()

    def leave(self, token) -> None:
        del self.users[token]
        self._signal()

    def _signal(self) -> None:
        ev, self.changed = self.changed, self.env.event()
        ev.succeed()

    def kernel_rate(self, sms_used: int, dram_GBps: float) -> float:
        """A kernel's speed relative to alone: the SMs and the DRAM bandwidth left to it."""
        if not self.users:
            return 1.0
        held = sum(s for s, _ in self.users.values())
        rate = min(1.0, max(self.sm_count - held, 0) / max(sms_used, 1))
        if dram_GBps > 0:
            left = max(self.dram_GBps - sum(d for _, d in self.users.values()), 0.0)
            rate = min(rate, left / dram_GBps)
        return rate


def kernel_work(share: GPUShare, duration_ns: float, sms_used: int, dram_GBps: float):
    """SimPy process body: `duration_ns` of the kernel's work alone, done at `share`'s rate."""
    env = share.env
    remaining = float(duration_ns)
    while remaining > 0.0:
        rate, changed = share.kernel_rate(sms_used, dram_GBps), share.changed
        if rate <= 0.0:
            yield changed
            continue
        t0 = env.now
        yield env.timeout(remaining / rate) | changed
        remaining -= (env.now - t0) * rate
        if remaining <= 1e-9 * duration_ns:       # done, up to the rounding of the steps above
            remaining = 0.0

