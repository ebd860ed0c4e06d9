"""`gpusim sweep`: the table it writes, the values a range gives, and errors before any work."""
import pandas as pd
import pytest

from gpusim.cli import main
from gpusim.errors import ConfigError
from gpusim.sweep import configs, load_sweep_toml, parse_vary


def test_range_gives_n_evenly_spaced_values():
    assert parse_vary("hbm.bandwidth_GBps=2000:8000:4") == ("hbm.bandwidth_GBps", [2000.0, 4000.0, 6000.0, 8000.0])
    assert parse_vary("sm.count=66,132") == ("sm_count", [66, 132])
    assert parse_vary("shared.banks=16:64:x2") == ("sm.shared_banks", [16, 32, 64])


def test_grid_is_the_cartesian_product_first_field_slowest():
    cs = configs("h100", {"sm_count": [66, 132], "sm.shared_banks": [16, 32, 64]})
    assert [c.spec.sm_count for c in cs] == [66, 66, 66, 132, 132, 132]
    assert [c.spec.sm.shared_banks for c in cs] == [16, 32, 64] * 2


def test_out_of_range_value_is_an_error_naming_the_point():
    with pytest.raises(ConfigError, match="sm.shared_banks"):
        configs("h100", {"sm.shared_banks": [32, 48]})         # not a power of two


def test_sweep_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('gpu = "h100"\nprograms = ["vector_add"]\nsizes = [{n = 4096}]\n'
                 '[vary]\n"hbm.bandwidth_GBps" = "1000:3000:3"\n[set]\n"l2.hit_latency_cycles" = 300\n')
    kw = load_sweep_toml(f)
    assert kw["programs"] == ["vector_add"] and kw["sizes"] == [{"n": 4096}]
    assert [c.spec.hbm.bandwidth_GBps for c in configs(kw["gpu"], kw["vary"], kw["sets"])] == [1000, 2000, 3000]


def test_cli_writes_one_row_per_point_with_every_spec_field(tmp_path, capsys):
    out = tmp_path / "s.csv"
    rc = main(["sweep", "vector_add", "--size", "n=4096", "--vary", "sm.count=8,132",
               "--vary", "hbm.bandwidth_GBps=1000,4000", "--workers", "1", "--out", str(out), "--no-progress"])
    assert rc == 0
    df = pd.read_csv(out)
    assert len(df) == 4 and df["sm_count"].tolist() == [8, 8, 132, 132]
    assert df["spec.sm_count"].tolist() == [8, 8, 132, 132] and "spec.hbm.latency_ns" in df.columns
    assert df["gpu__time_duration.sum"].gt(0).all() and df["outputs_match_reference"].all()
    assert "time (us)" in capsys.readouterr().out


def test_cli_refuses_unknown_field_and_parquet_before_work(tmp_path, capsys):
    from gpusim.errors import exit_code
    bad_spec = exit_code(ConfigError("x"))                     # the exit status of a spec error
    assert main(["sweep", "vector_add", "--vary", "hbm.bandwith=1,2"]) == bad_spec
    assert "did you mean" in capsys.readouterr().err
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert main(["sweep", "vector_add", "--out", str(tmp_path / "x.parquet")]) == bad_spec
        assert "pyarrow" in capsys.readouterr().err
    assert main(["sweep", "vector_add", "--out", str(tmp_path / "x.xlsx")]) == bad_spec


@pytest.mark.parametrize("kw, message", [
    ({"workers": 0}, "workers must be a positive number of processes, got 0"),
    ({"workers": -1}, "workers must be a positive number of processes, got -1"),
    ({"sizes": [5]}, "a size is a size name or a table of parameters, got 5"),
    ({"sizes": []}, "no sizes given"),
    ({"seed": -1}, "seed must be a whole number >= 0, got -1"),
    ({"sizes": [{"n": 1.5}]}, "vector_add: parameter n takes int values"),
    ({"vary": {"hbm.bandwidth_GBps": "1:2:1000001"}}, "gives 1,000,001 values: a sweep holds at most 1,000,000"),
    ({"vary": {"hbm.bandwidth_GBps": "1:2:20000"}}, "this sweep has 20,000 points"),
])
def test_python_api_refuses_bad_arguments_before_any_work(kw, message):
    import gpusim
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        gpusim.sweep("vector_add", **kw)


def test_output_and_worker_errors_have_their_own_documented_exit_statuses():
    from gpusim.cli.exits import EXIT_CODES
    from gpusim.errors import GpusimError, OutputError, WorkerLost
    codes = {c for c, _ in EXIT_CODES}
    assert OutputError.exit_code == 11 and WorkerLost.exit_code == 12
    assert {11, 12, 130, 143} <= codes and issubclass(OutputError, GpusimError)
