"""GPU spec values out of range, unknown fields and broken files: a ConfigError naming the
field, the value and the valid range, before any work starts."""
import dataclasses
import time

import numpy as np
import pytest

import gpusim
from gpusim.errors import ConfigError
from gpusim.specs import presets
from gpusim.specs.overrides import load_toml, resolve

from bad_inputs import one_line


@pytest.mark.parametrize("setting, named", [
    ("sm.count=1e6", "sm_count=1e6: GPUSpec.sm_count = 1000000 is outside its valid range 1..1024"),
    ("sm.count=1e30", "is outside its valid range 1..1024"),
    ("sm.count=-4", "GPUSpec.sm_count must be a positive integer, got -4 (valid range 1..1024)"),
    ("sm.count=2.5", "sm_count=2.5: expected an integer (valid range 1..1024)"),
    ("hbm.bandwidth_GBps=nan", "hbm.bandwidth_GBps=nan: expected a finite number (valid range 0.001..1e+06)"),
    ("l2.slices=100000", "l2.slices=100000"),
    ("sm.shared_banks=4096", "SMSpec.shared_banks = 4096 is outside its valid range 1..1024"),
    ("clocks.sm_clock_mhz=1e9", "ClockSpec.sm_clock_mhz = 1000000000.0 is outside its valid range 50..10000"),
])
def test_absurd_value_is_refused_naming_field_value_and_range(setting, named):
    with pytest.raises(ConfigError) as e:
        resolve("h100", [setting])
    assert named in str(e.value)


def test_unknown_field_suggests_the_close_one():
    with pytest.raises(ConfigError, match=r"unknown GPU spec key 'hbm.bandwith_GBps'.*did you mean hbm.bandwidth_GBps"):
        resolve("h100", ["hbm.bandwith_GBps=8000"])


def test_non_integer_through_dataclasses_replace_is_refused():
    with pytest.raises(ConfigError, match=r"SMSpec.sub_partitions must be an integer"):
        dataclasses.replace(presets.H100.sm, sub_partitions=2.0)


def test_run_with_a_million_sms_fails_before_any_work(run_cli):
    t = time.monotonic()
    code, _, err = run_cli("run", "vector_add", "--set", "sm.count=1e6")
    assert code == 4 and time.monotonic() - t < 2.0
    assert "sm_count=1e6" in one_line(err) and "1..1024" in err


def test_functional_run_with_1e30_sms_is_one_line_not_an_overflow(run_cli):
    code, _, err = run_cli("run", "vector_add", "--functional", "--set", "sm.count=1e30")
    assert code == 4 and "OverflowError" not in err and "1..1024" in one_line(err)


def test_sm_count_as_presets_show_prints_it_sets_the_spec(run_cli):
    code, out, _ = run_cli("run", "vector_add", "--functional", "--no-check", "--set", "sm_count=64")
    assert code == 0 and "gpu h100+sm_count=64" in out


def test_misspelt_sm_count_is_not_taken_as_a_program_parameter(run_cli):
    code, _, err = run_cli("run", "vector_add", "--set", "sm_cout=64")
    assert code == 2 and "no parameter 'sm_cout'" in one_line(err) and "did you mean sm_count" in err


def test_presets_show_lists_unit_and_valid_range(run_cli):
    code, out, _ = run_cli("presets", "--show", "h100")
    assert code == 0
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("clocks.sm_clock_mhz"))
    assert "MHz" in row and "[50..10000 MHz]" in row


def test_broken_toml_names_the_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('base = "h100"\n[hbm\nbandwidth_GBps = 1\n')
    with pytest.raises(ConfigError, match=r"bad.toml: not valid TOML"):
        load_toml(p)


def test_toml_without_base_says_what_is_missing(tmp_path):
    p = tmp_path / "nobase.toml"
    p.write_text("sm_count = 64\n")
    with pytest.raises(ConfigError, match=r"nobase.toml: needs a base"):
        load_toml(p)


def test_toml_value_out_of_range_names_file_and_field(tmp_path):
    p = tmp_path / "huge.toml"
    p.write_text('base = "h100"\n[l1]\nhit_latency_cycles = 1000000\n')
    with pytest.raises(ConfigError, match=r"huge.toml: .*l1.hit_latency_cycles.*valid range 1..10000"):
        load_toml(p)


def test_missing_toml_file(run_cli, tmp_path):
    code, _, err = run_cli("run", "vector_add", "--gpu", str(tmp_path / "nope.toml"))
    assert code == 4 and "not found" in one_line(err)


def test_gpu_that_is_not_a_name():
    with pytest.raises(ConfigError, match=r"unknown GPU preset 5; known presets: a100"):
        gpusim.launch(lambda a: None, 1, 32, (np.zeros(1),), gpu=5)


def test_toml_with_an_unknown_field_suggests_the_close_one(tmp_path):
    p = tmp_path / "typo.toml"
    p.write_text('base = "h100"\n[sm]\nsub_partiton = 2\n')
    with pytest.raises(ConfigError, match=r"typo.toml: unknown GPU spec key 'sm.sub_partiton'.*did you mean sm.sub_partitions"):
        load_toml(p)


def test_toml_with_text_for_a_number(tmp_path):
    p = tmp_path / "text.toml"
    p.write_text('base = "h100"\nsm_count = "many"\n')
    with pytest.raises(ConfigError, match=r"text.toml: bad value for sm_count=many: expected an integer"):
        load_toml(p)
