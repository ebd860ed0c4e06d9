"""Where a functional launch's time goes: per op class of the fast core, per launch.

    python benchmarks/op_profile.py PROGRAM [--size JSON] [--launches 100] [--warmup 40] [--json FILE]

PROGRAM is a module of `programs/triton_kernels/` (`matmul`, `flash_attention`, ...) or a name
`programs.get` knows; `--size` a size name ("default") or overrides as JSON
('{"heads": 4, "n_ctx": 256, "head_dim": 64, "causal": true}'). The launch runs as
`benchmarks/triton_speed.py` runs it (`gpusim.launch(..., gpu="h100", workers=1)`, the case's
options), `--warmup` times untimed (segments compiled, caches warm: a process's steady state),
then `--launches` times with each op of the decoded kernel's blocks wrapped by a timer. Printed:
per launch, the whole launch, the executor's steps (`BatchExecutor.execute`) and the ops within
them, and per op class (a `SegmentOp` with shuffles is `SegmentOp+shfl`, a `WarpOp` by its
kind) the calls a launch, the microseconds a call and the milliseconds a launch. The timers
cost about a microsecond a call, so the totals run a few percent above an untimed launch
(`benchmarks/triton_speed.py` gives those).
"""
from __future__ import annotations

import argparse
import collections
import importlib
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpusim  # noqa: E402
import programs  # noqa: E402
from gpusim.functional import executor as EX  # noqa: E402


def _program(name: str):
    try:
        return importlib.import_module("programs.triton_kernels." + name).PROGRAM
    except ModuleNotFoundError:
        return programs.get(name)


def _label(op) -> str:
    k = type(op).__name__
    if k == "SegmentOp" and getattr(op, "shuffles", False):
        return k + "+shfl"
    if k == "WarpOp":
        return f"{k}:{op.kind}"
    return k


class _Timed:
    """An op with a timer around its `run`, charging `totals[label]`."""
    __slots__ = ("op", "label", "totals", "calls")

    def __init__(self, op, totals, calls):
        self.op, self.label, self.totals, self.calls = op, _label(op), totals, calls

    def run(self, x):
        t = time.perf_counter()
        self.op.run(x)
        self.totals[self.label] += time.perf_counter() - t
        self.calls[self.label] += 1

    def __getattr__(self, name):
        return getattr(self.op, name)


def profile(program: str, size, launches: int, warmup: int) -> dict:
    spec = _program(program)
    cases = [spec.case(size, seed=0) for _ in range(2)]

    def launch(c):
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **getattr(c, "options", {}))

    for i in range(warmup):
        launch(cases[i % 2])
    totals: dict = collections.defaultdict(float)
    calls: dict = collections.Counter()
    steps = [0, 0.0]
    wrapped: dict = {}                       # block -> its own ops and chain's, put back after
    execute = EX.BatchExecutor.execute

    def timed_execute(self, b, g):
        blk = self.dk.blocks[b]
        if id(blk) not in wrapped:
            wrapped[id(blk)] = (blk, blk.ops, blk.chain_ops)
            for name in ("ops", "chain_ops"):           # (a chain's: the blocks run with it, decode.chains)
                ops = getattr(blk, name)
                if ops is not None:
                    object.__setattr__(blk, name, type(ops)(_Timed(op, totals, calls) for op in ops))
        t = time.perf_counter()
        execute(self, b, g)
        steps[1] += time.perf_counter() - t
        steps[0] += 1

    EX.BatchExecutor.execute = timed_execute
    try:
        t0 = time.perf_counter()
        for i in range(launches):
            launch(cases[i % 2])
        whole = time.perf_counter() - t0
    finally:
        EX.BatchExecutor.execute = execute
        for blk, ops, chain_ops in wrapped.values():
            object.__setattr__(blk, "ops", ops)
            object.__setattr__(blk, "chain_ops", chain_ops)
    rows = [{"op": k, "calls_per_launch": calls[k] / launches, "us_per_call": 1e6 * v / calls[k],
             "ms_per_launch": 1e3 * v / launches} for k, v in sorted(totals.items(), key=lambda kv: -kv[1])]
    return {"program": program, "size": size, "launches": launches, "warmup": warmup,
            "launch_ms": 1e3 * whole / launches, "steps_ms": 1e3 * steps[1] / launches,
            "ops_ms": 1e3 * sum(totals.values()) / launches, "steps_per_launch": steps[0] / launches, "ops": rows,
            "machine": platform.processor() or platform.machine(), "python": platform.python_version()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program")
    ap.add_argument("--size", default='"default"', help="a size name or overrides, as JSON")
    ap.add_argument("--launches", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--json", help="also write the result here")
    a = ap.parse_args(argv)
    size = json.loads(a.size) if a.size.lstrip().startswith(("{", '"')) else a.size
    r = profile(a.program, size, a.launches, a.warmup)
    print(f"{a.program} {a.size}: launch {r['launch_ms']:.3f} ms, steps {r['steps_ms']:.3f} ms, ops "
          f"{r['ops_ms']:.3f} ms, {r['steps_per_launch']:.1f} steps a launch")
    for row in r["ops"]:
        print(f"{row['ms_per_launch']:9.3f} ms {row['calls_per_launch']:7.1f} calls {row['us_per_call']:8.1f} us  "
              f"{row['op']}")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
