"""A bounded pool of requests in flight below a unit: the L1's read MSHRs and its
unacknowledged stores (`l1.py`).

What is modelled: at most `limit` sectors may be on their way at once; a request of m
sectors that does not fit waits until enough earlier ones are back, the earliest first;
the wait is summed in `wait_cycles`. Not modelled: per-line MSHR entries (the pool
counts sectors) and any priority between requests.
"""
from __future__ import annotations

from heapq import heappop, heappush


class InFlight:
    """Sectors sent below the L1 and not back yet, at most `limit` of them (the read MSHRs,
    the unacknowledged stores): `room(t, m)` is when m more may leave, the earliest returns
    freeing room first; `add(done, m)` books m sectors back at `done`."""

    __slots__ = ("limit", "heap", "count", "wait_cycles")

    def __init__(self, limit: int):
        self.limit = limit
        self.wait_cycles = 0.0
        self.clear()

    def clear(self) -> None:
        self.heap: list = []                 # (back time, sectors)
        self.count = 0

    def room(self, t: float, m: int) -> float:
        heap = self.heap
        while heap and heap[0][0] <= t:
            self.count -= heappop(heap)[1]
        if self.count + m > self.limit:
            t0 = t
            while heap and self.count + m > self.limit:
                r, c = heappop(heap)
                self.count -= c
                if r > t:
                    t = r
            self.wait_cycles += t - t0
        return t

    def add(self, done: float, m: int) -> None:
        heappush(self.heap, (done, m))
        self.count += m
