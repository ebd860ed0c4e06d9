"""Hypothesis against the `gpusim` command line, GPU spec TOML files and sweep files (issue 25):
random bytes, random types, random structures. Every input is accepted (it reaches the point
where work would start: a stub stops it there) or refused with one `error: ...` line (argparse's
own usage errors: its usage text and one `error:` line) and a nonzero exit status; no input
gives a traceback.

In-process (`gpusim.cli.main`), derandomized (every run checks the same inputs), in a
temporary working directory (a sweep's `--out` creates its points file before work starts).
EXAMPLES_* add up to the inputs per run (>= 500)."""
from __future__ import annotations

import contextlib
import datetime
import io
import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import gpusim.cli.check as check_cmd
import gpusim.cli.run as run_cmd
import gpusim.collectives.run as collectives
import gpusim.cli.sweep as sweep_cli
import gpusim.sweep.executors as executors
import gpusim.sweep.space as space
from gpusim.cli import main
from gpusim.specs.describe import schema
from gpusim.specs.overrides import ALIASES

EXAMPLES_ARGV, EXAMPLES_SPEC_BYTES, EXAMPLES_SPEC_TOML, EXAMPLES_SWEEP_BYTES, EXAMPLES_SWEEP_TOML = 260, 50, 100, 40, 100
SETTINGS = dict(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck),
                phases=(Phase.generate,))


class Reached(BaseException):
    """Raised where the work of an accepted command would start."""


def _reached(*a, **k):
    raise Reached


@pytest.fixture(scope="module")
def stubbed():
    """Work stubbed out (input building, launches, sweep executors, collectives), small point
    limits (a random --vary may ask for thousands of specs), a scratch working directory."""
    mp = pytest.MonkeyPatch()
    for mod, name in ((run_cmd, "build_case"), (check_cmd, "build_case"), (executors, "run_serial"),
                      (executors, "run_processes"), (executors, "run_dask"), (executors, "run_on_client"),
                      (collectives, "simulate")):
        mp.setattr(mod, name, _reached)
    mp.setattr(sweep_cli, "ASK_POINTS", 40)
    mp.setattr(space, "MAX_POINTS", 60)
    old = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)
            mp.undo()


def asks_for_tracebacks(argv: list[str]) -> bool:
    """--traceback, or an abbreviation argparse reads as it (`--trace` where the command has no
    --trace): the traceback is then what was asked for."""
    return any(len(t.split("=")[0]) > 2 and "--traceback".startswith(t.split("=")[0]) for t in argv)


def run(argv: list[str]) -> None:
    """main(argv): accepted, or refused in one error line with a nonzero status; else fail."""
    if asks_for_tracebacks(argv):
        return
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except Reached:
            return
    text = err.getvalue()
    assert "Traceback" not in text, (argv, text)
    if code == 0:
        return
    lines = [ln for ln in text.split("\n") if ln.strip()]          # splitlines would split at \f, \x1c, ...
    assert lines, (argv, code, "refused without a message")
    if lines[0].startswith("usage:"):                       # argparse: usage text, then one error line
        assert ": error: " in lines[-1] and code == 2, (argv, code, text)
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, code, text)


# ------------------------------------------------------------------ the command line

FIELDS = sorted(schema()) + sorted(ALIASES)
COMMANDS = ["run", "check", "sweep", "collective", "presets", "list"]
FLAGS = ["--gpu", "--size", "--set", "--seed", "--json", "--no-check", "--functional", "--timing", "--mode", "--trace",
         "--plot", "--html", "--max-steps", "--trace-sm", "--trace-cycles", "--tool", "--show", "--gpus", "--sizes",
         "--algorithm", "--protocol", "--in-place", "--yes", "--file", "--vary", "--workers", "--dask", "--out",
         "--resume", "--no-replay", "--no-progress", "--traceback", "--help", "--version"]
WORDS = ["vector_add", "transpose", "reduce", "matmul_tiled", "histogram", "h100", "h200", "a100", "v100",
         "default", "tiny", "small", "all_reduce", "all_gather", "broadcast", "memcheck", "racecheck", "all", "ring",
         "LL", "x.csv", "x.parquet", "x.png", "x.toml", "x.py", "sub/x.csv", "/dev/full", "", " ", "-", "--",
         "0", "-1", "1e30", "nan", "inf", "0x10", "64K:1G", "1:2:3", "1:1000:x1.0001", "2000:8000:4", "66,132",
         "n=1024", "n=abc", "stride=33", "rows=4,cols=4", "local", "\x00", "é", "☃"]
VALUES = st.one_of(st.sampled_from(["0", "-1", "1", "32", "1e6", "1e400", "nan", "-inf", "true", "64KiB", "2.5",
                                    "66,132", "1:10:3", "1:10:x2", "1:10:0", "a:b:c", "", "0x1F", "1_000", "[]"]),
                   st.integers(-10**20, 10**20).map(str), st.floats(allow_nan=True).map(repr),
                   st.text(max_size=12))


@st.composite
def tokens(draw):
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.sampled_from(FLAGS))
    if kind == 1:
        return draw(st.sampled_from(WORDS))
    if kind == 2:
        return f"{draw(st.sampled_from(FIELDS))}={draw(VALUES)}"
    if kind == 3:
        return f"{draw(st.text(max_size=8))}={draw(VALUES)}"
    if kind == 4:
        return draw(VALUES)
    return draw(st.text(max_size=16))


@st.composite
def argvs(draw):
    head = [draw(st.sampled_from(COMMANDS))] if draw(st.integers(0, 9)) else []
    return head + draw(st.lists(tokens(), max_size=8))


def test_random_command_lines_never_give_a_traceback(stubbed):
    @settings(max_examples=EXAMPLES_ARGV, **SETTINGS)
    @given(argvs())
    def example(argv):
        run(argv)
    example()


# ------------------------------------------------------------------ TOML files

def toml_key(k: str) -> str:
    return json.dumps(k, ensure_ascii=False)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, (int, datetime.date, datetime.time)):
        return v.isoformat() if not isinstance(v, int) else str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(doc: dict) -> str:
    """A TOML document of `doc`: scalars and arrays first, then a [table] per dict value."""
    lines, tables = [], []
    for k, v in doc.items():
        (tables if isinstance(v, dict) else lines).append((k, v))
    out = [f"{toml_key(k)} = {toml_value(v)}" for k, v in lines]
    for k, v in tables:
        out.append(f"[{toml_key(k)}]")
        out += [f"{toml_key(kk)} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(out) + "\n"


SCALARS = st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(), st.booleans(), st.text(max_size=10),
                    st.dates(), st.times(), st.sampled_from(["h100", "h200", "64MiB", "66,132", "1:10:3", "vector_add"]))
TOML_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                           max_leaves=8)
NUMBERS = st.one_of(st.integers(-10, 10**7), st.floats(-1e12, 1e12), st.sampled_from(["64MiB", "1e3", "0x20", "4KB"]))
FIELD_VALUES = st.one_of(NUMBERS, NUMBERS, TOML_VALUES)


@st.composite
def spec_docs(draw):
    """Mostly a base and known fields (dotted, or as tables) with numbers or random values;
    sometimes anything."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.dictionaries(st.one_of(st.sampled_from(FIELDS + ["base", "name"]), st.text(max_size=10)),
                                    TOML_VALUES, max_size=5))
    doc = {"base": draw(st.sampled_from(["h100", "h100", "h200", "a100", "nope", "x.toml"]))}
    if draw(st.integers(0, 7)) == 0:
        doc["name"] = draw(st.one_of(st.text(max_size=8), TOML_VALUES))
    doc.update(draw(st.dictionaries(st.sampled_from(FIELDS), FIELD_VALUES, max_size=3)))
    for group in draw(st.lists(st.sampled_from(["hbm", "l2", "sm", "clocks", "nvlink", "system"]), max_size=2)):
        fields = [f.split(".", 1)[1] for f in schema() if f.startswith(group + ".") and f.count(".") == 1]
        doc[group] = draw(st.dictionaries(st.sampled_from(fields + ["nope"]), FIELD_VALUES, max_size=3))
    return doc


def _file(name: str, data: bytes) -> str:
    p = Path(name)
    p.write_bytes(data)
    return str(p)


def test_random_bytes_as_a_gpu_spec_file(stubbed):
    @settings(max_examples=EXAMPLES_SPEC_BYTES, **SETTINGS)
    @given(st.one_of(st.binary(max_size=200), st.binary(max_size=40).map(lambda b: b'base = "h100"\n' + b)))
    def example(data):
        run(["presets", "--show", _file("spec.toml", data)])
    example()


def test_random_gpu_spec_files(stubbed):
    @settings(max_examples=EXAMPLES_SPEC_TOML, **SETTINGS)
    @given(spec_docs(), st.sampled_from(["presets", "run", "sweep"]))
    def example(doc, command):
        path = _file("spec.toml", to_toml(doc).encode())
        argv = {"presets": ["presets", "--show", path], "run": ["run", "vector_add", "--gpu", path],
                "sweep": ["sweep", "vector_add", "--gpu", path, "--workers", "1"]}[command]
        run(argv)
    example()


RANGES = st.one_of(st.sampled_from(["1:10:3", "66,132", "1:2:x2", "8:132:4", "1000:8000:x2", "0:0:1", "5:1:3",
                                     "1e3:2e3:2", "1:10:x1", "1:10:0", "1::3", ":", ","]),
                   st.lists(NUMBERS, max_size=4), NUMBERS, TOML_VALUES)


@st.composite
def sweep_docs(draw):
    """Mostly the known settings with plausible or random values; sometimes anything."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.dictionaries(st.one_of(st.sampled_from(["gpu", "programs", "sizes", "set", "vary", "seed"]),
                                              st.text(max_size=8)), TOML_VALUES, max_size=4))
    doc = {"programs": draw(st.one_of(st.just(["vector_add"]), st.just("vector_add"), st.just(["nope"]),
                                      st.just(["transpose", "vector_add"]), st.just(["vector_add"]), TOML_VALUES))}
    if draw(st.booleans()):
        doc["vary"] = draw(st.dictionaries(st.sampled_from(FIELDS), RANGES, max_size=2))
    if draw(st.booleans()):
        doc["set"] = draw(st.dictionaries(st.sampled_from(FIELDS), FIELD_VALUES, max_size=2))
    if draw(st.booleans()):
        doc["sizes"] = draw(st.one_of(st.just([{"n": 1024}]), TOML_VALUES, st.lists(st.one_of(
            st.sampled_from(["default", "tiny", "medium", "nope"]),
            st.dictionaries(st.sampled_from(["n", "m"]), st.one_of(NUMBERS, SCALARS), max_size=2)), max_size=3)))
    if draw(st.booleans()):
        doc["gpu"] = draw(st.one_of(st.sampled_from(["h100", "h200", "a100", "nope", "x.toml"]),
                                    st.sampled_from(["h100", "h200"]), TOML_VALUES))
    if draw(st.integers(0, 3)) == 0:
        doc["seed"] = draw(st.one_of(st.integers(-5, 2**70), TOML_VALUES))
    return doc


def test_random_bytes_as_a_sweep_file(stubbed):
    @settings(max_examples=EXAMPLES_SWEEP_BYTES, **SETTINGS)
    @given(st.one_of(st.binary(max_size=200),
                     st.binary(max_size=40).map(lambda b: b'programs = ["vector_add"]\n[vary]\n' + b)))
    def example(data):
        run(["sweep", "--file", _file("sweep.toml", data), "--workers", "1"])
    example()


def test_random_sweep_files(stubbed):
    @settings(max_examples=EXAMPLES_SWEEP_TOML, **SETTINGS)
    @given(sweep_docs(), st.lists(st.sampled_from(["--vary", "sm.count=8", "--size", "n=64", "--out", "t.csv",
                                                   "--resume", "--yes"]), max_size=3))
    def example(doc, extra):
        run(["sweep", "--file", _file("sweep.toml", to_toml(doc).encode()), "--workers", "1", *extra])
    example()


def test_the_runs_add_up_to_five_hundred_inputs():
    assert EXAMPLES_ARGV + EXAMPLES_SPEC_BYTES + EXAMPLES_SPEC_TOML + EXAMPLES_SWEEP_BYTES + EXAMPLES_SWEEP_TOML >= 500
