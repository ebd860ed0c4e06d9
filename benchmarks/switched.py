"""What a mechanism of the functional core saves, measured inside one process: launches of a Triton
program with it and with it switched off, in alternating blocks.

    python benchmarks/switched.py SWITCH [PROGRAM ...] [--size JSON] [--rounds 30] [--launches 10] [--fresh]

Two checkouts compared in separate processes (`paired_launches.py`) carry each process's own
speed, which on a shared 2-core VM differs by up to tens of percent for a process's whole run; a
change that can be switched off at run time is measured better in one process: blocks of
`--launches` launches with it and without, the blocks alternating ABBA, `--rounds` of each.
`--fresh` launches each case on new inputs and checks its outputs after (as `triton_speed.py`
does). Printed per program: the median milliseconds (CPU time) a launch with and without, their
ratio, and the quartiles of the rounds' ratios.

Switches (each off as the code ran before it):
- kept: the memory and cp.async rows' kept placements (`fastpath/kept_placement.py`), withheld by
  keys too small to hold a lane (`unchanged` then places afresh);
- stages: one kept placement per stage of a loop (`kept_placement.stage`), against one an op
  (KEPT_STAGES 1);
- recipes: a launch like an earlier one takes its recipe (`gpusim/relaunch.py`), against the
  general path every launch;
- run_on: a converged batch runs on from block to block (`executor.py`), against the scheduler
  picking every step;
- wgmma_calls: `wgmma` keeps its kernel arguments per plan (`WgmmaOp.calls`), against making them
  every run;
- wgmma_registers: `wgmma` with A from registers gathers A, takes B and multiplies them in one
  compiled call (`wgmma_operands.mma_registers`), against A gathered by a call of its own first.
- wgmma_one_call: `wgmma` gathers its shared-memory operands and multiplies them into the
  accumulators in one compiled call (`wgmma_operands.mma_taken`), against a gather per operand
  and then the product (session 51).
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gpusim  # noqa: E402  (this checkout's, after the path)
from gpusim import relaunch  # noqa: E402
from gpusim.functional import barrier_kernels, stack_kernels, wgmma_ops  # noqa: E402
from gpusim.functional.fastpath import kept_placement  # noqa: E402
from gpusim.functional.fastpath.async_run import CopyRunOp  # noqa: E402
from gpusim.functional.fastpath.memory_run import MemoryRunOp  # noqa: E402
from gpusim.functional.wgmma_ops import WgmmaOp  # noqa: E402
from isa.semantics import wgmma as W  # noqa: E402


class _Never(dict):
    """A `WgmmaOp.calls` that keeps nothing."""

    def get(self, k, default=None):
        return None

    def __setitem__(self, k, v):
        pass


class Switch:
    """on() / off() of one mechanism (module docstring); `prepare()` after the warm-up launches."""

    def prepare(self) -> None:
        pass


class Kept(Switch):
    def prepare(self):
        self.kept = {o: o.placed for o in gc.get_objects()
                     if isinstance(o, (CopyRunOp, MemoryRunOp)) and o.placed is not None}
        self.withheld = {o: (p[0], [(np.zeros((s[0].shape[0], 0), np.uint64),) + s[1:] for s in p[1]])
                         for o, p in self.kept.items()}

    def on(self):
        for o, p in self.kept.items():
            o.placed = p

    def off(self):
        for o, p in self.withheld.items():
            o.placed = p


class Stages(Switch):
    def on(self):
        kept_placement.KEPT_STAGES = 4

    def off(self):
        kept_placement.KEPT_STAGES = 1


class Recipes(Switch):
    find = staticmethod(relaunch.find)

    def on(self):
        relaunch.find = self.find

    def off(self):
        relaunch.find = lambda *a: None


class RunOn(Switch):
    same_top, arrive_all = staticmethod(stack_kernels.same_top), staticmethod(barrier_kernels.arrive_all)

    def on(self):
        stack_kernels.same_top, barrier_kernels.arrive_all = self.same_top, self.arrive_all

    def off(self):
        stack_kernels.same_top = lambda *a: -1
        barrier_kernels.arrive_all = lambda *a: False


class WgmmaCalls(Switch):
    def prepare(self):
        self.ops = [o for o in gc.get_objects() if isinstance(o, WgmmaOp)]

    def on(self):
        for o in self.ops:
            o.calls = {}

    def off(self):
        for o in self.ops:
            o.calls = _Never()


class WgmmaOneCall(Switch):
    mma_taken = staticmethod(wgmma_ops.mma_taken)
    mma_registers = staticmethod(wgmma_ops.mma_registers)

    def on(self):
        wgmma_ops.mma_taken, wgmma_ops.mma_registers = self.mma_taken, self.mma_registers

    def off(self):
        wgmma_ops.mma_taken = wgmma_ops.mma_registers = lambda *a: False   # (as if a gather did not fit: two steps)


class WgmmaRegisters(Switch):
    mma_registers = staticmethod(wgmma_ops.mma_registers)

    def on(self):
        wgmma_ops.mma_registers = self.mma_registers

    def off(self):                                      # A gathered by its own call, then `mma_taken` (until session 52)
        def two(smem, b_at, bb, regs, form, warps, *rest):
            return wgmma_ops.mma_taken(smem, b_at, bb, None, W.ELEM_BITS[form.atype], W.a_from_registers(form, regs, warps),
                                       *rest)
        wgmma_ops.mma_registers = two


SWITCHES = {"kept": Kept, "stages": Stages, "recipes": Recipes, "run_on": RunOn, "wgmma_calls": WgmmaCalls,
            "wgmma_one_call": WgmmaOneCall, "wgmma_registers": WgmmaRegisters}


def measure(switch: Switch, program: str, size, rounds: int, launches: int, fresh: bool) -> tuple:
    """(ms a launch with the mechanism, without, the rounds' ratios sorted), at `size`."""
    spec = importlib.import_module("programs.triton_kernels." + program).PROGRAM
    cases = [spec.case(size, seed=s) for s in range(2)]

    def launch(c) -> None:
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
    for i in range(max(40, 100 // launches)):
        launch(cases[i % 2])
    switch.prepare()

    def block() -> float:
        t = []
        for i in range(launches):
            c = spec.case(size, seed=0) if fresh else cases[i % 2]
            t0 = time.process_time()
            launch(c)
            t.append(time.process_time() - t0)
            if fresh:
                c.check()
        return statistics.median(t) * 1e3
    on, off = [], []
    for r in range(rounds):
        for which in (("on", "off") if r % 2 == 0 else ("off", "on")):
            getattr(switch, which)()
            (on if which == "on" else off).append(block())
    switch.on()
    return statistics.median(on), statistics.median(off), sorted(a / b for a, b in zip(on, off))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("switch", choices=sorted(SWITCHES))
    ap.add_argument("programs", nargs="*", default=["matmul", "flash_attention"])
    ap.add_argument("--size", default='"default"', help="a size name or overrides, as JSON")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--fresh", action="store_true")
    a = ap.parse_args(argv)
    size = json.loads(a.size)
    for program in a.programs:
        on, off, r = measure(SWITCHES[a.switch](), program, size, a.rounds, a.launches, a.fresh)
        q = len(r) // 4
        print(f"{program} {a.size} {a.switch}: on {on:.3f} ms  off {off:.3f} ms  on/off {on / off:.3f} "
              f"(rounds' ratios: quartiles {r[q]:.3f} {r[len(r) // 2]:.3f} {r[len(r) - 1 - q]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
