"""Hypothetical GPUs from `--set key=value` and TOML files, one property per test."""
from __future__ import annotations

import copy

import pytest

from gpusim.errors import ConfigError
from gpusim.specs import overrides, presets
from gpusim.specs.overrides import apply, load_toml, resolve

H100 = presets.H100


# ----------------------------------------------------------------------------------- keys and aliases

def test_set_sm_count_64_gives_64_sms():
    assert resolve("h100-datasheet", ["sm.count=64"]).sm_count == 64


def test_sm_count_field_name_works_as_well_as_the_alias():
    assert apply(H100, {"sm_count": 64}).sm_count == 64


def test_hbm_bandwidth_8000_names_the_result_after_the_change():
    spec = resolve("h100-datasheet", ["hbm.bandwidth_GBps=8000"])
    assert (spec.hbm.bandwidth_GBps, spec.name) == (8000.0, "h100-datasheet+hbm.bandwidth_GBps=8000")


def test_source_records_the_base_and_the_overrides():
    src = resolve("h100-datasheet", ["hbm.bandwidth_GBps=8000"]).source
    assert "preset h100" in src and "hbm.bandwidth_GBps=8000" in src


def test_fp64_issue_interval_1_through_a_nested_key():
    assert resolve("h100-datasheet", ["sm.pipes.fp64.issue_interval_cycles=1"]).sm.pipes.fp64.issue_interval_cycles == 1.0


def test_sub_partitions_2():
    assert resolve("a100", ["sm.sub_partitions=2"]).sm.sub_partitions == 2


def test_clock_1500_mhz_halves_nothing_else():
    spec = resolve("h100-datasheet", ["clocks.sm_clock_mhz=1500"])
    assert (spec.clocks.sm_clock_mhz, spec.hbm.bandwidth_GBps) == (1500.0, 3352.0)


def test_l2_64_mib_on_h100_is_accepted():
    assert resolve("h100-datasheet", ["l2.size_bytes=67108864"]).l2.size_bytes == 64 * 1024 * 1024


@pytest.mark.parametrize("text, nbytes", [("64KiB", 65536), ("50MB", 52428800), ("1.5MiB", 1572864),
                                          ("2GiB", 2 << 30), ("0x10000", 65536), ("65_536", 65536)])
def test_size_suffixes_for_bytes_fields(text, nbytes):
    assert overrides.parse_value("sm.shared_memory_per_sm_bytes", text) == nbytes


def test_boolean_field_parses_true():
    assert resolve("h100-datasheet", ["l1.write_allocate=true"]).l1.write_allocate is True


def test_string_field_takes_the_text():
    assert resolve("h100-datasheet", ["sm.warp_scheduler=lrr"]).sm.warp_scheduler == "lrr"


def test_tuple_field_takes_comma_separated_values():
    assert resolve("h100-datasheet", ["limits.max_block_dims=512,512,32"]).limits.max_block_dims == (512, 512, 32)


def test_name_override_names_the_spec():
    assert apply(H100, {"name": "h100-lite", "sm.count": 66}).name == "h100-lite"


def test_no_overrides_return_the_spec_itself():
    assert resolve("h100-datasheet", []) is H100


def test_last_of_a_repeated_key_wins():
    assert resolve("h100-datasheet", ["sm.count=64", "sm.count=100"]).sm_count == 100


# ----------------------------------------------------------------------------------- errors a user can act on

def test_unknown_key_suggests_the_close_one():
    with pytest.raises(ConfigError, match=r"unknown GPU spec key 'sm.sub_partiton'.*did you mean sm.sub_partitions"):
        resolve("h100-datasheet", ["sm.sub_partiton=2"])


def test_bare_field_name_suggests_the_dotted_key():
    with pytest.raises(ConfigError, match="did you mean l2.size_bytes"):
        resolve("h100-datasheet", ["size_bytes=1"])


def test_l2_size_0_is_rejected_naming_key_value_and_rule():
    with pytest.raises(ConfigError, match=r"l2.size_bytes=0: L2Spec.size_bytes must be a positive number, got 0"):
        resolve("h100-datasheet", ["l2.size_bytes=0"])


def test_l2_line_100_is_rejected_as_not_a_power_of_two():
    with pytest.raises(ConfigError, match=r"l2.line_bytes=100: .*must be a power of two, got 100"):
        resolve("h100-datasheet", ["l2.line_bytes=100"])


def test_negative_sm_count_is_rejected():
    with pytest.raises(ConfigError, match=r"sm_count=-4: GPUSpec.sm_count must be a positive integer"):
        resolve("h100-datasheet", ["sm.count=-4"])


def test_l2_size_that_is_not_whole_sets_names_the_nearest_valid_sizes():
    with pytest.raises(ConfigError, match=r"whole number of sets .* nearest: 65536 or 67584"):
        resolve("h100-datasheet", ["l2.size_bytes=66000"])


def test_fractional_sm_count_is_rejected():
    with pytest.raises(ConfigError, match=r"sm_count=2.5: expected an integer"):
        resolve("h100-datasheet", ["sm.count=2.5"])


def test_infinite_bandwidth_is_rejected():
    with pytest.raises(ConfigError, match="expected a finite number"):
        resolve("h100-datasheet", ["hbm.bandwidth_GBps=inf"])


def test_a_group_key_lists_its_fields():
    with pytest.raises(ConfigError, match=r"group of settings.*sm.pipes.fp64.issue_interval_cycles"):
        resolve("h100-datasheet", ["sm.pipes.fp64=1"])


def test_sector_larger_than_line_is_rejected():
    with pytest.raises(ConfigError, match=r"l2.sector_bytes=256: L2Spec.sector_bytes cannot exceed line_bytes"):
        resolve("h100-datasheet", ["l2.sector_bytes=256"])


def test_settings_valid_only_together_are_accepted():
    spec = resolve("h100-datasheet", ["sm.shared_memory_per_sm_bytes=300KiB", "sm.l1_shared_total_bytes=320KiB"])
    assert spec.sm.shared_memory_per_sm_bytes == 300 * 1024


def test_set_without_equals_sign_is_rejected():
    with pytest.raises(ConfigError, match="--set expects KEY=VALUE"):
        resolve("h100-datasheet", ["sm.count"])


def test_source_cannot_be_set():
    with pytest.raises(ConfigError, match="'source' cannot be set"):
        resolve("h100-datasheet", ["source=mine"])


# ----------------------------------------------------------------------------------- presets stay as they are

def test_presets_are_not_modified_by_apply():
    before = copy.deepcopy(presets.PRESETS)
    apply(H100, {"sm.count": 64, "l2.size_bytes": "64MiB", "sm.pipes.fp64.issue_interval_cycles": 1})
    assert presets.PRESETS == before and presets.get("h100").sm_count == 132


# ----------------------------------------------------------------------------------- TOML files

def test_toml_with_base_h100_and_hbm_8000_loads(tmp_path):
    f = tmp_path / "fast.toml"
    f.write_text('base = "h100"\n\n[hbm]\nbandwidth_GBps = 8000\n')
    spec = load_toml(f)
    assert (spec.hbm.bandwidth_GBps, spec.name, spec.sm_count) == (8000.0, "h100+hbm.bandwidth_GBps=8000", 132)


def test_toml_name_and_nested_table(tmp_path):
    f = tmp_path / "dp.toml"
    f.write_text('base = "a100"\nname = "a100-fastdp"\nsm_count = 64\n\n'
                 '[sm.pipes.fp64]\nissue_interval_cycles = 1\n\n[l2]\nsize_bytes = "80MiB"\n')
    spec = load_toml(f)
    assert (spec.name, spec.sm_count, spec.sm.pipes.fp64.issue_interval_cycles, spec.l2.size_bytes) == \
           ("a100-fastdp", 64, 1.0, 80 * 1024 * 1024)


def test_toml_source_names_the_file(tmp_path):
    f = tmp_path / "fast.toml"
    f.write_text('base = "h100"\n[hbm]\nbandwidth_GBps = 8000\n')
    assert str(f) in load_toml(f).source


def test_toml_without_base_is_rejected(tmp_path):
    f = tmp_path / "nobase.toml"
    f.write_text("[hbm]\nbandwidth_GBps = 8000\n")
    with pytest.raises(ConfigError, match=r'needs a base, e.g. base = "h100"'):
        load_toml(f)


def test_toml_unknown_key_names_the_file_and_the_close_key(tmp_path):
    f = tmp_path / "typo.toml"
    f.write_text('base = "h100"\n[hbm]\nbandwith_GBps = 8000\n')
    with pytest.raises(ConfigError, match=r"typo.toml: unknown GPU spec key 'hbm.bandwith_GBps'.*hbm.bandwidth_GBps"):
        load_toml(f)


def test_toml_bad_value_names_the_file_key_and_value(tmp_path):
    f = tmp_path / "zero.toml"
    f.write_text('base = "v100"\n[l2]\nsize_bytes = 0\n')
    with pytest.raises(ConfigError, match=r"zero.toml: bad value for l2.size_bytes=0"):
        load_toml(f)


def test_toml_that_does_not_parse_is_reported(tmp_path):
    f = tmp_path / "broken.toml"
    f.write_text('base = "h100\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_toml(f)


def test_missing_toml_file_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        resolve(str(tmp_path / "nope.toml"))


def test_toml_base_can_be_another_toml_file(tmp_path):
    (tmp_path / "a.toml").write_text('base = "h100"\nname = "wide"\nsm_count = 200\n')
    (tmp_path / "b.toml").write_text('base = "a.toml"\n[hbm]\nbandwidth_GBps = 9000\n')
    spec = load_toml(tmp_path / "b.toml")
    assert (spec.sm_count, spec.hbm.bandwidth_GBps, spec.name) == (200, 9000.0, "wide+hbm.bandwidth_GBps=9000")


def test_resolve_takes_a_toml_path_and_sets(tmp_path):
    f = tmp_path / "fast.toml"
    f.write_text('base = "h200"\n[hbm]\nbandwidth_GBps = 8000\n')
    spec = resolve(str(f), ["sm.count=100"])
    assert (spec.hbm.bandwidth_GBps, spec.sm_count) == (8000.0, 100)


def test_resolve_takes_a_spec():
    assert resolve(H100, ["sm.count=10"]).sm_count == 10
