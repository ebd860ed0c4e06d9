"""Warp scheduling policies, chosen by name (`SMSpec.warp_scheduler`).

A policy picks, among the warps of one sub-partition that can issue this cycle, the
one that does. Warps carry `age` (launch order: lower is older) and `slot` (position
in the sub-partition).

- `gto` (greedy-then-oldest): keep issuing from the warp that issued last while it can,
  else the oldest ready warp. Rogers et al., "Cache-Conscious Wavefront Scheduling",
  MICRO 2012.
- `lrr` (loose round-robin): the next ready warp after the one that issued last, in
  slot order. GPGPU-Sim's `lrr`.
- `oldest`: always the oldest ready warp.
"""
from __future__ import annotations

from typing import Callable

from gpusim.errors import ConfigError

POLICIES: dict[str, Callable] = {}


def policy(name: str):
    def register(fn):
        POLICIES[name] = fn
        return fn
    return register


def get(name: str) -> Callable:
    try:
        return POLICIES[name]
    except KeyError:
        raise ConfigError(f"unknown warp scheduling policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None


@policy("gto")
def greedy_then_oldest(ready: list, last):
    if last is not None and last in ready:
        return last
    return min(ready, key=lambda w: w.age)


@policy("lrr")
def loose_round_robin(ready: list, last):
    if last is None:
        return min(ready, key=lambda w: w.slot)
    after = [w for w in ready if w.slot > last.slot]
    return min(after or ready, key=lambda w: w.slot)


@policy("oldest")
def oldest_first(ready: list, last):
    return min(ready, key=lambda w: w.age)
