"""Loop sampling's steady-state issue rate: the rate at which the iterations it left out are
taken to issue (`Extrapolation._loop_stretch`).

Each simulated SM records its windows of the sampled loop's steady state (sm.py: from the
latest warmed-up loop entry to the first SKIP marker after it, over the whole run, not the
first wave's alone, whose blocks start together and wait on their loads in step: 1.3-1.8
instructions a cycle on sgemm_shared_tile against 2.06 over all its waves), as (instructions
issued, cycles). An SM's windows are a few of its blocks' kept iterations, and the launch ends
with the slowest SM, so each SM's own rate would let the noise of a few windows set the
launch's time (held-out 2's `sgemm_shared_tile/n3072` on the H200: 1.57-1.88 instructions a
cycle over its 8 SMs, 1.73 together; +10.8% against -1.9% with every iteration timed). An SM
takes its own rate only where it differs from every simulated SM's together by more than
`RATE_SE` standard errors of its windows' rate (the SM is slower or faster than the others:
its L2 partition, its blocks), else theirs (docs/mechanisms_24.md section 25).
"""
from __future__ import annotations

import math

RATE_SE = 2.0        # an SM's own rate where it is this many standard errors from the SMs' together


def loop_rates(sms) -> list:
    """Per SM of `sms` (each with `loop_windows`, a list of (instructions, cycles)), the
    steady-state rate in instructions a cycle (module docstring), or None where no SM has a
    window."""
    windows = [w for sm in sms for w in sm.loop_windows]
    issued, cycles = sum(w[0] for w in windows), sum(w[1] for w in windows)
    pooled = issued / cycles if issued > 0 and cycles > 0 else None
    return [_rate(sm.loop_windows, pooled) for sm in sms]


def _rate(windows: list, pooled: float | None) -> float | None:
    """One SM's rate from its `windows`: its own where it is more than RATE_SE standard errors
    (the ratio estimator's, over windows of unequal length) from `pooled`, else `pooled`."""
    n = len(windows)
    issued, cycles = sum(w[0] for w in windows), sum(w[1] for w in windows)
    own = issued / cycles if issued > 0 and cycles > 0 else None
    if own is None or pooled is None or n < 2:
        return own or pooled
    se = math.sqrt(sum((i - own * c) ** 2 for i, c in windows) / (n * (n - 1))) / (cycles / n)
    return own if abs(own - pooled) > RATE_SE * se else pooled
