"""The L2 slices' atomic units: where global atomics and reductions are performed, one pass
at a time.

What is modelled (H100/H200, data/measurements/h{100,200}_mechanisms.json, docs/mechanisms_24.md):
- The pass. The L1 splits a warp's atomic into passes of at most one lane per address
  (`functional_streams.py`); a sector is in as many passes as the most lanes on one of its addresses.
  A pass is one read-modify-write of one sector, whatever its lanes: Nsight's
  `lts__d_atomic_input_cycles_active` equals the pass count on every measured size, and
  a pass of 8 addresses of a sector costs what a pass of one does (atomic_bins/i32_b8
  against i32_b1: 1.50 against 1.46 cycles a pass, GPU-wide).
- Serialisation. All atomics of an aligned `l2.atomic_unit_granule_bytes` block (256 B on
  Hopper) are performed by one atomic unit, one pass every `l2.atomic_unit_cycles_per_pass`
  GPU-wide (one line or two of a chunk: 1.39-1.41 cycles a pass). Which unit: a hash of the
  address (`unit_of_granule`): the parities of the address under `l2.atomic_unit_hash_masks`
  form a key, and a fixed mixer spreads the keys over `l2.atomic_units` units. On Hopper the
  masks leave out what the placement probes found never to change the unit: address bit 9
  (chunks 512 B apart share a unit at every measured place) and bits 8, 12 and 16 flipped
  together. The H100 has 80 units (all found over one 2-MiB page), but the presets give each
  key its own unit (`atomic_units` 0): with 80 or 96 chains of 1.39 cycles a pass here,
  uncontended atomics run below the GPU's rate (atomic_throughput/global_distinct +43% H200,
  +63% H100; not traced: a unit may pipeline passes to different lines, and in sampled
  simulation a unit's SMs-seen scale may take it as shared by the whole grid), and the mixer puts
  neighbouring chunks on one unit 1 time in 80, which the GPU never does (histogram_global/large
  on the H100 +96%).
  So 256 int bins (1 KiB) take two units at 0, 256 or 768 B mod 1024 and four at 512
  (atomic_banks_h200: 316 against 166 us); 8 or 16 hot chunks of an aligned block run as
  many units at once as they have 512-B pairs (atomic_units_h100_run2 `sets`: the busiest
  unit carries 2.06-2.1 chunks' passes), 32 and more reach the uncontended rate there.
- A pass holds its sector until the next one on it may start: integer passes
  `l2.atomic_int_sector_interval_cycles` apart (one address from every SM: 1.46 cycles a
  pass, a little above the unit's turn over different sectors), floating-point ones
  `l2.atomic_float_sector_interval_cycles` (3.50). The unit itself is not held longer by a
  float add: over 8 lines float adds run 2 at a time like integer ones
  (atomic_bins/f32_b256 0.73 cycles a pass), and uncontended as fast (f32_b131072).
- Throughput. Each pass holds its home slice for the unit's time, and a pass to a line
  homed in the other partition holds its near slice first for
  `l2.atomic_near_slice_cycles_per_pass` (looked up, its copy dropped, forwarded over the
  fabric), both booked by `l2.py` on the slices' bandwidth servers (`home_bytes`,
  `near_bytes`). Without contention the GPU then finishes slices / (unit + near / 2)
  passes a cycle: 38 on H200 as fitted on atomic_throughput/global_distinct (measured:
  38 there, 45 on atomic_bins/i32_b131072, 58 on atomic_lanes/priv_l1_w8).
- Sampled simulation (`sm_fraction` < 1): a granule's chain serves the whole GPU, so the
  simulated SMs get their fraction of it when every SM uses it, and all of it when only
  theirs do: the interval is multiplied by min(m, 1 / sm_fraction) for a line m blocks of
  the grid share (the footprint's estimate, `sampling/warming.py`); without one (no shared array,
  or a line outside the arguments), by what the simulated SMs seen on the granule so far
  suggest (1 SM: x1, all of them: x 1 / sm_fraction). The slices' share is the slice
  servers' (`l2.py`).

Not modelled: the exact hash. The GPU never put chunks differing in one address bit (other
than 9) on one unit, and its units split into 16 groups by four XOR-linear parities (address
masks 0x1a8800, 0x139000, 0x18a000, 0xc4000 over the first 2 MiB, 5 units a group, 75 of 79
units consistent) with a non-linear part (80 = 16 x 5) not fitted; the mixer instead pairs
any other two keys 1 time in `atomic_units` (neighbouring chunks too). Where an array lands
decides its hot sets' units: a launch given the GPU's addresses (`gpusim.launch(device_addresses=)`,
what `validate measure` records) has its arrays there modulo 2 MiB, and the Hopper presets apply
the masks (docs/mechanisms_24.md section 38); without addresses gpusim's heap puts a numba kernel's
first array 512 B past a 2-MiB boundary (its NumbaEnv global first), where the GPU's allocator put
some measured hot sets (atomic_bins/i32_b256: four units) and not others (i32_b256_ret, f32_b256:
two). A hot span of 32 float sectors at 512 B mod 1 KiB (atomic_hot/f32_a1_h32) runs at about 2.3
units' rate on the H200 where these masks give it four. A request's passes to the sectors of one line run about 20%
faster than this rule (atomic_lanes/hot_l1_w1, hot8_l1_w1, priv_l1_w8); which float types hold
the sector (f32 measured, f64 and f16x2 assumed alike).

Sources: NVIDIA Nsight Compute Kernel Profiling Guide (lts__d_atomic_input_cycles_active,
lts__t_sectors_op_red/atom); the mechanism microbenchmarks of validate/mechanisms/atomics.py
measured on H200 and H100 (data/measurements/h200_mechanisms.json, h100_mechanisms.json); the
placement probes validate/atomic_banks_probe.py (H200) and validate/atomic_units_probe.py
(H100: data/measurements/atomic_units_h100_run2.json, per unit: int 1.39 cycles a pass at
1980 MHz, int with return, float and float with return within 1% of it on one chunk; one
address: float 2.39x int; docs/mechanisms_24.md section 9).
"""
from __future__ import annotations

NEG_INF = float("-inf")
M64 = (1 << 64) - 1


def mix64(x: int) -> int:
    """A fixed 64-bit mixer (splitmix64's finaliser): keys that differ anywhere land on
    unrelated units, as chunks that no measured invariance ties do on the GPU."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & M64
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & M64
    return x ^ (x >> 31)
PRUNE_ENTRIES = 1 << 16                 # granules and float sectors remembered before old ones are pruned


class AtomicUnits:
    """`rmw(t, line, sector, passes, float_op, sm)`: when a sector's last pass starts at its
    unit; `home_bytes`, `near_bytes`: what one pass books at its home slice and at the near
    slice of a far line (l2.py)."""

    def __init__(self, spec, sm_fraction: float = 1.0):
        l2 = spec.l2
        self.granule_shift = (l2.atomic_unit_granule_bytes // l2.line_bytes).bit_length() - 1   # both powers of two
        # the unit hash: bit i of a granule's unit is the parity of (address & masks[i]); no masks:
        # every granule its own unit. Over granule indices here (the masks have no bits below a granule).
        gbits = l2.atomic_unit_granule_bytes.bit_length() - 1
        self.hash_masks = tuple(m >> gbits for m in l2.atomic_unit_hash_masks)
        self.units = l2.atomic_units                 # 0: the masks' parities are the unit
        self._unit_memo: dict[int, int] = {}        # granule -> unit (a cache: never changes a result)
        self.interval_cycles = l2.atomic_unit_cycles_per_pass
        self.int_interval_cycles = l2.atomic_int_sector_interval_cycles
        self.float_interval_cycles = l2.atomic_float_sector_interval_cycles
        # sampled simulation: a granule every SM hammers gives the simulated ones their
        # fraction of its unit; one only the simulated SMs touch, all of it (see rmw)
        self.sm_fraction = sm_fraction
        self._sims = sims = max(1, round(sm_fraction * spec.sm_count))
        self._share_step = (1.0 / sm_fraction - 1.0) / (sims - 1) if sims > 1 else 0.0
        # what a pass books at a (simulated, full-speed) slice, as bytes of its bandwidth: its home
        # slice the unit's time, the near slice of a far line its forwarding
        bw = l2.bandwidth_bytes_per_cycle_per_slice
        self.home_bytes = l2.atomic_unit_cycles_per_pass * bw
        self.near_bytes = l2.atomic_near_slice_cycles_per_pass * bw
        self.footprint = None                        # sampled simulation: the grid's sharing (sampling/warming.py)
        self._sm_count = spec.sm_count
        self._free: dict[int, list] = {}            # granule -> [earliest start of its next pass, SMs seen, scale]
        self._sector_free: dict[int, float] = {}    # sector -> earliest start of its next pass
        self._prune_at = PRUNE_ENTRIES
        self.passes = 0                              # passes performed (at their home units)

    def rmw(self, t: float, line: int, sector: int, passes: int, float_op: bool, sm: int = 0) -> float:
        """`passes` read-modify-writes of `sector` (of `line`) from SM `sm` at its unit, its
        data there at t; when the last one starts."""
        self.passes += passes
        g = line >> self.granule_shift
        if self.hash_masks:
            u = self._unit_memo.get(g)
            if u is None:
                u = self._unit_memo[g] = self.unit_of_granule(g)
            g = u
        ent = self._free.get(g)
        if ent is None:
            ent = self._free[g] = [NEG_INF, 0, self._grid_scale(line)]
        scale = ent[2]
        if scale < 0.0:                              # the whole GPU's SMs on it, estimated from the simulated
            ent[1] |= 1 << (sm & 63)                 # ones seen: 1 -> 1 (private), all -> 1 / sm_fraction
            scale = 1.0 + (min(ent[1].bit_count(), self._sims) - 1) * self._share_step
        iv = self.interval_cycles * scale
        hold = (self.float_interval_cycles if float_op else self.int_interval_cycles) * scale
        if ent[0] > t:
            t = ent[0]
        f = self._sector_free.get(sector, NEG_INF)
        if f > t:
            t = f
        last = t + (passes - 1) * (hold if hold > iv else iv)     # the sector's own passes a hold apart
        self._sector_free[sector] = last + hold
        ent[0] = t + passes * iv
        if len(self._free) + len(self._sector_free) > self._prune_at:
            self._prune(t)
        return last

    def unit_of_granule(self, g: int) -> int:
        """The atomic unit of granule `g` (address // `l2.atomic_unit_granule_bytes`): the key whose
        bit i is the parity of the address's bits under `l2.atomic_unit_hash_masks[i]`, spread over
        `l2.atomic_units` units by a fixed 64-bit mixer (0 units: the key is the unit)."""
        u = 0
        for i, m in enumerate(self.hash_masks):
            u |= ((g & m).bit_count() & 1) << i
        return mix64(u) % self.units if self.units else u

    def _grid_scale(self, line: int) -> float:
        """How much longer a pass holds the granule of `line` for the simulated SMs: 1 in
        full simulation; in sampled simulation the blocks that share the line across the grid
        (the footprint's estimate: m blocks, at most one per SM, give min(m, 1 / sm_fraction)),
        or -1 where there is no such estimate (then: from the simulated SMs seen on it)."""
        if self.sm_fraction >= 1.0:
            return 1.0
        m = self.footprint.blocks_per_line(line) if self.footprint is not None else None
        if m is None:
            return -1.0
        return min(max(1.0, min(m, self._sm_count)), 1.0 / self.sm_fraction)

    def _prune(self, t: float) -> None:
        horizon = t - 65536.0                        # far beyond any quantum's reordering
        self._free = {g: e for g, e in self._free.items() if e[0] > horizon}
        self._sector_free = {s: a for s, a in self._sector_free.items() if a > horizon}
        # amortised: when most entries are recent, the next pruning waits for the dicts to double
        self._prune_at = max(PRUNE_ENTRIES, 2 * (len(self._free) + len(self._sector_free)))

    def flush(self) -> None:
        """Kernel boundary: queues forgotten (time may restart at 0)."""
        self._free.clear()
        self._sector_free.clear()
        self._prune_at = PRUNE_ENTRIES
        if len(self._unit_memo) > PRUNE_ENTRIES:
            self._unit_memo.clear()

    def reset_counters(self) -> None:
        self.passes = 0
