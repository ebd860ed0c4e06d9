"""Functional-mode speed of Triton kernels: gpusim against Triton's own interpreter
(`TRITON_INTERPRET=1`) on the same launch.

    python benchmarks/triton_speed.py [--interpreter-python PY] [--repeats 5] [--burst 1] [--rewarm 0] [--pollute 0]
                                      [--json FILE]

For each case (a program of programs/triton_kernels at a named size or a size override), the
same launch (kernel, inputs from seed 0, grid, constexprs, num_warps, num_stages) runs:
- in gpusim, `gpusim.launch(kernel, grid, None, args, gpu="h100", workers=1, **options)`
  (functional mode, timing=False, one core as the interpreter uses), in a subprocess of this Python;
- under `TRITON_INTERPRET=1`, `kernel[grid](*args, **constexprs, num_warps=..., num_stages=...)`
  on torch CPU tensors (the interpreter needs objects with torch's storage interface: numpy
  arrays are not accepted), in a subprocess of `--interpreter-python` (default: this Python),
  with the variable set before Triton is imported.
Each side runs the launch `--repeats` times after one first launch (gpusim's first includes
Triton's compile and ptxas; the interpreter's first its own warm-up) and, on gpusim's side,
`--warmup` more untimed ones (a process's steady state: its ALU segments compiled once they
have run enough lanes, `gpusim/functional/fastpath/segments.py`, or loaded from the disk cache
an earlier process filled), on fresh copies of the inputs, and both outputs are checked against the program's numpy reference.
The two sides' processes are alive together and their timed launches interleaved in bursts
(`--burst` launches of gpusim's, as many of the interpreter's, gpusim's, ...; the one not
launching waits on its stdin): this machine's speed drifts by tens of percent between minutes
(session 44: the same gpusim launch 17 and 34 ms in two runs minutes apart), which timing each
side in its own window put into the ratio. Every case's processes are started first and the
bursts go round the cases, `--repeats` rounds (since session 50; before, one case's bursts ran
in a few seconds, inside one of the machine's phases, which do not slow both sides alike: the
attention default's ratio 6.3x and 9.1x in two runs the same afternoon), so each case's ratio
is taken over the whole run. The first launch of a burst is a launch after its
process slept: on this VM that alone costs a small launch about a millisecond (session 47: the
Triton matmul default 1.5 ms a launch back to back, 2.9 ms each after a 10 ms sleep, 2.6 ms after
reading 32 MiB), which weighs on a 2 ms launch and not on the interpreter's 10 ms; with
`--burst 1` (every launch after idle, as until session 47) that is what the ratio measures.
Reported per side: the median over every timed launch (with bursts of several, launches after
idle and in the steady state both) and over the first launches of the bursts (after idle),
wall-clock and CPU time of the process (the CPU ratio is the steadier one on a shared, loaded
machine), the first launch, the ratios interpreter / gpusim of those medians and the median of the
bursts' CPU-time ratios, each gpusim burst against the interpreter's next to it
(`ratio_cpu_paired`: the drift cancels within a pair), each side's median CPU time per position in
a burst (`*_cpu_by_position_s`: session 51 found gpusim's small launches slower for the first two
or three of a burst, after the round's other processes ran, than back to back in one process: its
data and code are cold, which the interpreter's 14 ms launch hardly feels; `--rewarm N` runs N
untimed launches of each side before each of its bursts, so that the timed ones measure a process
launching back to back, the drift still cancelled: its "after idle" figures are then the first
timed launches, after those; `--pollute MIB` has each side read and write that much other memory,
untimed, before each timed launch, so that every launch finds the caches holding none of its code
and data (session 52: the L3 here is 48 MiB; in one process, gpusim's attention default took about
1.4 ms a launch after reading 8 MiB between launches and 1.9 after 32 or 128 MiB), the
interpreter's alike), the load average
before and after, and the versions on each side. Both sides run with OPENBLAS_NUM_THREADS=1: the
numpy reference check after each launch (a BLAS matmul) otherwise leaves OpenBLAS's worker threads spinning into the next timed launch, which doubled the process
CPU time of gpusim's matmul 256^3 (45 -> 90 ms against 45 ms wall); and with OMP_NUM_THREADS=1
(one core each, as gpusim's workers=1): with torch's default of one OpenMP thread per core, the
interpreter's threads spin after its launches while the other side runs, which on this 2-core VM
made both sides' launches about 1.8x slower than each alone (session 50: gpusim's matmul default
2.6 ms against 1.4 with no interpreter process, the interpreter's 23.7 against 13.7 alone); one
thread is also the interpreter's faster setting here (12.5 ms alone).

torch is never a gpusim dependency: install a CPU build only where the interpreter runs (this
repository's result: a separate virtual environment, named in the JSON). Where none is at hand,
`--interpreter-from earlier.json` reuses an earlier result's interpreter rows (the interpreter is
Triton's, unchanged by gpusim's commits; the new JSON names the file and its commit) and times
only gpusim's side.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (program, size name or overrides of its default size)
CASES = [("vector_add", "default"), ("vector_add", {"n": 1 << 20}),
         ("softmax", "default"), ("softmax", {"rows": 512, "cols": 1024}),
         ("layer_norm", "default"), ("layer_norm", {"rows": 256, "cols": 4096}),
         ("matmul", "default"), ("matmul", {"m": 256, "n": 256, "k": 256}),
         ("flash_attention", "default"), ("flash_attention", {"heads": 4, "n_ctx": 256, "head_dim": 64, "causal": True})]

COMMON = r"""
import importlib, json, sys, time
import numpy as np
program, size, warmup = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
spec = importlib.import_module("programs.triton_kernels." + program).PROGRAM
def case():
    return spec.case(size, seed=0)
"""

# each side, once ready, runs one timed launch per "go" line on its stdin and answers with its times
SERVE = r"""
print(json.dumps(ready), flush=True)
other = None
for line in sys.stdin:
    words = line.split()
    if not words or words[0] != "go":
        break
    for _ in range(int(words[2]) if len(words) > 2 else 0):     # untimed first (`--rewarm`)
        run()
    mib = int(words[3]) if len(words) > 3 else 0                # `--pollute`: other memory read and written before each
    if mib and (other is None or other.nbytes != mib << 20):
        other = np.zeros(mib << 17)
    dts = []
    for _ in range(int(words[1]) if len(words) > 1 else 1):
        if mib:
            other += 1.0
        dts.append(run())
    print(json.dumps({"t": [d[0] for d in dts], "cpu": [d[1] for d in dts]}), flush=True)
"""

GPUSIM = COMMON + r"""
import gpusim, triton
def run():
    c = case()
    t, t0 = time.perf_counter(), time.process_time()
    gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
    dt = (time.perf_counter() - t, time.process_time() - t0)
    c.check()
    return dt
first = run()
for _ in range(warmup):
    run()
ready = {"first_s": first[0], "triton": triton.__version__, "numpy": np.__version__, "python": sys.version.split()[0]}
""" + SERVE

INTERPRETER = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
""" + COMMON + r"""
import torch, triton
def tensor(a):
    if not isinstance(a, np.ndarray):
        return a
    special = {"bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}
    if a.dtype.name in special:
        return torch.from_numpy(a.view({1: np.uint8, 2: np.int16}[a.dtype.itemsize])).view(special[a.dtype.name])
    return torch.from_numpy(a)          # shares memory: the kernel's stores land in the numpy array
def run():
    c = case()
    args = [tensor(a) for a in c.args]
    o = c.options
    t, t0 = time.perf_counter(), time.process_time()
    c.kernel[c.grid](*args, **o["constexprs"], num_warps=o["num_warps"], num_stages=o.get("num_stages", 3))
    dt = (time.perf_counter() - t, time.process_time() - t0)
    c.check()
    return dt
first = run()
ready = {"first_s": first[0], "triton": triton.__version__, "torch": torch.__version__,
         "numpy": np.__version__, "python": sys.version.split()[0], "executable": sys.executable}
""" + SERVE


class _Side:
    """One side's process: set up (first launch, warm-up), then one timed launch per `launch()`."""

    def __init__(self, python: str, snippet: str, program: str, size, warmup: int = 0):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                   OPENBLAS_NUM_THREADS="1",     # no BLAS threads spinning from the check into a timed launch
                   OMP_NUM_THREADS="1")          # one core each: torch's OpenMP threads idle-spin (module docstring)
        env.pop("TRITON_INTERPRET", None)
        self.what = f"{program} {size}: {python}"
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([python, "-c", snippet, program, json.dumps(size), str(warmup)], env=env,
                                     cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     text=True)
        self.ready = self._reply()
        self.times: list[float] = []
        self.cpu: list[float] = []

    def _reply(self) -> dict:
        for line in self.proc.stdout:
            try:
                out = json.loads(line)
            except ValueError:
                continue
            if isinstance(out, dict):
                return out
        self.err.seek(0)
        raise RuntimeError(f"{self.what} failed:\n{self.err.read()[-3000:]}")

    def launch(self, burst: int = 1, rewarm: int = 0, pollute_mib: int = 0) -> None:
        """`burst` timed launches back to back (each on fresh inputs, checked after its timing), after
        `rewarm` untimed ones; with `pollute_mib`, that many MiB of other memory read and written
        (untimed) before each timed one."""
        self.proc.stdin.write(f"go {burst} {rewarm} {pollute_mib}\n")
        self.proc.stdin.flush()
        r = self._reply()
        self.times.append(r["t"])
        self.cpu.append(r["cpu"])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        self.err.close()


def _bursts(times: list) -> list[list[float]]:
    """A side's times as bursts (lists), an earlier result's single launches as bursts of one."""
    return [t if isinstance(t, list) else [t] for t in times]


def _by_position(bursts: list) -> list[float]:
    """The median CPU time of each position in a burst (the first launch after idle, the second, ...)
    over the bursts that have it: how long the launches after idle stay slower than the steady state."""
    return [statistics.median(b[k] for b in bursts if len(b) > k) for k in range(max(map(len, bursts)))]


def _paired(interpreter: list, gpusim: list) -> float | None:
    """The median over the interleaved bursts of interpreter / gpusim, each burst's median CPU time
    against the other side's burst next to it (the machine's drift between minutes cancels within
    a pair); None for an earlier result's interpreter rows (not interleaved with these)."""
    if len(interpreter) != len(gpusim) or any(len(b) != len(c) for b, c in zip(interpreter, gpusim)):
        return None
    return statistics.median(statistics.median(b) / statistics.median(c) for b, c in zip(interpreter, gpusim))


def _git() -> dict:
    """HEAD, and the branch being merged into the work tree if a merge is in progress."""
    out = {}
    for what in ("HEAD", "MERGE_HEAD"):
        try:
            r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "-q", "--verify", what], capture_output=True,
                               text=True)
        except OSError:
            return {"HEAD": "unknown"}
        if r.stdout.strip():
            out[what] = r.stdout.strip()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interpreter-python", default=sys.executable,
                    help="the Python that runs TRITON_INTERPRET=1 (needs triton and torch, a CPU build is enough)")
    ap.add_argument("--interpreter-from", metavar="JSON",
                    help="take the interpreter side's rows from this earlier result (its same launches, "
                         "named in the new one) instead of running it: where no Python with torch is at hand")
    ap.add_argument("--repeats", type=int, default=5, help="bursts of each side, interleaved")
    ap.add_argument("--burst", type=int, default=1,
                    help="timed launches back to back in each burst (module docstring: the first of a burst is the "
                         "launch after idle, the others the steady state)")
    ap.add_argument("--warmup", type=int, default=0,
                    help="gpusim launches run (untimed) after the first and before the timed ones: the steady state "
                         "of a process that launches the kernel again and again, its compiled segments ready")
    ap.add_argument("--rewarm", type=int, default=0,
                    help="untimed launches of each side before each burst (both sides): the timed ones then measure "
                         "a process launching back to back, the drift still cancelled by the interleaving")
    ap.add_argument("--pollute", type=int, default=0, metavar="MIB",
                    help="each side reads and writes this many MiB of other memory (untimed) before each timed launch: "
                         "launches with the caches cold (module docstring), more than the 48 MiB L3 here")
    ap.add_argument("--programs", nargs="*",
                    help="only these programs (vector_add, softmax, layer_norm, matmul, flash_attention)")
    ap.add_argument("--note", default="", help="a sentence stored with the result (what was measured, and where)")
    ap.add_argument("--json", help="write the rows and the environment to this file")
    a = ap.parse_args(argv)
    load_before = os.getloadavg()
    rows = []
    earlier = None
    if a.interpreter_from:
        doc = json.loads(Path(a.interpreter_from).read_text())
        earlier = {(r["program"], json.dumps(r["size"])): r for r in doc["rows"]}
        earlier_env = doc["environment"]
    cases = [(p, z) for p, z in CASES if not a.programs or p in a.programs]
    sides = []                               # every case's two processes, alive for the whole run
    for program, size in cases:
        sides.append((_Side(sys.executable, GPUSIM, program, size, a.warmup),
                      None if earlier is not None else _Side(a.interpreter_python, INTERPRETER, program, size)))
    for _ in range(a.repeats):               # round after round over the cases, each case's sides' bursts in turn:
        for gs, isd in sides:                # both sides see the machine alike, and each case every phase of the run
            gs.launch(a.burst, a.rewarm, a.pollute)
            if isd is not None:
                isd.launch(a.burst, a.rewarm, a.pollute)
    for (program, size), (gs, isd) in zip(cases, sides):
        gs.close()
        g = {**gs.ready, "times_s": gs.times, "cpu_s": gs.cpu}
        if earlier is not None:
            r = earlier[(program, json.dumps(size))]
            i = {"times_s": r["interpreter_times_s"], "first_s": r["interpreter_first_s"],
                 "cpu_s": r.get("interpreter_cpu_s", [[r["interpreter_cpu_median_s"]]]),
                 **earlier_env["interpreter_side"]}
        else:
            isd.close()
            i = {**isd.ready, "times_s": isd.times, "cpu_s": isd.cpu}
        for side in (g, i):                # (an earlier result's launches, one a burst)
            side["times_s"], side["cpu_s"] = _bursts(side["times_s"]), _bursts(side["cpu_s"])
        every = lambda bursts: [t for b in bursts for t in b]       # noqa: E731
        firsts = lambda bursts: [b[0] for b in bursts]              # noqa: E731
        gm, im = statistics.median(every(g["times_s"])), statistics.median(every(i["times_s"]))
        gc, ic = statistics.median(every(g["cpu_s"])), statistics.median(every(i["cpu_s"]))
        gf, jf = statistics.median(firsts(g["times_s"])), statistics.median(firsts(i["times_s"]))
        rows.append({"program": program, "size": size, "gpusim_median_s": gm, "gpusim_first_s": g["first_s"],
                     "gpusim_times_s": g["times_s"], "gpusim_cpu_median_s": gc, "gpusim_cpu_s": g["cpu_s"],
                     "gpusim_after_idle_median_s": gf, "interpreter_median_s": im,
                     "interpreter_first_s": i["first_s"], "interpreter_times_s": i["times_s"],
                     "interpreter_cpu_median_s": ic, "interpreter_cpu_s": i["cpu_s"],
                     "interpreter_after_idle_median_s": jf, "ratio": im / gm, "ratio_cpu": ic / gc,
                     "ratio_after_idle": jf / gf, "ratio_cpu_paired": _paired(i["cpu_s"], g["cpu_s"]),
                     "gpusim_cpu_by_position_s": _by_position(g["cpu_s"]),
                     "interpreter_cpu_by_position_s": _by_position(i["cpu_s"]),
                     "load_after": os.getloadavg()[0]})
        print(f"{program:11s} {json.dumps(size):32s} gpusim {gm:8.4f}s (cpu {gc:7.4f}s, after idle {gf:7.4f}s, "
              f"first {g['first_s']:6.2f}s)  interpreter {im:8.4f}s (cpu {ic:7.4f}s, after idle {jf:7.4f}s)  "
              f"ratio {im / gm:6.1f}x (cpu {ic / gc:6.1f}x, after idle {jf / gf:6.1f}x, paired "
              f"{rows[-1]['ratio_cpu_paired'] or 0:6.1f}x)  "
              f"load {rows[-1]['load_after']:.1f}", flush=True)
    env = {"gpusim_side": {k: g[k] for k in ("python", "numpy", "triton")},
           "interpreter_side": {**{k: i[k] for k in ("python", "numpy", "triton", "torch", "executable")},
                                **({"from": a.interpreter_from, "from_git": earlier_env["git"]} if earlier else {})},
           "machine": platform.node(), "cpus": os.cpu_count(), "load_before": list(load_before),
           "load_after": list(os.getloadavg()), "git": _git(), "repeats": a.repeats, "burst": a.burst, "warmup": a.warmup,
           "rewarm": a.rewarm, "pollute_mib": a.pollute,
           "note": a.note,
           "command": " ".join(["python", "benchmarks/triton_speed.py"] + (argv if argv is not None else sys.argv[1:]))}
    print(f"min ratio {min(r['ratio'] for r in rows):.1f}x (cpu {min(r['ratio_cpu'] for r in rows):.1f}x, after idle "
          f"{min(r['ratio_after_idle'] for r in rows):.1f}x) over {len(rows)} launches")
    if a.json:
        Path(a.json).write_text(json.dumps({"environment": env, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
