"""Peer copies (cudaMemcpyPeerAsync): a copy engine moves the bytes in chunks over the fabric.

A copy of nbytes from GPU src to GPU dst is split into `CHUNK_BYTES` chunks that the
engine keeps in flight back to back on the route; it costs a setup time (`SETUP_NS`, the
engine's descriptor fetch and completion) plus the chunked transfer. Copies issued on one
GPU's stream run in order; copies from different GPUs at once share the ports they use
(two GPUs copying into a third split its ingress port).
"""
from __future__ import annotations

import simpy

from gpusim.interconnect.fabric import Fabric

CHUNK_BYTES = 256 << 10      # estimate: copy-engine work unit; only sets pipelining granularity
SETUP_NS = 2000.0            # estimate: a copy's fixed cost, [MEAS-NVL] 64 KiB copies take 4.5 us end to end


def copy_process(fabric: Fabric, src: int, dst: int, nbytes: int):
    env = fabric.env
    yield env.timeout(SETUP_NS)
    remaining, inflight = int(nbytes), []
    while remaining > 0:
        chunk = min(CHUNK_BYTES, remaining)
        remaining -= chunk
        done = env.process(fabric.transfer(src, dst, chunk))
        inflight.append(done)
        # the engine issues the next chunk when the ports take it, not when this one lands
        if len(inflight) > 2:
            yield inflight.pop(0)
    if inflight:
        yield simpy.AllOf(env, inflight)


def peer_copies(spec, copies: list[tuple[int, int, int]], gpus: int | None = None) -> dict:
    """Simulate copies [(src, dst, nbytes), ...] issued together, each on its source GPU's
    copy stream: copies from one GPU run one after another (one stream, as
    cudaMemcpyPeerAsync on one stream), copies from different GPUs at once, sharing the
    ports they cross. Times in us."""
    n = gpus or max(max(s, d) for s, d, _ in copies) + 1
    fabric = Fabric(spec, gpus=max(n, 2))
    env = fabric.env
    ends = {}
    by_source: dict[int, list] = {}
    for i, (s, d, b) in enumerate(copies):
        by_source.setdefault(s, []).append((i, d, b))

    def stream(src, items):
        for i, d, b in items:
            yield env.process(copy_process(fabric, src, d, b))
            ends[i] = env.now

    for src, items in by_source.items():
        env.process(stream(src, items))
    env.run()
    return {"time_us": max(ends.values()) / 1e3, "per_copy_us": [ends[i] / 1e3 for i in range(len(copies))],
            **fabric.counters()}
