"""What a launch returns: Nsight-named metrics, in total, per Python source line and
per PTX instruction.

`Result.metrics` is a dict `{metric name: value}`. `Result.lines` maps a source line
number to a `LineStats` (the same metrics restricted to the instructions compiled from
that line, plus SIMT efficiency); `Result.instructions` lists per-PTX-instruction
rows. `lines_frame()` / `instructions_frame()` give pandas DataFrames.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass, field

import numpy as np

from gpusim.frontend.sass.opcodes import COUNTED_PIPES
from gpusim.functional.counters import METRICS, metric_values


@dataclass(frozen=True)
class LineStats:
    line: int
    text: str
    metrics: dict[str, int]
    instructions: tuple[int, ...]           # PTX instruction indices from this line

    @property
    def warp_instructions(self) -> int:
        return self.metrics["smsp__inst_executed.sum"]

    @property
    def simt_efficiency(self) -> float:
        """Active threads per warp instruction over 32 (1.0 = no divergence)."""
        n = self.metrics["smsp__inst_executed.sum"]
        return self.metrics["smsp__thread_inst_executed.sum"] / (32 * n) if n else 0.0

    @property
    def pred_on_efficiency(self) -> float:
        """Threads whose guard predicate held per warp instruction over 32: below
        `simt_efficiency` where ptxas predicated a branch (both sides issued, each lane on in one)."""
        n = self.metrics["smsp__inst_executed.sum"]
        on = self.metrics.get("smsp__thread_inst_executed_pred_on.sum", self.metrics["smsp__thread_inst_executed.sum"])
        return on / (32 * n) if n else 0.0

    @property
    def shared_wavefronts(self) -> int:
        m = self.metrics
        return (m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
                + m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"])

    @property
    def bank_conflicts(self) -> int:
        m = self.metrics
        return (m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
                + m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"])

    @property
    def global_requests(self) -> int:
        m = self.metrics
        return sum(m[f"l1tex__t_requests_pipe_lsu_mem_global_op_{o}.sum"] for o in ("ld", "st", "atom", "red"))

    @property
    def global_sectors(self) -> int:
        m = self.metrics
        return sum(m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{o}.sum"] for o in ("ld", "st", "atom", "red"))

    @property
    def sectors_per_request(self) -> float:
        r = self.global_requests
        return self.global_sectors / r if r else 0.0


SASS_LINE_METRICS = ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
                     "smsp__thread_inst_executed_pred_on.sum")


@dataclass(frozen=True)
class SassCounts:
    """Executed SASS per SASS instruction: warp instructions (`inst`), active threads
    (`thread_inst`) and threads whose guard predicate held (`thread_inst_pred_on`,
    `gpusim.frontend.sass.predication`), as Nsight Compute counts them."""
    instructions: tuple                          # gpusim.frontend.sass.SassInstr
    inst: np.ndarray
    thread_inst: np.ndarray
    pipe_counters: tuple = ()                    # per instruction: the sm__inst_executed_pipe_* it counts in
    thread_inst_pred_on: np.ndarray | None = None   # None: as thread_inst

    def __post_init__(self):
        if self.thread_inst_pred_on is None:
            object.__setattr__(self, "thread_inst_pred_on", self.thread_inst)

    def metrics(self) -> dict[str, float]:
        out = {"smsp__inst_executed.sum": int(self.inst.sum()),
               "smsp__thread_inst_executed.sum": int(self.thread_inst.sum()),
               "smsp__thread_inst_executed_pred_on.sum": int(self.thread_inst_pred_on.sum())}
        if self.pipe_counters:
            pipes = dict.fromkeys(COUNTED_PIPES, 0)
            names, member = _pipe_members(self.pipe_counters)
            for c, v in zip(names, (member @ np.asarray(self.inst, np.float64)).tolist()):
                pipes[c] = pipes.get(c, 0) + round(v)
            out.update({f"sm__inst_executed_pipe_{p}.sum": v for p, v in pipes.items()})
        return out

    def by_line(self) -> dict[int, dict[str, int]]:
        """Source line -> the SASS metrics of the instructions compiled from it."""
        out: dict[int, dict[str, int]] = {}
        for ins, n, t, on in zip(self.instructions, self.inst.tolist(), self.thread_inst.tolist(),
                                 self.thread_inst_pred_on.tolist()):
            if ins.source_line:
                m = out.setdefault(ins.source_line, dict.fromkeys(SASS_LINE_METRICS, 0))
                m["smsp__inst_executed.sum"] += int(n)
                m["smsp__thread_inst_executed.sum"] += int(t)
                m["smsp__thread_inst_executed_pred_on.sum"] += int(on)
        return out


_PIPE_MEMBERS: dict = {}


def _pipe_members(pipe_counters: tuple) -> tuple[list[str], np.ndarray]:
    """The pipe counters, in the order the instructions first name them, and which instructions
    count in each (a 0/1 matrix, a row a pipe): a kernel's classes are one tuple
    (`SassMap.counter_classes`), so this is found once per kernel and each launch sums its counts
    with one product (the counts are integers below 2^53: the sums are exact, as adding them one
    by one)."""
    hit = _PIPE_MEMBERS.get(id(pipe_counters))
    if hit is not None and hit[0] is pipe_counters:
        return hit[1]
    members: dict[str, list[int]] = {}
    for i, counters in enumerate(pipe_counters):
        for c in counters:
            members.setdefault(c, []).append(i)
    member = np.zeros((len(members), len(pipe_counters)), np.float64)
    for row, idx in enumerate(members.values()):
        member[row, idx] = 1.0
    member.flags.writeable = False
    out = (list(members), member)
    if len(_PIPE_MEMBERS) > 256:
        _PIPE_MEMBERS.clear()
    _PIPE_MEMBERS[id(pipe_counters)] = (pipe_counters, out)
    return out


@dataclass
class Result:
    kernel: str
    gpu: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    metrics: dict[str, float]
    source_file: str
    table: dict[str, np.ndarray]                 # per-instruction counter arrays
    infos: list                                  # decode.InstrInfo per instruction
    ptx: str = ""
    sass: SassCounts | None = None               # executed SASS per SASS instruction (None: tools missing)
    extra: dict = field(default_factory=dict)
    hazards: list = field(default_factory=list)  # gpusim.sanitizer.Hazard records of launch(check=...)

    @property
    def lines(self) -> dict[int, LineStats]:
        if "_lines" not in self.extra:
            by_line: dict[int, list[int]] = {}
            for info in self.infos:
                if info.line:
                    by_line.setdefault(info.line, []).append(info.index)
            sass = self.sass.by_line() if self.sass is not None else {}
            out = {}
            for line in sorted(by_line):
                idx = np.array(by_line[line])
                m = metric_values(self.table, idx)
                if self.sass is not None:
                    m["gpusim__ptx_inst_executed.sum"] = m["smsp__inst_executed.sum"]
                    m["gpusim__ptx_thread_inst_executed.sum"] = m["smsp__thread_inst_executed.sum"]
                    m.update(sass.get(line, dict.fromkeys(SASS_LINE_METRICS, 0)))
                out[line] = LineStats(line, linecache.getline(self.source_file, line).rstrip(), m,
                                      tuple(by_line[line]))
            self.extra["_lines"] = out
        return self.extra["_lines"]

    @property
    def instructions(self) -> list[dict]:
        rows = []
        for info in self.infos:
            row = {"index": info.index, "ptx_line": info.ptx_line, "line": info.line, "mnemonic": info.mnemonic,
                   "unit": info.unit}
            row.update(metric_values(self.table, np.array([info.index])))
            rows.append(row)
        return rows

    def lines_frame(self):
        import pandas as pd  # lazy: pandas, only when a table is asked for
        rows = []
        for ls in self.lines.values():
            rows.append({"line": ls.line, "source": ls.text.strip(), **ls.metrics,
                         "simt_efficiency": ls.simt_efficiency, "sectors_per_request": ls.sectors_per_request})
        extra = sorted({k for ls in self.lines.values() for k in ls.metrics} - set(METRICS))   # e.g. gpusim__ptx_*
        return pd.DataFrame(rows, columns=["line", "source", *METRICS, *extra, "simt_efficiency",
                                           "sectors_per_request"])

    def instructions_frame(self):
        import pandas as pd  # lazy: pandas, only when a table is asked for
        return pd.DataFrame(self.instructions)
