"""A shared bandwidth resource (an L2 slice, the crossbar, an HBM channel) as a
deterministic fluid server that tolerates requests arriving out of time order.

What is modelled: a unit that moves `bytes_per_cycle` and answers a request
`latency_cycles` after its service starts. Time is cut into windows of
`window_cycles`; each window can carry `bytes_per_cycle * window_cycles` bytes.
A request of n bytes arriving at t is booked into t's window; when that window is
full the remainder spills into the next window with room (a skip table finds it in
amortised O(1)). Inside a window the bytes are served in booking order, so the
request's last byte leaves at `window_start + booked_bytes / bytes_per_cycle` and
its service start is that minus its own transfer time, never earlier than t:

    start      = max(t, window_start + booked_after / bytes_per_cycle - n / bytes_per_cycle)
    completion = start + latency_cycles

Two consequences the callers rely on:
- an idle server adds no waiting at all: completion == t + latency_cycles exactly,
  so a spec's load-to-use latency is reproduced to the cycle (the request's own
  transfer time is inside `latency_cycles`, as in a pipelined unit);
- under saturation every window carries exactly its capacity, so throughput is
  exactly `bytes_per_cycle` whatever the arrival order.

Why windows and not a single "next free time": the timing model advances each SM
through a quantum of cycles before the next SM runs, so a shared unit sees SM 1's
request at cycle 0 after SM 0's at cycle 99. A next-free-time server would make the
first wait 99 cycles on an idle unit; the window books it into the idle past. The
error that remains is bounded by one window (a request may be served behind bytes
booked by a later arrival in the same window). Windows far behind the latest
arrival are forgotten (`horizon_windows`), which bounds memory.

Not modelled: per-request arbitration policy (fluid, booking order), request
headers, and any reordering beyond one window.
"""
from __future__ import annotations

from gpusim.errors import ConfigError

DEFAULT_WINDOW_CYCLES = 32.0
DEFAULT_HORIZON_WINDOWS = 4096


class BandwidthServer:
    """`serve(t, nbytes) -> completion`; `busy_cycles` and `bytes_served` for utilisation."""

    __slots__ = ("bytes_per_cycle", "latency_cycles", "window_cycles", "horizon_windows", "name",
                 "_cap", "_inv_bw", "_inv_w", "_used", "_full", "_hi", "_prune_at", "_last",
                 "bytes_served", "wait_cycles")

    def __init__(self, bytes_per_cycle: float, latency_cycles: float = 0.0, *,
                 window_cycles: float = DEFAULT_WINDOW_CYCLES,
                 horizon_windows: int = DEFAULT_HORIZON_WINDOWS, name: str = ""):
        if not bytes_per_cycle > 0:
            raise ConfigError(f"BandwidthServer {name!r}: bytes_per_cycle must be > 0, got {bytes_per_cycle!r}")
        if latency_cycles < 0:
            raise ConfigError(f"BandwidthServer {name!r}: latency_cycles must be >= 0, got {latency_cycles!r}")
        if not window_cycles > 0:
            raise ConfigError(f"BandwidthServer {name!r}: window_cycles must be > 0, got {window_cycles!r}")
        self.bytes_per_cycle = float(bytes_per_cycle)
        self.latency_cycles = latency_cycles
        self.window_cycles = float(window_cycles)
        self.horizon_windows = int(horizon_windows)
        self.name = name
        self._cap = self.bytes_per_cycle * self.window_cycles
        self._inv_bw = 1.0 / self.bytes_per_cycle
        self._inv_w = 1.0 / self.window_cycles
        self.reset()

    def reset(self) -> None:
        """Forget all bookings and statistics (a fresh, idle unit)."""
        self.clear_bookings()
        self.reset_stats()

    def clear_bookings(self) -> None:
        """Forget the queue (a kernel boundary after which time restarts), keep statistics."""
        self._used: dict[int, float] = {}       # window index -> bytes booked
        self._full: dict[int, int] = {}         # full window -> a later window that may have room
        self._hi = 0                            # latest arrival window seen
        self._prune_at = 2 * self.horizon_windows
        self._last = 0

    def reset_stats(self) -> None:
        self.bytes_served = 0.0
        self.wait_cycles = 0.0                  # summed queueing delay (start - t)

    def scaled(self, fraction: float) -> "BandwidthServer":
        """A fresh server with `fraction` of this one's bandwidth (sampled simulation:
        a fraction of the SMs gets that fraction of a shared unit)."""
        if not 0 < fraction <= 1:
            raise ConfigError(f"BandwidthServer.scaled: fraction must be in (0, 1], got {fraction!r}")
        return BandwidthServer(self.bytes_per_cycle * fraction, self.latency_cycles,
                               window_cycles=self.window_cycles, horizon_windows=self.horizon_windows,
                               name=self.name)

    @property
    def busy_cycles(self) -> float:
        """Cycles the unit spent moving bytes (bytes_served / bytes_per_cycle)."""
        return self.bytes_served * self._inv_bw

    def utilisation(self, elapsed_cycles: float) -> float:
        """Busy fraction of `elapsed_cycles` (0..1)."""
        return self.busy_cycles / elapsed_cycles if elapsed_cycles > 0 else 0.0

    def serve(self, t: float, nbytes: float) -> float:
        """Book `nbytes` arriving at `t`; return the completion time (start + latency)."""
        self.bytes_served += nbytes
        b = int(t * self._inv_w)
        if b > self._hi:
            self._hi = b
            if len(self._used) > self._prune_at:
                self._prune()
        used = self._used
        u = used.get(b, 0.0) + nbytes               # a full window holds exactly _cap: falls to _spill
        if u <= self._cap:
            used[b] = u
        else:
            u = self._spill(b, nbytes)
            b = self._last
        start = b * self.window_cycles + (u - nbytes) * self._inv_bw
        if start <= t:
            return t + self.latency_cycles
        self.wait_cycles += start - t
        return start + self.latency_cycles

    def peek(self, t: float, nbytes: float) -> float:
        """When `nbytes` arriving at `t` would complete (start + latency), booking nothing: what a
        request another unit makes would find here (sampling/warming.py's lines in flight)."""
        b = int(t * self._inv_w)
        used, cap = self._used, self._cap
        while used.get(b, 0.0) + nbytes > cap and nbytes <= cap:
            b = self._full.get(b, b + 1) if b in self._full else b + 1
        start = b * self.window_cycles + used.get(b, 0.0) * self._inv_bw
        return (start if start > t else t) + self.latency_cycles

    # -- internals ------------------------------------------------------------------

    def _find(self, b: int) -> int:
        full = self._full
        path = []
        while b in full:
            path.append(b)
            b = full[b]
        for p in path:
            full[p] = b
        return b

    def _spill(self, b: int, nbytes: float) -> float:
        """Fill window b and the following ones; leave the last in self._last and
        return the bytes booked in it after this request."""
        used, cap = self._used, self._cap
        if b in self._full:
            b = self._find(b)
        rem = nbytes
        while True:
            u = used.get(b, 0.0)
            room = cap - u
            if rem <= room:
                used[b] = u + rem
                self._last = b
                # its last byte leaves at window_start + (u + rem) / bw; the caller takes
                # start = that - nbytes / bw
                return u + rem
            used[b] = cap
            rem -= room
            self._full[b] = b + 1
            b = self._find(b + 1)

    def _prune(self) -> None:
        lo = self._hi - self.horizon_windows
        self._used = {k: v for k, v in self._used.items() if k >= lo}
        self._full = {k: v for k, v in self._full.items() if k >= lo}
        self._prune_at = len(self._used) + 2 * self.horizon_windows

    def __repr__(self) -> str:
        return (f"BandwidthServer({self.name!r}, {self.bytes_per_cycle:g} B/cycle, "
                f"latency {self.latency_cycles:g} cycles)")
