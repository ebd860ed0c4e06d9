"""Per-launch prediction time over every measured suite: each launch under 20 ms on the GPU,
predicted in its own process on one core (issue 26's target: under 60 s prediction-only, under
300 s with outputs).

    nice python benchmarks/suite_speed.py [--jobs N] [--suites h200,h100,...] [--only REGEX]
        [--shard K/N] [--with-outputs] [--max-gpu-ms 20] [--time-limit 240]
        [--json benchmarks/results/suite_speed.json] [--restart] [--summary-only] [--relate OTHER.json]

The launches: every record of `data/measurements/{h200,h100,h200_heldout,h200_heldout2,h100_heldout2,
h100_tensor,h200_tensor}.json` whose measured `gpu__time_duration.sum` is under `--max-gpu-ms`,
rebuilt and predicted as `python -m validate compare` predicts them (`validate.compare.build_case`,
the file's preset and measurement environment, `TimingOptions(mode="auto", functional="sampled")`,
the preset's clock) but with `outputs=False` (prediction only: only the blocks the sampled timing
needs run); `--with-outputs` times `outputs=True` instead. Each launch runs in a fresh process
forked from this one (its modules imported, no kernel compiled), pinned to one CPU
(`sched_setaffinity`), single-threaded (NUMBA_NUM_THREADS, OMP/BLAS threads = 1, `workers=1`);
`--jobs N` such processes run side by side, the costliest first (the committed compare's
`seconds`). Per launch: wall and CPU seconds of the `gpusim.launch` call (compilation to PTX and
SASS inside, as in any fresh launch; the inputs are built before), the prediction, the committed
compare's prediction where it predicted the same way (the tensor sets, `outputs=False`), the timing
mode, the 1-minute load average when it started, and the CPU it ran on.

Resumable: each row is appended to `<--json>.partial.jsonl` the moment its launch finishes (one
flushed write, as `validate/journal.py`); a restart skips the launches that journal predicted for the
same model source (`journal.model_fingerprint`) and mode, and runs the failed ones again
(`--restart` starts afresh). `--shard K/N` takes every N-th launch of the
cost order from the K-th (1-based), to split the run over several calls; the shards' journals (of the same
model source and mode) are merged when the result is written: run the shards in one folder,
or copy their journals beside `--json` and write the result with `--summary-only`. The result: machine, versions, load, command, per-launch rows
and a summary (count, median, 90th percentile, max, the launches over 60 s).
"""
from __future__ import annotations

import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"                  # before numpy/numba load: one thread per launch process

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing.connection import wait  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gpusim  # noqa: E402
from benchmarks.prediction_speed import machine  # noqa: E402
from gpusim.api import resolve_gpu  # noqa: E402
from gpusim.timing.engine import TimingOptions  # noqa: E402
from validate import journal  # noqa: E402
from validate.datadir import DATA_DIR  # noqa: E402
from validate.predict import build_case, default_preset, estimated_cost, measurement_environment, usable  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("h200", "h100", "h200_heldout", "h200_heldout2", "h100_heldout2", "h100_tensor", "h200_tensor")
COMPARED = {"h200": "compare_h200", "h100": "compare_h100", "h200_heldout": "compare_h200_heldout",
            "h200_heldout2": "compare_h200_heldout2", "h100_heldout2": "compare_h100_heldout2",
            "h100_tensor": "compare_h100_tensor", "h200_tensor": "compare_h200_tensor"}
TARGET_S = {False: 60.0, True: 300.0}      # issue 26: prediction-only, with outputs
DURATION = "gpu__time_duration.sum"


def launches(suites, max_gpu_ms: float, only: str | None) -> list[dict]:
    """Every usable record under `max_gpu_ms` of the suites, costliest first: (suite, name, record,
    the committed compare row)."""
    out = []
    for s in suites:
        data = json.loads((DATA_DIR / f"{s}.json").read_text())
        cpath = ROOT / "benchmarks" / "results" / f"{COMPARED[s]}.json"
        committed = {r["name"]: r for r in json.loads(cpath.read_text())["kernels"]} if cpath.is_file() else {}
        for k in data["kernels"]:
            if not usable(k) or k["metrics"][DURATION] >= max_gpu_ms * 1e6 or (only and not re.search(only, k["name"])):
                continue
            out.append({"suite": s, "name": k["name"], "rec": k, "committed": committed.get(k["name"], {})})
    # the committed compare's seconds, else its instruction estimate at ~5e5 warp instructions a second
    out.sort(key=lambda x: -(x["committed"].get("seconds") or estimated_cost(x["rec"]) / 5e5))
    return out


def _child(conn, item: dict, data: dict, outputs: bool, time_limit_s: float, cpu: int | None) -> None:
    """One launch in this (forked) process; sends its row."""
    row = {"suite": item["suite"], "name": item["name"], "gpu_measured_ns": item["rec"]["metrics"][DURATION],
           "committed_seconds": item["committed"].get("seconds"), "outputs": outputs}
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        row["cpu"] = sorted(os.sched_getaffinity(0))[0] if cpu is not None else None
        row["load_average_1min_start"] = round(os.getloadavg()[0], 2)
        t0 = time.perf_counter()
        case = build_case(item["rec"])
        gpu = resolve_gpu(default_preset(data))
        row["build_s"] = round(time.perf_counter() - t0, 2)
        opts = TimingOptions(mode="auto", functional="sampled", **measurement_environment(data))
        c0, t0 = time.process_time(), time.perf_counter()
        r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=gpu, shared_bytes=case.shared_bytes,
                          timing=True, timing_options=opts, outputs=outputs, workers=1, time_limit_s=time_limit_s,
                          **case.options)
        row.update(wall_s=round(time.perf_counter() - t0, 2), cpu_s=round(time.process_time() - c0, 2),
                   predicted_ns=float(r.metrics[DURATION]), timing_mode=r.metrics.get("timing__mode"))
    except Exception as e:           # recorded: a launch past the limit or failing is a row, not a stop
        row.update(wall_s=round(time.perf_counter() - t0, 2), cpu_s=round(time.process_time() - c0, 2),
                   error=f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
    # the committed compare predicted the tensor sets prediction-only at the preset's clock: same launch
    if item["committed"].get("predicted_ns") is not None and not outputs and "tensor" in item["suite"]:
        row["committed_predicted_ns"] = item["committed"]["predicted_ns"]
    conn.send(row)
    conn.close()


def run(items: list[dict], datas: dict, jobs: int, outputs: bool, time_limit_s: float, on_row) -> None:
    """Each item in a fresh forked process, `jobs` at a time, each pinned to its own CPU."""
    ctx = multiprocessing.get_context("fork")
    cpus = sorted(os.sched_getaffinity(0))
    free = list(cpus[:jobs]) if jobs <= len(cpus) else [None] * jobs
    running: dict = {}                              # conn -> (process, cpu)
    todo = list(items)
    while todo or running:
        while todo and free:
            item, cpu = todo.pop(0), free.pop(0)
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_child, args=(send, item, datas[item["suite"]], outputs, time_limit_s, cpu),
                            daemon=True)            # ended with this process (a `timeout` stops the run)
            p.start()
            send.close()
            running[recv] = (p, cpu, item)
        for conn in wait(list(running)):
            p, cpu, item = running.pop(conn)
            try:
                row = conn.recv()
            except EOFError:                        # the process died (memory): a row that says so
                row = {"suite": item["suite"], "name": item["name"], "outputs": outputs,
                       "gpu_measured_ns": item["rec"]["metrics"][DURATION], "error": "process died"}
            p.join()
            p.close()
            free.append(cpu)
            on_row(row)


def summary(rows: list[dict], outputs: bool) -> dict:
    target = TARGET_S[outputs]
    walls = sorted(r["wall_s"] for r in rows if "predicted_ns" in r)
    q = (lambda f: walls[min(len(walls) - 1, int(f * len(walls)))] if walls else None)
    over = sorted(({"name": f"{r['suite']}:{r['name']}", "wall_s": r.get("wall_s"), "error": r.get("error", "")}
                   for r in rows if "predicted_ns" not in r or r["wall_s"] > target), key=lambda x: -(x["wall_s"] or 0))
    same = [r for r in rows if "committed_predicted_ns" in r and "predicted_ns" in r]
    return {"launches": len(rows), "predicted": len(walls), "target_s": target,
            "median_wall_s": statistics.median(walls) if walls else None, "p90_wall_s": q(0.9),
            "max_wall_s": walls[-1] if walls else None, "sum_cpu_s": round(sum(r.get("cpu_s") or 0 for r in rows), 1),
            "over_target_or_failed": over, "over_target_count": len(over),
            "committed_prediction_checked": len(same),
            "committed_prediction_differs": [f"{r['suite']}:{r['name']}" for r in same
                                             if r["predicted_ns"] != r["committed_predicted_ns"]]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="launch processes side by side, one CPU each")
    ap.add_argument("--suites", default=",".join(SUITES), help="comma-separated data files of data/measurements")
    ap.add_argument("--only", help="regex on the launch names")
    ap.add_argument("--shard", default="1/1", help="K/N: every N-th launch of the cost order from the K-th")
    ap.add_argument("--with-outputs", action="store_true", help="outputs=True (default: prediction only)")
    ap.add_argument("--max-gpu-ms", type=float, default=20.0, help="launches measured under this many ms")
    ap.add_argument("--time-limit", type=float, default=240.0, help="seconds a launch may run (then a failed row)")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "suite_speed.json")
    ap.add_argument("--restart", action="store_true", help="ignore the journal of an earlier run")
    ap.add_argument("--summary-only", action="store_true", help="write the result from the journal(s), run nothing")
    ap.add_argument("--relate", type=Path, help="another machine's result: per launch both have, its CPU seconds "
                    "over --json's (one core there against one core here), and the median")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))     # SIGTERM: exit, ending the launch processes
    suites = a.suites.split(",")
    outputs = a.with_outputs
    k, n = (int(x) for x in a.shard.split("/"))
    datas = {s: json.loads((DATA_DIR / f"{s}.json").read_text()) for s in suites}
    items = launches(suites, a.max_gpu_ms, a.only)
    mine = items[k - 1::n]
    if a.relate:
        return relate(a.json, a.relate)
    head = {"journal": 1, "what": "suite_speed", "outputs": outputs, "model_sha256": journal.model_fingerprint("")}
    host = machine()
    command = "python benchmarks/suite_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])
    jpath = Path(f"{a.json}.{k}of{n}.partial.jsonl")
    jr = journal.Journal(jpath, dict(head, machine=host, command=command, jobs=a.jobs))   # what it ran on: not matched
    old = _head(jpath)
    if not a.summary_only and (a.restart or old is None or any(old.get(x) != head[x] for x in head)):
        jr.start()                                  # another model, mode or limit: its rows are not this run's
    key = (lambda r: f"{r['suite']}:{r['name']}")
    done = {key(r) for r in _rows(jpath) if "predicted_ns" in r}     # a failed row runs again (a longer limit)
    todo = [x for x in mine if key(x) not in done]
    load_before, t0 = os.getloadavg(), time.perf_counter()

    def on_row(row):
        jr.append(dict(row, name=row["name"], key=key(row)))
        p = f"{row['wall_s']} s wall, {row['cpu_s']} s CPU" if "predicted_ns" in row else row.get("error", "")
        print(f"{key(row)}: {p}", flush=True)

    if not a.summary_only:
        print(f"{len(items)} launches, shard {k}/{n}: {len(mine)}, {len(mine) - len(todo)} done before, "
              f"{len(todo)} to run with --jobs {a.jobs}", flush=True)
        run(todo, datas, a.jobs, outputs, a.time_limit, on_row)
    # every shard's journal of the same mode: the result covers what all of them finished
    rows, heads = {}, []
    for p in sorted(a.json.parent.glob(a.json.name + ".*of*.partial.jsonl")):
        h = _head(p)
        if h and all(h.get(x) == head[x] for x in head):
            heads.append({"journal": p.name, **{x: h.get(x) for x in ("machine", "command", "jobs")}})
            for r in _rows(p):                      # a prediction wins over a failure of the same launch
                if "predicted_ns" in r or key(r) not in rows:
                    rows[key(r)] = r
    wanted = [key(x) for x in items]
    out = [rows[w] for w in wanted if w in rows]
    for r in out:
        r.pop("key", None)
    doc = {"what": __doc__.strip().splitlines()[0], "command": command, "journals": heads,
           "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": host,
           "jobs": a.jobs, "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in os.getloadavg()],
           "wall_s_this_call": round(time.perf_counter() - t0, 1),
           "launches_selected": len(items), "launches_missing": len(wanted) - len(out),
           "summary": summary(out, outputs), "launches": out}
    a.json.write_text(json.dumps(doc, indent=1) + "\n")
    s = doc["summary"]
    print(f"{s['predicted']}/{len(items)} predicted, median {s['median_wall_s']} s, max {s['max_wall_s']} s, "
          f"{s['over_target_count']} over {s['target_s']:.0f} s or failed; {doc['launches_missing']} not run yet",
          flush=True)
    return 0


def relate(here: Path, there: Path) -> int:
    """Prints, per launch predicted in both results, CPU seconds here / there, and their median
    (how many of this machine's core-seconds one of that machine's stands for)."""
    a, b = (json.loads(Path(p).read_text()) for p in (here, there))
    tb = {(r["suite"], r["name"]): r for r in b["launches"] if "predicted_ns" in r}
    ratios = []
    for r in a["launches"]:
        o = tb.get((r["suite"], r["name"]))
        if o and "predicted_ns" in r and o["cpu_s"] > 0:
            ratios.append(r["cpu_s"] / o["cpu_s"])
            print(f"{r['suite']}:{r['name']}: {r['cpu_s']} s / {o['cpu_s']} s = {ratios[-1]:.2f}")
    print(f"median {statistics.median(ratios):.2f} over {len(ratios)} launches" if ratios else "no launch in both")
    return 0


def _head(path: Path) -> dict | None:
    try:
        with open(path) as f:
            return json.loads(f.readline())
    except (OSError, json.JSONDecodeError):
        return None


def _rows(path: Path) -> list[dict]:
    """The finished rows of a journal (a torn last line is skipped: that launch runs again)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines()[1:]:
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(r, dict) and "suite" in r:
            out.append(r)
    return out


if __name__ == "__main__":
    sys.exit(main())
