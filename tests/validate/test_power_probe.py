"""validate.tensor_set.power_probe's summary of nvidia-smi samples (the GPU side is not run here)."""
from validate.tensor_set.power_probe import summarise

FIELD = "clocks_event_reasons.active"


def test_a_power_capped_sample_is_counted_under_its_reason_and_the_clock_is_the_median():
    samples = [{"clocks.sm": "1522", "power.draw": "690.5", FIELD: "0x0000000000000004"},
               {"clocks.sm": "1540", "power.draw": "699.0", FIELD: "0x0000000000000004"},
               {"clocks.sm": "1980", "power.draw": "300.0", FIELD: "0x0000000000000000"}]
    s = summarise(samples, FIELD)
    assert (s["clocks.sm_median"], s["power.draw_max"], s["reasons_samples"]) == (1540.0, 699.0, {"sw_power_cap": 2})
