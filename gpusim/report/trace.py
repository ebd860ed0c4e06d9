"""A timing-model recording as a Chrome trace (the JSON "Trace Event Format" that
Perfetto UI, ui.perfetto.dev, and chrome://tracing open).

    gpusim run reduce_sequential --trace trace.json        # then open it in ui.perfetto.dev

Layout: each recorded SM is a process ("SM 0"); each warp slot of a sub-partition is a
thread ("SMSP1 warp 3", tid = 1 + sub-partition * 1000 + slot) carrying complete ("X")
slices: one per issued instruction (name: the SASS opcode; args: source line, SASS
index, block and warp) and one per stall interval (name: the Nsight warp state, e.g.
`long_scoreboard`; category `stall`), back to back, never overlapping (two instructions
issued for one warp in the same cycle share one slice, "S2R + S2UR"; `otherData.
same_cycle_issues` counts them); barrier arrivals
and releases are instant ("i") events on the warp's thread. Memory requests are async
slices ("b"/"e", category `memory`, one id each) on the SM's thread 0, named by kind and level
served ("load hbm", "shared", "store l2"); their args carry sectors (shared:
wavefronts), issuing warp slot and SASS opcode. A "memory system" process carries the
counters ("C"): bandwidth requested of the L2 and moved by HBM, GB/s per counter bin.
Times ("ts", "dur") are whole SM cycles of simulated time, written as integers where the
format expects microseconds: a viewer's "1 us" is one cycle (`otherData.time_unit` and
`time_axis` say so; `cycle_ns` converts). Integers because Perfetto imports the JSON's
microseconds as integer nanoseconds (x 1000, a fraction rounded, in older versions
truncated): 1-cycle issue slices of 0.5-0.6 ns would round onto each other and read as
nested or overlapping. No `displayTimeUnit`: some Perfetto versions take "ns" there as
the unit of `ts` itself. Stall intervals, which may end between cycles, are rounded at
both ends (one that rounds to nothing is left out).

Bounded by the recording (`gpusim.timing.record.TraceWindow`): about one trace event
per recorded event (two per memory request) plus two per counter bin and the names.
"""
from __future__ import annotations

import json
from pathlib import Path

from gpusim.result import Result

COUNTER_PID = 1_000_000          # the memory-system process (SM indices are far below)


MEMORY_TID = 0                   # an SM's memory requests; warp slots from 1


def _tid(sp: int, slot: int) -> int:
    return 1 + sp * 1000 + slot


def _cycle(t) -> int:
    return int(round(t))


def _apart(events: list) -> tuple[list, int]:
    """The events with each warp thread's slices apart: two instructions the model issued
    for one warp in the same cycle (a uniform-datapath instruction beside another) become
    one slice named by both; a stall that begins in an issue's cycle starts after it, and
    one that reaches into an issue ends before it. Returns (events, issues merged)."""
    rest, by_thread = [], {}
    for e in events:
        (by_thread.setdefault((e["pid"], e["tid"]), []) if e["ph"] == "X" else rest).append(e)
    merged = 0
    for spans in by_thread.values():
        spans.sort(key=lambda e: (e["ts"], e["cat"] != "issue"))
        kept: list = []
        for e in spans:
            prev = kept[-1] if kept else None
            if prev is not None and e["ts"] < prev["ts"] + prev["dur"]:
                if e["cat"] == "issue" and prev["cat"] == "issue":
                    prev["name"] += " + " + e["name"]
                    merged += 1
                    continue
                if e["cat"] == "issue":                   # a stall reaching into this issue ends before it
                    prev["dur"] = e["ts"] - prev["ts"]
                    if prev["dur"] <= 0:
                        kept.pop()
                else:                                     # a stall starting in the issue's cycle starts after it
                    end = e["ts"] + e["dur"]
                    e["ts"] = prev["ts"] + prev["dur"]
                    e["dur"] = end - e["ts"]
                    if e["dur"] <= 0:
                        continue
            kept.append(e)
        rest.extend(kept)
    return rest, merged


def chrome_trace(rec) -> dict:
    """The trace of a `gpusim.timing.record.Recording` as a JSON-ready dict."""
    ops, lines = rec.opcodes, rec.source_lines
    meta, ev = [], []
    threads = sorted({(e[0], e[1], e[2]) for e in rec.issues} | {(e[0], e[1], e[2]) for e in rec.stalls}
                     | {(e[0], e[1], e[2]) for e in rec.barriers})
    for sm in rec.window.sms:
        meta.append({"ph": "M", "pid": sm, "tid": 0, "name": "process_name", "args": {"name": f"SM {sm}"}})
        meta.append({"ph": "M", "pid": sm, "tid": 0, "name": "process_sort_index", "args": {"sort_index": sm}})
        meta.append({"ph": "M", "pid": sm, "tid": MEMORY_TID, "name": "thread_name",
                     "args": {"name": "memory requests"}})
    for sm, sp, slot in threads:
        tid = _tid(sp, slot)
        meta.append({"ph": "M", "pid": sm, "tid": tid, "name": "thread_name",
                     "args": {"name": f"SMSP{sp} warp {slot}"}})
        meta.append({"ph": "M", "pid": sm, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    for sm, sp, slot, t, idx, block, wib in rec.issues:
        ev.append({"ph": "X", "pid": sm, "tid": _tid(sp, slot), "ts": _cycle(t), "dur": 1, "name": ops[idx],
                   "cat": "issue", "args": {"line": lines[idx], "sass": idx, "block": block, "warp": wib}})
    for sm, sp, slot, a, b, reason, idx in rec.stalls:
        t0, t1 = _cycle(a), _cycle(b)
        if t1 > t0:
            ev.append({"ph": "X", "pid": sm, "tid": _tid(sp, slot), "ts": t0, "dur": t1 - t0, "name": reason,
                       "cat": "stall", "args": {"waiting_to_issue": ops[idx], "line": lines[idx], "cycles": b - a}})
    for sm, sp, slot, ta, tr, block in rec.barriers:
        for t, what in ((ta, "barrier arrive"), (tr, "barrier release")):
            ev.append({"ph": "i", "s": "t", "pid": sm, "tid": _tid(sp, slot), "ts": _cycle(t), "name": what,
                       "cat": "barrier", "args": {"block": block}})
    for n, (sm, sp, slot, kind, t0, t1, level, size, idx) in enumerate(rec.memory):
        name = kind if kind == level else f"{kind} {level}"
        common = {"pid": sm, "tid": MEMORY_TID, "cat": "memory", "id": n, "name": name}
        a = _cycle(t0)
        ev.append({**common, "ph": "b", "ts": a,
                   "args": {"size": size, "unit": "wavefronts" if kind == "shared" else "sectors",
                            "warp": f"SMSP{sp} warp {slot}", "sass": ops[idx], "line": lines[idx],
                            "cycles": t1 - t0}})
        ev.append({**common, "ph": "e", "ts": max(_cycle(t1), a + 1)})
    if rec.counter_cycles:
        meta.append({"ph": "M", "pid": COUNTER_PID, "tid": 0, "name": "process_name",
                     "args": {"name": "memory system"}})
        bin_ns = rec.window.counter_window_cycles * rec.cycle_ns
        for c, l2, hbm in zip(rec.counter_cycles, rec.l2_bytes, rec.hbm_bytes):
            ev.append({"ph": "C", "pid": COUNTER_PID, "tid": 0, "ts": _cycle(c), "name": "L2 bandwidth",
                       "args": {"GB/s": l2 / bin_ns}})
            ev.append({"ph": "C", "pid": COUNTER_PID, "tid": 0, "ts": _cycle(c), "name": "HBM bandwidth",
                       "args": {"GB/s": hbm / bin_ns}})
    ev, merged = _apart(ev)
    ev.sort(key=lambda e: (e["pid"], e["tid"], e["ts"]))
    w = rec.window
    return {"traceEvents": meta + ev,
            "otherData": {"kernel": rec.kernel, "gpu": rec.gpu, "time_unit": "cycle",
                          "time_axis": f"1 us on the time axis is 1 SM cycle ({rec.cycle_ns:.4g} ns)",
                          "cycle_ns": rec.cycle_ns, "sms": list(w.sms),
                          "start_cycle": w.start_cycle, "end_cycle": w.end_cycle, "max_events": w.max_events,
                          "dropped_events": rec.dropped, "same_cycle_issues": merged,
                          "source": "gpusim timing model (simulated time)"}}


def write_chrome_trace(rec, path) -> Path:
    """Write the trace of `rec` (a Recording, or a Result launched with one) to `path`."""
    if isinstance(rec, Result):
        rec = rec.extra["recording"]
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        json.dump(chrome_trace(rec), f, separators=(",", ":"))
    return out
