"""`validate compare --clock`: the SM clock a kernel record is predicted at (validate/compare.py)."""
from validate.predict import observed_clock_mhz

UNLOCKED = {"provenance": {"sm_clock_policy": "--clock-control none: clocks as found, not locked",
                           "sm_clock_mhz_observed": 1816.6}}
RECORD = {"metrics": {"sm__cycles_elapsed.max": 58104.0, "gpu__time_duration.sum": 33760.0}}


def test_kernel_clock_is_the_records_cycles_over_its_duration():
    assert abs(observed_clock_mhz(RECORD, UNLOCKED, "kernel") - 58104.0 / 33760.0 * 1e3) < 1e-9


def test_file_clock_is_the_measurements_median_and_preset_keeps_the_presets():
    assert observed_clock_mhz(RECORD, UNLOCKED, "file") == 1816.6
    assert observed_clock_mhz(RECORD, UNLOCKED, "preset") is None


def test_locked_clocks_keep_the_presets_clock():
    locked = {"provenance": {"sm_clock_policy": "--clock-control base: locked to base"}}
    assert observed_clock_mhz(RECORD, locked, "kernel") is None
