"""An unsettled sample is timed again with more waves: in 'auto' mode, where the block rate a
sample extrapolates had not settled (waves in step, or a rate still in its start transient),
the engine times four times the waves on streams the trace source kept for them, so the result
is the larger sample's, and no block executes twice (gpusim/timing/engine.py `run`,
`_settle_order`; sampling/extrapolation.py `unsettled_pct`; functional_streams.py `keep_for`)."""
import numpy as np
import pytest

import gpusim
from gpusim.specs import resolve
from gpusim.sweep.replay import timed_launch
from gpusim.sweep.streams import StreamCache
from gpusim.timing.engine import SETTLE_WAVES_FACTOR, TimingEngine, TimingOptions
from sampling_kernels import skewed

BLOCKS = 6 * 1056                     # six waves of 8 blocks of 256 threads on every H100 SM
HEAVY_FROM = 1056                     # the first wave's blocks idle


def skewed_metrics(mode: str, functional: str = "sampled", **options) -> dict:
    r = gpusim.launch(skewed, BLOCKS, 256, (np.zeros(BLOCKS * 256, np.float32), HEAVY_FROM, 1), gpu="h100",
                      timing=True, timing_options=TimingOptions(mode=mode, functional=functional, **options),
                      outputs=False)
    return r.metrics


def test_an_unsettled_sample_times_four_times_its_waves_and_says_so():
    # the 4-wave sample's waves stay in step after the idle first wave (31% of its time idle)
    m = skewed_metrics("auto")
    assert m["timing__sampling_settled"].startswith("the block rate of 256 timed blocks had not settled")
    assert m["timing__sampling_settled"].endswith("timed 384 instead")   # the SMs' whole share: 6 waves


def test_a_settled_sample_is_the_larger_sample_to_the_last_bit():
    # the streams kept from the first run serve the second as executing them again would
    settled = skewed_metrics("auto")["gpu__time_duration.sum"]
    larger = skewed_metrics("sampled", max_waves=4 * SETTLE_WAVES_FACTOR)["gpu__time_duration.sum"]
    assert settled == larger


def test_a_sampled_run_is_not_settled_behind_the_users_back():
    # mode='sampled' times the sample it was asked for, and says how far to trust it
    m = skewed_metrics("sampled")
    assert m["timing__sampling_settled"] == ""
    assert "kept the sample's slots busy" in m["timing__sampling_note"]


def test_settling_executes_every_block_once_with_exact_outputs():
    out = np.zeros(BLOCKS * 256, np.float32)
    p = gpusim.prepare(skewed, BLOCKS, 256, (out, HEAVY_FROM, 1), gpu="h100")
    e = TimingEngine(p, TimingOptions(mode="auto", functional="full"))
    first = e.blocks_simulated
    m = e.run()
    assert e.blocks_simulated == 384 > first
    assert e.trace.executed == BLOCKS and e.trace.done.all()
    p.finish()                                 # copies the outputs back into `out`
    expect = np.zeros(16, np.float32)          # acc after k * k steps (one fused multiply-add each), by k
    for k in range(16):
        for _ in range(k * k):
            expect[k] = np.float32(np.float64(expect[k]) * np.float64(np.float32(0.999)) + 1.0)
    b = np.arange(BLOCKS)
    want = np.where(b < HEAVY_FROM, np.float32(0), expect[(b * 7919) % 16]).repeat(256)
    assert m["timing__outputs_complete"] is True
    np.testing.assert_array_equal(out, want)


@pytest.mark.slow
def test_a_settled_sample_is_closer_to_full_simulation_than_the_unsettled_one():
    full = skewed_metrics("full")["gpu__time_duration.sum"]
    unsettled = skewed_metrics("sampled")["gpu__time_duration.sum"]
    settled = skewed_metrics("auto")["gpu__time_duration.sum"]
    assert abs(settled / full - 1) <= abs(unsettled / full - 1)


def test_a_sweeps_recorded_and_replayed_points_settle_as_a_launch_does():
    # gpusim.sweep's sources keep the larger sample's streams too (sweep/streams.py), so a sweep's
    # points stay what gpusim.launch gives, bit for bit
    cache = StreamCache(disk=False)
    for sets, how in (([], "recorded"), ([], "replayed"), (["l2.hit_latency_cycles=300"], "replayed")):
        spec = resolve("h100", sets)
        args = (np.zeros(BLOCKS * 256, np.float32), HEAVY_FROM, 1)
        got, run = timed_launch(skewed, BLOCKS, 256, args, spec, cache=cache)
        want = gpusim.launch(skewed, BLOCKS, 256, (np.zeros(BLOCKS * 256, np.float32), HEAVY_FROM, 1), gpu=spec,
                             timing=True).metrics
        assert run == how
        assert got.metrics["gpu__time_duration.sum"] == want["gpu__time_duration.sum"]
        assert got.metrics["timing__sampling_settled"] == want["timing__sampling_settled"]
    assert want["timing__sampling_settled"] == ""          # 300-cycle L2 hits: the 4-wave rate had settled


def test_a_settled_samples_second_run_shows_as_timing_again():
    seen = []
    gpusim.launch(skewed, BLOCKS, 256, (np.zeros(BLOCKS * 256, np.float32), HEAVY_FROM, 1), gpu="h100", timing=True,
                  timing_options=TimingOptions(mode="auto", functional="sampled"), outputs=False,
                  progress=lambda p: seen.append((p.phase, p.blocks_total)))
    timing = [s for s in seen if s[0].startswith("timing")]
    assert timing[0] == ("timing", 256) and timing[-1] == ("timing again", 384)
