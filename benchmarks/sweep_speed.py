"""What a design-space sweep costs (issue 10's targets).

    python benchmarks/sweep_speed.py [--json FILE] [--parts replay,workers,dask] [--rounds N]

(--json FILE: an existing FILE keeps the parts not run this time.)

- replay: the first point of a sweep (records the functional run; empty stream cache) against
  each further point whose fields allow replay (HBM bandwidth, L2 latency, SM clock, SM count),
  for transpose_shared 1024^2 and matmul_tiled 512^3. As `gpusim.sweep` does, the point with
  the fewest SMs (66) records: sampled mode times each simulated SM's share of the grid, so
  66 SMs time twice the blocks of 132 (which are among them); recorded at 132 SMs, the first
  66-SM point would execute the others. Target: each further point at most 1/3 of the first's
  wall time. Each point's timed blocks (`timing__blocks_simulated`) and the blocks it executed
  functionally are listed.
- workers: one 64-point sweep (vector_add 2^18 elements, 8 HBM bandwidths x 8 L2 hit
  latencies, every point replayable, a cold stream cache each time) serial, then on 2 local
  worker processes. Target: 2 workers >= 1.8x faster.
- dask: the same sweep on a dask.distributed LocalCluster of 2 single-threaded worker processes
  (`gpusim.sweep.executors.local_cluster`, as `dask="local"` starts it; a standing cluster:
  start-up excluded, each worker warmed by one point as the forked local workers inherit this
  warm process). Target: within 15% of the 2 local processes, measured beside the same
  standing cluster (`part_parallel`). Rounds are interleaved so that load changes hit both
  sides of each ratio.

Every configuration is checked equal to the serial table (bit for bit, all metrics). The
load average before and after each part is recorded: on a machine whose cores other work
keeps busy, parallel speed-ups are bounded by the cores left free, not by the sweep.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gpusim  # noqa: E402
import multiprocessing  # noqa: E402
import programs  # noqa: E402
from gpusim.specs import resolve  # noqa: E402
from gpusim.sweep.replay import timed_launch  # noqa: E402
from gpusim.sweep.streams import StreamCache  # noqa: E402

REPLAY_CASES = [("transpose_shared", {"rows": 1024, "cols": 1024}), ("matmul_tiled", {"m": 512, "n": 512, "k": 512})]
REPLAY_POINTS = [["hbm.bandwidth_GBps=6704"], ["l2.hit_latency_cycles=400"], ["clocks.sm_clock_mhz=1500"],
                 ["sm_count=66"], ["sm_count=66", "hbm.bandwidth_GBps=6704"]]
SWEEP_PROGRAM, SWEEP_SIZE = "vector_add", {"n": 1 << 18}
SWEEP_VARY = {"hbm.bandwidth_GBps": "1000:8000:8", "l2.hit_latency_cycles": "150:500:8"}


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _metrics(df):
    return df.drop(columns=["wall_s", "functional_run"]).reset_index(drop=True)


def part_replay(repeats: int = 3) -> dict:
    """Per case, `repeats` rounds of: a fresh stream cache, the first point (recording: the
    point with the fewest SMs, where `gpusim.sweep` records, `executors.order`), the further
    points (replaying) in their order; wall and CPU seconds of each; ratios from the rounds'
    medians."""
    out = {}
    points = [[]] + REPLAY_POINTS
    lead = min(range(len(points)), key=lambda i: resolve("h100", points[i]).sm_count)
    points = [points[lead]] + [p for i, p in enumerate(points) if i != lead]
    for name, size in REPLAY_CASES:
        P = programs.get(name)
        c = P.case(size)               # compile (PTX and SASS caches) outside the timed points
        gpusim.prepare(c.kernel, c.grid, c.block, c.args, "h100", c.shared_bytes).sass  # noqa: B018 (the property compiles)
        l0 = load()
        rounds = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as d:
                cache = StreamCache(d)
                walls, cpus, hows, blocks, executed = [], [], [], [], []
                for sets in points:
                    t, u = time.perf_counter(), time.process_time()
                    c = P.case(size)
                    r, how = timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100", sets), c.shared_bytes,
                                          cache=cache)
                    walls.append(time.perf_counter() - t)
                    cpus.append(time.process_time() - u)
                    hows.append(how)
                    blocks.append(r.metrics["timing__blocks_simulated"])
                    executed.append(r.extra.get("blocks_executed"))
            rounds.append((walls, cpus, hows, blocks, executed))
        med = lambda xs: statistics.median(xs)                        # noqa: E731
        first_w = med([r[0][0] for r in rounds])
        first_c = med([r[1][0] for r in rounds])
        further = []
        for i, sets in enumerate(points[1:], start=1):
            w, cpu = med([r[0][i] for r in rounds]), med([r[1][i] for r in rounds])
            further.append({"sets": sets, "wall_s": round(w, 3), "cpu_s": round(cpu, 3),
                            "wall_ratio": round(w / first_w, 3), "cpu_ratio": round(cpu / first_c, 3),
                            "functional_run": rounds[0][2][i], "blocks_simulated": rounds[0][3][i],
                            "blocks_executed": rounds[0][4][i]})
        out[name] = {"size": size, "repeats": repeats, "first_point_sets": points[0],
                     "first_point_wall_s": round(first_w, 3),
                     "first_point_cpu_s": round(first_c, 3), "first_point_blocks_simulated": rounds[0][3][0],
                     "further_points": further,
                     "max_wall_ratio": max(f["wall_ratio"] for f in further),
                     "max_cpu_ratio": max(f["cpu_ratio"] for f in further), "target_ratio": round(1 / 3, 3),
                     "rounds_wall_s": [[round(x, 3) for x in r[0]] for r in rounds],
                     "load_before": l0, "load_after": load()}
        print(f"{name}: first {first_w:.2f} s wall / {first_c:.2f} s CPU; further (wall/CPU ratio) "
              + ", ".join(f"{f['wall_ratio']:.2f}/{f['cpu_ratio']:.2f}" for f in further), flush=True)
    return out


def _sweep(**kw):
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        df = gpusim.sweep([SWEEP_PROGRAM], [SWEEP_SIZE], SWEEP_VARY, cache_dir=d, **kw)
        return df, time.perf_counter() - t


def _spin(_=None) -> int:
    s = 0
    for i in range(2_000_000):
        s += i * i
    return s


def machine_parallelism() -> float:
    """What 2 processes gain over 1 on this machine right now: 8 pure-Python loops serial vs
    on a fork pool of 2 (2.0 on an idle 2-core machine; ~1.0 when other work fills the cores)."""
    t = time.perf_counter()
    for k in range(8):
        _spin(k)
    t1 = time.perf_counter() - t
    with multiprocessing.get_context("fork").Pool(2) as pool:
        t = time.perf_counter()
        pool.map(_spin, range(8))
        t2 = time.perf_counter() - t
    return round(t1 / t2, 3)


def _warm(_=None):
    """One point in a throwaway cache: imports, the kernel's compile and SASS map in this process."""
    with tempfile.TemporaryDirectory() as d:
        gpusim.sweep([SWEEP_PROGRAM], [SWEEP_SIZE], cache_dir=d)
    return os.getpid()


def _rounds(kinds, rounds: int, client, ref, times: dict, loads: list):
    for _ in range(rounds):
        for kind in kinds:
            loads.append(load())
            kw = {"workers": 1} if kind == "serial" else {"workers": 2} if kind == "local2" else {"client": client}
            df, t = _sweep(**kw)
            if ref[0] is None:
                ref[0] = df
            pd.testing.assert_frame_equal(_metrics(df), _metrics(ref[0]), check_exact=True)
            times[kind].append(round(t, 2))
            print(f"{kind}: {t:.1f} s (load {loads[-1]})", flush=True)


def part_parallel(rounds: int = 2, dask: bool = True) -> dict:
    """Two phases, each of `rounds` interleaved rounds. First serial against 2 local processes,
    with nothing else of this benchmark alive. Then, with a standing LocalCluster (gpusim's
    `executors.local_cluster`, as `dask="local"` starts it; its workers ran one point first, as
    the forked local workers inherit this warm process), 2 local processes against 2 Dask
    workers: the cluster's idle processes and its scheduler thread in this process take some
    CPU from a 2-core machine, so each ratio compares runs made beside the same background.
    Every table checked equal to the first serial one; medians compared."""
    _warm()
    times = {"serial": [], "local2": [], "local2_beside_cluster": [], "dask2": []}
    loads, ref = [], [None]
    _rounds(("serial", "local2"), rounds, None, ref, times, loads)
    if dask:
        import distributed  # only for --dask: starting dask is slow
        from gpusim.sweep.executors import local_cluster  # only for --dask: starting dask is slow
        cluster = local_cluster(2)
        client = distributed.Client(cluster)
        try:
            client.run(_warm)
            beside = {"local2": [], "dask2": []}
            _rounds(("local2", "dask2"), rounds, client, ref, beside, loads)
            times["local2_beside_cluster"], times["dask2"] = beside["local2"], beside["dask2"]
        finally:
            client.close()
            cluster.close()
    med = {k: statistics.median(v) for k, v in times.items() if v}
    res = {"points": len(ref[0]), "program": SWEEP_PROGRAM, "size": SWEEP_SIZE, "vary": SWEEP_VARY, "times_s": times,
           "median_s": med, "speedup_2_local_workers": round(med["serial"] / med["local2"], 3),
           "target_speedup": 1.8, "equal_to_serial": True, "loads": loads, "load_after": load()}
    if dask:
        res["dask2_over_local2"] = round(med["dask2"] / med["local2_beside_cluster"], 3)
        res["target_dask_over_local_max"] = 1.15
    print(f"speed-up x{res['speedup_2_local_workers']}" + (f", dask/local {res['dask2_over_local2']}" if dask else ""))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--parts", default="replay,workers,dask")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of serial / local / Dask (medians)")
    a = ap.parse_args(argv)
    parts = a.parts.split(",")
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "load_start": load(),
               "note": "shared machine: other sessions' jobs run beside this one"}
    res = {}
    if a.json and os.path.exists(a.json):
        with open(a.json) as f:
            res = json.load(f)
        if "machine" in res:                    # a file of the older layout: one stamp for every part
            old = {"date": res.pop("date", None), "machine": res.pop("machine")}
            for part in ("replay", "parallel"):
                if part in res:
                    res.setdefault(f"{part}_run", old)
    stamp = {"command": "python benchmarks/sweep_speed.py " + " ".join(argv if argv is not None else sys.argv[1:]),
             "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine}
    if "replay" in parts:
        res["replay"] = part_replay()
        res["replay_run"] = stamp
    if "workers" in parts or "dask" in parts:
        before = machine_parallelism()
        res["parallel"] = part_parallel(rounds=a.rounds, dask="dask" in parts)
        res["parallel"]["machine_parallelism_2_processes"] = [before, machine_parallelism()]
        res["parallel_run"] = stamp
        print(f"machine: 2 processes of pure Python run x{res['parallel']['machine_parallelism_2_processes']} "
              f"faster than 1 (2.0 = two free cores)")
    machine["load_end"] = load()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
