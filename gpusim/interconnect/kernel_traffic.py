"""A kernel's peer-memory traffic on the fabric, for `gpusim.System`'s shared timeline.

The single-GPU timing model times a kernel with arrays on peers (`peer_args`) against its
own NVLink port (`gpusim.timing.memory.peer`) and reports the payload it moved
(`nvltx__bytes.sum`: stores and atomics sent; `nvlrx__bytes.sum`: read data received).
On the System's timeline that traffic is a flow per direction and peer, spread evenly over
the kernel's time alone in chunks of `CHUNK_BYTES` (at most `MAX_CHUNKS` per flow, larger
when there are more bytes; the flows staggered so that they do not queue behind each
other), through the same ports as copies and collectives. A chunk that queues behind other
traffic makes the kernel late by its wait: the kernel ends at its time alone plus the
largest wait of its chunks (zero on idle ports), and its chunks take their share of the
ports from whatever overlaps it.
"""
from __future__ import annotations

import math

import simpy

CHUNK_BYTES = 64 << 10       # modelling unit only: the SMs' traffic is 32-byte sectors
MAX_CHUNKS = 2048


def flows(gpu: int, peers: dict[int, float], sent_bytes: float, received_bytes: float) -> list[tuple]:
    """(src, dst, bytes) per direction and peer: the kernel's bytes split over its peers in
    proportion to `peers` (peer GPU -> the bytes of its arrays the kernel was given)."""
    total = sum(peers.values())
    out = []
    for p, w in sorted(peers.items()):
        share = w / total if total else 1.0 / len(peers)
        if sent_bytes:
            out.append((gpu, p, sent_bytes * share))
        if received_bytes:
            out.append((p, gpu, received_bytes * share))
    return out


def kernel_process(fabric, duration_ns: float, traffic: list[tuple], work=None):
    """SimPy process body: the kernel runs `duration_ns` (or the process body `work`, its
    computation where it shares the GPU) with its `traffic` flows paced over `duration_ns`,
    and ends when `work` has, or `duration_ns` after it started plus the largest queueing
    wait of a chunk, whichever is later."""
    env = fabric.env
    start = env.now
    traffic = [t for t in traffic if t[2] > 0]
    granted = []

    def flow(i, src, dst, nbytes):
        k = max(1, min(MAX_CHUNKS, math.ceil(nbytes / CHUNK_BYTES)))
        for j in range(k):
            yield env.timeout(max(0.0, start + (j + i / len(traffic)) * duration_ns / k - env.now))
            granted.append(env.event())
            env.process(fabric.carry(src, dst, nbytes / k, granted=granted[-1]))

    issuing = [env.process(flow(i, *t)) for i, t in enumerate(traffic)]
    yield env.process(work) if work is not None else env.timeout(duration_ns)
    if issuing:
        yield simpy.AllOf(env, issuing)
        waits = yield simpy.AllOf(env, granted)
        yield env.timeout(max(0.0, start + duration_ns + max(waits.values()) - env.now))
