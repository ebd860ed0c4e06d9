"""The `gpusim` command line: argument parsing, program resolution, list/presets,
error exits, and `run` output, with gpusim.launch stubbed (conftest.fake_launch)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import programs
from gpusim import cli
from gpusim.cli import exits, program_args
from gpusim.errors import LaunchError
from gpusim.specs import PRESETS


@pytest.mark.parametrize("text, value", [("4096", 4096), ("1_000", 1000), ("0x10", 16), ("2.5", 2.5),
                                         ("1e6", 1e6), ("true", True), ("abc", "abc")])
def test_parse_value(text, value):
    got = cli.parse_value(text)
    assert got == value and type(got) is type(value)


def test_parse_sets():
    assert cli.parse_sets(["n=4096", "stride = 33", "alpha=0.5"]) == {"n": 4096, "stride": 33, "alpha": 0.5}


@pytest.mark.parametrize("bad", ["n", "=3", "n="])
def test_parse_sets_rejects_malformed(bad):
    with pytest.raises(exits.UsageError, match="key=value"):
        cli.parse_sets([bad])


def test_params_for_applies_sets_over_the_named_size():
    spec = programs.get("bank_conflict_demo")
    assert program_args.params_for(spec, "medium", {"stride": 33}) == {"blocks": 256, "stride": 33, "reps": 4}
    assert program_args.params_for(spec, "default", {"blocks": 2e3}) ["blocks"] == 2000      # 1e3-style ints accepted


def test_params_for_rejects_unknown_key_and_size():
    spec = programs.get("vector_add")
    with pytest.raises(exits.UsageError, match="no parameter 'm'; its parameters: n=16384"):
        program_args.params_for(spec, "default", {"m": 3})
    with pytest.raises(exits.UsageError, match="no size 'huge'; its sizes: default"):
        program_args.params_for(spec, "huge", {})
    with pytest.raises(exits.UsageError, match="n is an integer"):
        program_args.params_for(spec, "default", {"n": 2.5})


def test_family_prefix_resolves_in_teaching_order():
    family, specs = program_args.resolve("transpose")
    assert family == "transpose"
    assert [s.name for s in specs] == ["transpose_naive", "transpose_shared", "transpose_padded"]
    family, specs = program_args.resolve("reduce")
    assert [s.name for s in specs] == ["reduce_interleaved_divergent", "reduce_interleaved_strided",
                                       "reduce_sequential", "reduce_first_add", "reduce_warp_shuffle"]
    assert program_args.resolve("vector_add") == (None, [programs.get("vector_add")])


def test_list_includes_every_program(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines()[1:] if line.strip() and not line.startswith("families")}
    assert listed == set(programs.PROGRAMS)
    assert "matrix transpose straight through global memory" in out
    row = next(line for line in out.splitlines() if line.startswith("transpose_naive "))
    assert row.split()[1:3] == ["16x12", "32x8"]                 # default launch shape: grid, block


def test_presets_lists_every_preset(capsys):
    assert cli.main(["presets"]) == 0
    out = capsys.readouterr().out
    for name, spec in PRESETS.items():
        assert name in out and spec.marketing_name in out
    assert "9.0" in out


def test_unknown_program_exits_2_listing_close_matches(capsys):
    assert cli.main(["run", "vectr_add"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: no program named 'vectr_add'")
    assert "did you mean: vector_add" in err


def test_unknown_gpu_exits_4_a_config_error(capsys, fake_launch):
    assert cli.main(["run", "vector_add", "--gpu", "b200"]) == 4
    assert "unknown GPU preset 'b200'" in capsys.readouterr().err
    assert fake_launch == []


def test_bad_arguments_exit_2(capsys):
    assert cli.main([]) == 2
    assert cli.main(["run", "vector_add", "--seed", "x"]) == 2


def test_set_reaches_the_launch(capsys, fake_launch):
    assert cli.main(["run", "vector_add", "--set", "n=100", "--no-check", "--gpu", "a100"]) == 0
    kernel, grid, block, args, kw = fake_launch[0]
    assert len(args[0]) == 100 and grid == (1,)
    assert getattr(kw["gpu"], "name", kw["gpu"]) == "a100-datasheet"      # no calibration for the A100: its datasheet
    out = capsys.readouterr().out
    assert out.startswith("== vector_add [n=100]")
    assert "verdict:" in out


def test_json_output_parses(capsys, fake_launch):
    assert cli.main(["run", "vector_add", "--json", "--no-check"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (prog,) = doc["programs"]
    assert prog["program"] == "vector_add" and prog["check"] == "skipped"
    assert prog["params"] == {"n": 16384}
    assert prog["metrics"]["smsp__inst_executed.sum"] == 640
    by_line = {row["line"]: row for row in prog["lines"]}
    assert by_line[9]["simt_efficiency"] == 0.5
    assert by_line[12]["bank_conflicts"] == 31 * 64
    assert prog["verdict"][0]["kind"] == "bank"


def test_family_runs_each_member_then_compares(capsys, fake_launch):
    assert cli.main(["run", "transpose", "--no-check"]) == 0
    out = capsys.readouterr().out
    views = [line for line in out.splitlines() if line.startswith("== transpose_")]
    assert [v.split()[1] for v in views] == ["transpose_naive", "transpose_shared", "transpose_padded"]
    table = out.split("== comparison: transpose on h100 ==")[1].splitlines()
    assert [row.split()[0] for row in table[2:5]] == ["transpose_naive", "transpose_shared", "transpose_padded"]


def test_output_mismatch_exits_1_with_the_message(capsys, fake_launch):
    assert cli.main(["run", "vector_add"]) == 1          # the stub computes nothing: out stays NaN
    err = capsys.readouterr().err
    assert err.startswith("error: vector_add: output arg 2 differs from the numpy reference")


def test_gpusim_error_is_one_line_without_traceback(capsys, monkeypatch):
    import gpusim

    def bad_launch(*a, **k):
        raise LaunchError("kernel vector_add: block (2048, 1, 1) has 2048 threads, above the limit")

    monkeypatch.setattr(gpusim.api, "launch", bad_launch)
    assert cli.main(["run", "vector_add"]) == 5                 # LaunchError's exit status
    err = capsys.readouterr().err
    assert err == "error: kernel vector_add: block (2048, 1, 1) has 2048 threads, above the limit\n"
    assert cli.main(["run", "vector_add", "--traceback"]) == 5
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith("above the limit\n")


USER_PROGRAM = '''
import numpy as np
from numba import cuda
from programs.base import Case, ProgramSpec


@cuda.jit
def double_it(x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = 2 * x[i]


def build(rng, n):
    x = rng.integers(0, 10, n).astype(np.int32)
    return Case("double_it", double_it, ((n + 127) // 128,), (128,), (x, np.zeros(n, np.int32)), {1: 2 * x})


PROGRAM = ProgramSpec("double_it", "y = 2x", build, sizes={"default": {"n": 1000}})
'''


def test_user_file(tmp_path, capsys, fake_launch):
    path = tmp_path / "double_it.py"
    path.write_text(USER_PROGRAM)
    assert cli.main(["run", str(path), "--no-check", "--set", "n=300"]) == 0
    assert fake_launch[0][1] == (3,) and np.all(fake_launch[0][3][0] < 10)
    assert capsys.readouterr().out.startswith("== double_it [n=300]")


def test_user_file_without_program_exits_2(tmp_path, capsys):
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    assert cli.main(["run", str(path)]) == 2
    assert "must define PROGRAM" in capsys.readouterr().err


def test_user_file_that_raises_exits_2(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text("import numpy\nundefined_name\n")
    assert cli.main(["run", str(path)]) == 2
    assert "NameError" in capsys.readouterr().err


# ---------------------------------------------------------------- end to end (the real simulator)

def row_of(out: str, source: str) -> str:
    return next(line for line in out.splitlines() if " | " in line and source in line)


def test_run_vector_add_end_to_end(capsys):
    assert cli.main(["run", "vector_add"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== vector_add [n=16384] ==")
    row = row_of(out, "c[i] = a[i] + b[i]")
    assert "4.00" in row.split("|")[0].split()               # coalesced: 4 sectors per request, unflagged
    assert "!" not in out.split("verdict")[0].split("| source")[1].replace("! waste", "")
    assert "verdict: no divergence, bank conflicts" in out


def test_run_bank_conflict_demo_shows_the_conflicts(capsys):
    assert cli.main(["run", "bank_conflict_demo", "--set", "stride=32"]) == 0
    out = capsys.readouterr().out
    row = row_of(out, "acc += sh[")
    # 64 blocks x 8 warps x 4 reads, each 32 wavefronts: 65,536 wavefronts, 31/32 of them conflicts
    cells = row.split("|")[0].split()
    assert cells[cells.index("65,536") + 1] == "63,488!"
    verdict = " ".join(out.split("verdict:")[1].split())
    assert "32-way bank conflict: 31 extra wavefronts per warp access" in verdict


def test_run_with_timing_shows_where_warps_stall_per_line(capsys):
    assert cli.main(["run", "vector_add"]) == 0
    out = capsys.readouterr().out
    assert "stalls (top reason)" in out and "predicted time" in out
    # the store waits for the two loads: its line's top stall reason is the L1TEX scoreboard
    assert row_of(out, "c[i] = a[i] + b[i]").split("|")[0].split()[-1] == "long_scoreboard"


def test_run_bank_conflict_demo_odd_stride_is_conflict_free(capsys):
    assert cli.main(["run", "bank_conflict_demo", "--set", "stride=33"]) == 0
    out = capsys.readouterr().out
    assert "0 bank conflicts" in out and "bank conflict:" not in out


def test_run_transpose_family_end_to_end(capsys):
    assert cli.main(["run", "transpose"]) == 0
    out = capsys.readouterr().out
    table = {row.split()[0]: row.split() for row in out.split("== comparison: transpose on h100 ==")[1].splitlines()[2:]
             if row.strip()}
    assert table["transpose_naive"][6] == "18.00"            # strided store: (4 + 32) / 2 sectors per request
    assert table["transpose_shared"][5] != "0" and table["transpose_padded"][5] == "0"


def test_run_json_end_to_end(capsys):
    assert cli.main(["run", "vector_add", "--json", "--set", "n=1000"]) == 0
    (prog,) = json.loads(capsys.readouterr().out)["programs"]
    assert prog["check"] == "passed" and prog["params"] == {"n": 1000}
    assert prog["metrics"]["launch__grid_size"] == 4


def test_family_plot_writes_the_ladder(capsys, tmp_path):
    assert cli.main(["run", "transpose", "--size", "small", "--plot", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "transpose_ladder.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot: {path}" in out.splitlines()
    assert not list(tmp_path.glob("transpose_*_ladder.png"))       # one ladder for the family, none per member


# ---------------------------------------------------------------------------- gpusim collective

def test_collective_prints_an_nccl_tests_table(capsys):
    assert cli.main(["collective", "all_reduce", "--gpus", "4", "--gpu", "h200", "--sizes", "64K:1M"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[0]) for r in rows] == [65536, 131072, 262144, 524288, 1048576]
    assert all(r[4] == "Ring" and r[5] in ("LL", "LL128", "Simple") for r in rows)


def test_collective_json_has_the_documented_keys(capsys):
    import json
    assert cli.main(["collective", "all_gather", "--gpus", "8", "--sizes", "1048576,1G", "--json"]) == 0
    objs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["bytes"] for o in objs] == [1048576, 1 << 30]
    assert set(objs[0]) >= {"op", "gpus", "bytes", "time_us", "algbw_GBps", "busbw_GBps", "algorithm", "protocol"}
    assert objs[1]["busbw_GBps"] == pytest.approx(objs[1]["algbw_GBps"] * 7 / 8, rel=1e-4)


def test_collective_plots_busbw(tmp_path):
    png = tmp_path / "bw.png"
    assert cli.main(["collective", "broadcast", "--gpus", "2", "--sizes", "1M:4M", "--plot", str(png)]) == 0
    assert png.stat().st_size > 1000


def test_collective_over_several_gpu_counts_is_one_table_and_one_plot(tmp_path, capsys):
    png = tmp_path / "bw.png"
    assert cli.main(["collective", "all_reduce", "--gpus", "2,4,8", "--sizes", "1M,16M", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [(int(r[0]), int(r[1])) for r in rows] == [(2, 1 << 20), (2, 1 << 24), (4, 1 << 20), (4, 1 << 24),
                                                      (8, 1 << 20), (8, 1 << 24)]
    assert out.count("# all_reduce") == 1 and "gpus" in out.split("\n")[1]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_busbw_plot_draws_one_line_per_gpu_count(tmp_path):
    from gpusim.collectives.plot import busbw_plot
    from gpusim.collectives.run import simulate
    from gpusim.specs import resolve
    spec = resolve("h200", [])
    series = {f"{n} GPUs": [simulate("all_reduce", b, spec, n) for b in (1 << 20, 1 << 24)] for n in (2, 4)}
    fig = busbw_plot(series, tmp_path / "bw.png", "all_reduce")
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["2 GPUs", "4 GPUs"]
    assert list(ax.lines[1].get_xdata()) == [1 << 20, 1 << 24]
    assert ax.get_xlabel() and ax.get_ylabel() and (tmp_path / "bw.png").stat().st_size > 1000


def test_collective_bad_inputs_are_clear_errors(capsys):
    assert cli.main(["collective", "all_sum"]) == 4                 # ConfigError
    assert "unknown collective" in capsys.readouterr().err
    assert cli.main(["collective", "all_reduce", "--sizes", "1M:64K"]) == 4
    assert cli.main(["collective", "all_reduce", "--gpus", "1"]) == 2       # a bad command line
    assert cli.main(["collective", "all_reduce", "--gpus", "2,x"]) == 2
    assert cli.main(["collective", "all_reduce", "--set", "system.topology=ring"]) == 4
