"""When the functional core stops a kernel that has not finished, and the errors that say why.

gpusim never stops a kernel for running long: a kernel's data decides how long its loops run
(a CSR row of a million entries, a FlashAttention block of 64 query rows), and no bound read
from its arguments can tell a long loop from an endless one. A batch stops early only when

- its warps can make no more progress (`watchdog.py`): every unfinished warp repeats a loop
  over values nothing can change any more, or waits at a barrier only such warps could release
  (`NoProgress`, `no_progress_error`); or every unfinished warp runs a loop that can end only
  when a counter wraps around, after more than 2^28 thread-iterations (`wraparound_error`);
- it ran past the step budget its caller set: `launch(..., max_steps=N)`, `gpusim run
  --max-steps N` (`StepBudgetExceeded`, `budget_error`); a step runs one basic block for a
  group of warps, and a batch also stops after `WARP_STEPS_PER_STEP` times as many warp-steps
  (many warps spinning in lock-step cost time and, in timing mode, memory per warp and step);
- the launch ran past the wall-clock limit its caller set: `launch(..., time_limit_s=S)`,
  `gpusim run --time-limit S` (`TimeLimitExceeded`, `time_limit_error`), checked every 256
  steps and after every block the timing model finishes. Unlike everything else in gpusim
  this depends on the machine's speed: it is a guard for scripts, not a result.

Each error is one line: the kernel, the source line the warps were at, the first block and
thread there, how many warps and threads were where, and what a user can do.
"""
from __future__ import annotations

import os
import time

import numpy as np

from gpusim.errors import NoProgress, StepBudgetExceeded, TimeLimitExceeded
from gpusim.functional.watchdog import OBSERVE_AFTER_STEPS, Watchdog

WARP_STEPS_PER_STEP = 128        # warp-steps (warps x steps) allowed per step of an explicit budget
CHECK_EVERY_STEPS = 256          # steps between two looks at the clock (and at the progress callback)


def count_step(ex, b: int, g: np.ndarray, threads: int) -> None:
    """Block `b` run by warps `g` (`threads` active lanes) of executor `ex`: its counts, the step
    budget, and every `CHECK_EVERY_STEPS` steps the progress callback, the time limit and the
    watchdog's start."""
    ex.counters.add_block(b, len(g), threads)
    ex.steps += 1
    ex.warp_steps += len(g)
    if ex.step_budget is not None and (ex.steps > ex.step_budget or
                                       ex.warp_steps > WARP_STEPS_PER_STEP * ex.step_budget):
        raise budget_error(ex, b)
    if ex.steps % CHECK_EVERY_STEPS:
        return
    if ex.on_steps is not None and not ex.steps & 1023:
        ex.on_steps(ex)
    if ex.deadline is not None and ex.deadline.passed():
        raise time_limit_error(ex.kernel_name, ex.deadline.seconds, ex, b)
    if ex.watch is None and ex.detect and ex.steps >= max(OBSERVE_AFTER_STEPS, ex._watch_again):
        ex.watch = Watchdog(ex)


def count_chain(ex, blocks: np.ndarray, g: np.ndarray, threads: int) -> None:
    """`count_step` of each of `blocks` (a chain: distinct blocks, int64) run by warps `g` in one
    step of the executor: counted together where no budget is set and no check falls among
    their steps, else block by block."""
    k = len(blocks)
    if ex.step_budget is not None or (ex.steps + k) // CHECK_EVERY_STEPS != ex.steps // CHECK_EVERY_STEPS:
        for b in blocks.tolist():
            count_step(ex, b, g, threads)
        return
    c = ex.counters
    c.block_warps[blocks] += len(g)
    c.block_threads[blocks] += threads
    ex.steps += k
    ex.warp_steps += k * len(g)


class Deadline:
    """A wall-clock limit of `seconds` from now (`time.monotonic`)."""

    def __init__(self, seconds: float):
        self.seconds = float(seconds)
        self.at = time.monotonic() + self.seconds

    def passed(self) -> bool:
        return time.monotonic() > self.at


def _places(ex, warps: np.ndarray, first_block: int | None = None):
    """[(source line, warps, threads, first lane, short line)] of `warps` (by their
    top-of-stack block), the line of `first_block` first, then by threads."""
    stacks = ex.stacks
    warps = warps[stacks.depth[warps] > 0] if len(warps) else warps
    tops = stacks.top_pc()[warps] if len(warps) else np.zeros(0, np.int64)
    ok = (tops >= 0) & (tops < len(ex.dk.blocks))
    warps, tops = warps[ok], tops[ok]
    masks = stacks.top_mask(warps) if len(warps) else np.zeros(0, np.uint32)
    places: dict[str, list] = {}
    for w, pc, m in zip(warps.tolist(), tops.tolist(), masks.tolist()):
        where = ex.block_source(pc)
        lane = w * 32 + ((m & -m).bit_length() - 1 if m else 0)
        entry = places.setdefault(where, [0, 0, lane, _short(ex, pc)])
        entry[0] += 1
        entry[1] += bin(m).count("1")
    first = ex.block_source(first_block) if first_block is not None else None
    return sorted(([k] + v for k, v in places.items()), key=lambda p: (p[0] != first, -p[2]))


def _short(ex, pc: int) -> str:
    blk = ex.dk.blocks[pc]
    if blk.last <= blk.first:
        return f"PTX block {pc}"
    info = ex.dk.infos[blk.first]
    return f"{os.path.basename(info.file)}:{info.line}" if info.line else f"PTX line {info.ptx_line}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' if n != 1 else ''}"


def _where(ex, places, limit: int = 3) -> str:
    """'2 warps (40 threads) at k.py:12, first block (0, 0, 0) thread (3, 0, 0); ...'"""
    parts = []
    for k, (_, warps, threads, lane, short) in enumerate(places[:limit]):
        first = "" if k == 0 else ", first block {} thread {}".format(*ex.lane_coords(lane))
        parts.append(f"{_plural(warps, 'warp')} ({_plural(threads, 'thread')}) at {short}{first}")
    if len(places) > limit:
        parts.append(f"and {len(places) - limit} more lines")
    return "; ".join(parts)


def _span(ex) -> str:
    first = ex.geo.block_coords(ex.first_block)
    last = ex.geo.block_coords(ex.first_block + ex.nctas - 1)
    return f"block {first}" if ex.nctas == 1 else f"blocks {first}..{last}"


def _error(cls, what: str, ex, places, detail: str):
    b0, t0 = ex.lane_coords(places[0][3]) if places else (None, None)
    return cls(what, kernel=ex.kernel_name, source=places[0][0] if places else None, block=b0, thread=t0,
               detail=detail)


def budget_error(ex, block: int) -> StepBudgetExceeded:
    """Past the caller's step budget while running basic block `block`."""
    places = _places(ex, np.arange(ex.nwarps), block)
    detail = (f"{ex.steps:,} steps ({ex.warp_steps:,} warp-steps) in one batch ({_span(ex)}) reached the step budget "
              f"you set ({ex.step_budget:,} steps, or {WARP_STEPS_PER_STEP * ex.step_budget:,} warp-steps); unfinished "
              f"warps were at {_where(ex, places)}. Without max_steps gpusim runs a kernel until it finishes or can "
              "make no more progress")
    return _error(StepBudgetExceeded, "kernel did not finish within max_steps", ex, places, detail)


def time_limit_error(kernel: str, seconds: float, ex=None, block: int | None = None,
                     timed: tuple[int, int] | None = None) -> TimeLimitExceeded:
    """Past the caller's wall-clock limit: in a functional batch (`ex`, running basic block
    `block`), or while the timing model ran (`timed`: blocks timed, of how many)."""
    limit = f"the time limit you set ({seconds:g} s: time_limit_s, --time-limit) passed"
    if ex is None:
        done, total = timed if timed is not None else (0, 0)
        return TimeLimitExceeded("kernel did not finish within the time limit", kernel=kernel,
                                 detail=f"{limit} while the timing model ran ({done:,} of {total:,} blocks timed)")
    places = _places(ex, np.arange(ex.nwarps), block)
    detail = f"{limit} after {ex.steps:,} steps of one batch ({_span(ex)}); unfinished warps were at {_where(ex, places)}"
    return _error(TimeLimitExceeded, "kernel did not finish within the time limit", ex, places, detail)


def no_progress_error(ex, dog, warps: np.ndarray) -> NoProgress:
    """`warps` repeat their loops over values nothing in the batch can change any more (`dog`:
    the batch's watchdog.Watchdog)."""
    stacks = ex.stacks
    places = _places(ex, warps)
    waiting = int(np.count_nonzero(stacks.depth > 0)) - len(warps)
    finished = int(np.count_nonzero(stacks.depth == 0))
    rest = []
    if finished:
        rest.append(f"{_plural(finished, 'warp')} finished")
    if waiting:
        rest.append(f"{_plural(waiting, 'warp')} wait at a barrier only they could release")
    if len(dog.watched):
        reads = f"reading {dog.describe_watched()}, which nothing in the batch can change any more"
    else:
        reads = "reading nothing another thread could change"
    held = stacks.live_mask(warps, ex.launched) & ~stacks.top_mask(warps)     # lanes further down the stack
    hint = ""
    if len(dog.watched) and held.any():
        hint += ("; if they wait for other threads of their own warp (further down its reconvergence stack): gpusim "
                 "runs a warp's diverged paths one after the other (DEVIATIONS.md, reconvergence), so such a "
                 "spin-wait never ends here, though it may on Volta and later")
    if len(dog.watched) and ex.nctas < ex.geo.nblocks and waiting == 0:
        hint += (f"; if they wait for a later block: gpusim runs {_span(ex)} together and each batch to its end, so "
                 "a block waiting for a later one waits for ever, as on a GPU where they are not resident at once")
    detail = (f"after {ex.steps:,} steps {_where(ex, places)} came back to the top of their loop exactly as they "
              f"left it, {reads}" + (f" ({', '.join(rest)})" if rest else "") + hint + "; the loop can never end")
    return _error(NoProgress, "kernel can never finish", ex, places, detail)


def wraparound_error(ex, drift, warps: np.ndarray) -> NoProgress:
    """`warps` run loops that can end only when a counter wraps around (`drift`: wraparound.Drift)."""
    places = _places(ex, warps)
    w0 = int(warps[0])
    left = float(drift.left[warps].max())
    threads = int(np.bitwise_count(ex.stacks.top_mask(warps)).sum())
    work = "" if left == float("inf") else (
        f"; that is {left * threads:,.0f} more thread-iterations, far more than gpusim can simulate in reasonable "
        "time: it reports a loop that can end only by wrap-around instead of running it")
    detail = f"{_where(ex, places)} run a loop whose every exit test {drift.why[w0]}{work}"
    return _error(NoProgress, "kernel cannot finish in reasonable time" if left != float("inf")
                  else "kernel can never finish", ex, places, detail)
