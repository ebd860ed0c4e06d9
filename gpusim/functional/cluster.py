"""Thread-block clusters in the functional core: the cluster's special registers, its barrier
(`barrier.cluster.arrive` / `barrier.cluster.wait`) and the CTA ranks behind distributed
shared-memory addresses.

A launch with clusters (`gpusim.launch(..., cluster=(x, y, z))` or a kernel's
`__cluster_dims__`, PTX `.reqnctapercluster`) numbers its blocks in cluster order
(`geometry.Geometry`) and runs whole clusters in one batch, so every block of a cluster is
resident with the others (co-scheduled, as on the GPU). A launch without clusters is a launch of
one-block clusters: `%cluster_ctarank` is 0 and `mapa` to rank 0 reaches the block itself.

The cluster barrier (`ClusterUnit`): `barrier.cluster.arrive` records, per thread, the phase of
its cluster it arrived in; the phase completes when every launched, non-exited thread of the
cluster has arrived in it (threads that exit need not arrive). `barrier.cluster.wait` lets a
thread go on once the phase it arrived in has completed, else parks its warp (like `bar.sync`)
until then; a wait without an arrival before it is a `BarrierError`, as is a cluster whose
parked threads wait for threads that can no longer arrive. The completion is checked at every
arrival and whenever nothing else can run (exits may complete it).

Distributed shared memory: a `.shared::cluster` address is gpusim's encoding
(`isa.memory_map.CLUSTER_RANK_SHIFT`): bits 0-23 the offset in a CTA's shared memory, bits 24..
the CTA's rank in the cluster plus one (0: the executing CTA, so every `.shared::cta` address is
also a `.shared::cluster` address of its own CTA). `mapa` (`isa.semantics.cluster`) writes the
rank; the load/store unit resolves it (`lsu.LoadStoreUnit._place`).

Does not model: time (remote accesses cost what local ones do), racecheck of accesses between
CTAs of a cluster (the cluster barrier orders each CTA's own threads for racecheck, as a CTA
barrier does).

Sources: CUDA C++ Programming Guide, "Thread Block Clusters", "Distributed Shared Memory"; PTX
ISA 9.0, 9.7.13.4 "barrier.cluster", 9.7.9.23 "mapa", 10 "Special Registers" (%cluster_*).
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import BarrierError


def cluster_uniform_values(g) -> dict:
    """The special registers every thread of a launch reads alike."""
    cx, cy, cz = g.cluster
    gx, gy, gz = g.grid
    return {"%cluster_nctaid.x": cx, "%cluster_nctaid.y": cy, "%cluster_nctaid.z": cz,
            "%cluster_nctarank": cx * cy * cz, "%nclusterid.x": gx // cx, "%nclusterid.y": gy // cy,
            "%nclusterid.z": gz // cz, "%is_explicit_cluster": int(g.cluster_explicit)}


def cluster_lane_values(g, ctas) -> dict:
    """Lazily computed per-lane special registers: name -> function of nothing; `ctas()` gives
    every lane's linear block id."""
    cx, cy, _ = g.cluster
    size = g.cluster_size

    def rank():
        return ctas() % size

    def cid(axis):
        x, y, z = g.ctaid_arrays(ctas())
        return (x // g.cluster[0], y // g.cluster[1], z // g.cluster[2])[axis]
    return {"%cluster_ctarank": rank, "%cluster_ctaid.x": lambda: rank() % cx,
            "%cluster_ctaid.y": lambda: (rank() // cx) % cy, "%cluster_ctaid.z": lambda: rank() // (cx * cy),
            "%clusterid.x": lambda: cid(0), "%clusterid.y": lambda: cid(1), "%clusterid.z": lambda: cid(2)}


class ClusterUnit:
    """The cluster barrier of one batch (module docstring); `x` is the batch's executor."""

    def __init__(self, x):
        self.x = x
        self.size = x.geo.cluster_size
        n = max(1, x.nctas // self.size)
        self.phase = np.zeros(n, np.int64)               # completed phases per cluster of the batch
        self.lane_phase = np.full(x.nlanes, -1, np.int64)   # phase each thread arrived in, -1: none pending
        self.waits = np.array(sorted(i for i, b in x._barriers.items() if getattr(b, "scope", "") == "cluster"),
                              np.int64)

    def _cluster(self, lanes: np.ndarray) -> np.ndarray:
        return self.x.cta_slot(lanes) // self.size

    def _lanes_of(self, c: int) -> np.ndarray:
        lpc = self.x.wpc * 32 * self.size
        return np.arange(c * lpc, (c + 1) * lpc)

    def arrive(self, op, lanes: np.ndarray) -> None:
        """`barrier.cluster.arrive` by batch lanes `lanes`."""
        again = lanes[self.lane_phase[lanes] >= 0]
        if len(again):
            self._fail(op.index, int(again[0]), "a thread arrives at barrier.cluster twice without a "
                       "barrier.cluster.wait between (PTX: arrive and wait alternate)")
        c = self._cluster(lanes)
        self.lane_phase[lanes] = self.phase[c]
        for k in np.unique(c).tolist():
            self._complete_if_ready(int(k))

    def wait(self, index: int, g: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """`barrier.cluster.wait` by lanes `masks` of warps `g`: the warps that must wait (the
        executor parks them); the others go on."""
        lanes = (g[:, None] * 32 + np.arange(32)).ravel()
        on = ((masks[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool).ravel()
        lanes = lanes[on]
        lp = self.lane_phase[lanes]
        if (lp < 0).any():
            self._fail(index, int(lanes[np.flatnonzero(lp < 0)[0]]), "barrier.cluster.wait without a "
                       "barrier.cluster.arrive before it")
        done = self.phase[self._cluster(lanes)] > lp
        self.lane_phase[lanes[done]] = -1
        warp_of = lanes >> 5
        wait_warps = np.unique(warp_of[~done])
        mixed = np.intersect1d(wait_warps, warp_of[done])
        if len(mixed):
            self._fail(index, int(mixed[0]) * 32, "threads of one warp reach barrier.cluster.wait having arrived "
                       "in different phases")
        return wait_warps

    def recheck(self) -> bool:
        """Complete every phase whose threads have all arrived (exits may have completed one);
        whether any warp was released."""
        x = self.x
        parked = np.flatnonzero((x.arrived != 0) & np.isin(x.wait_at, self.waits))
        before = len(parked)
        for c in np.unique(x.cta_slot(parked * 32) // self.size).tolist():
            self._complete_if_ready(int(c))
        after = np.count_nonzero((x.arrived != 0) & np.isin(x.wait_at, self.waits))
        return after < before

    def deadlock(self) -> None:
        """Every unfinished warp waits and no cluster phase can complete: name the first wait."""
        x = self.x
        parked = np.flatnonzero((x.arrived != 0) & np.isin(x.wait_at, self.waits))
        w = int(parked[0])
        c = int(x.cta_slot(np.array([w * 32]))[0] // self.size)
        lanes = self._lanes_of(c)
        live = self._live(lanes)
        missing = lanes[live & (self.lane_phase[lanes] != self.phase[c])]
        who = ""
        if len(missing):
            block, thread = x.lane_coords(int(missing[0]))
            who = f"; block {block} thread {thread} has not arrived"
        x.fail_barrier(w, int(x.wait_at[w]), None, "barrier.cluster.wait can never complete: threads of the cluster "
                       f"wait at other barriers or for each other{who}")

    # ------------------------------------------------------------------ internals
    def _live(self, lanes: np.ndarray) -> np.ndarray:
        x = self.x
        w = lanes >> 5
        bits = (x.launched[w] & ~x.stacks.exited[w]) >> (lanes & 31).astype(np.uint32)
        return (bits & 1).astype(bool)

    def _complete_if_ready(self, c: int) -> None:
        lanes = self._lanes_of(c)
        live = self._live(lanes)
        if (self.lane_phase[lanes][live] != self.phase[c]).any():
            return
        self.phase[c] += 1
        x = self.x
        w0, w1 = c * self.size * x.wpc, (c + 1) * self.size * x.wpc
        parked = np.arange(w0, w1)
        parked = parked[(x.arrived[parked] != 0) & np.isin(x.wait_at[parked], self.waits)]
        for w in parked.tolist():
            ln = w * 32 + np.flatnonzero((int(x.arrived[w]) >> np.arange(32)) & 1)
            self.lane_phase[ln] = -1
        x.arrived[parked] = 0
        if x.san is not None:
            x.san.barrier(np.arange(c * self.size, (c + 1) * self.size), False)

    def _fail(self, index: int, lane: int, detail: str) -> None:
        x = self.x
        block, thread = x.lane_coords(lane)
        raise BarrierError("misuse of the cluster barrier", kernel=x.kernel_name, source=x.source(index),
                           block=block, thread=thread, detail=detail)
