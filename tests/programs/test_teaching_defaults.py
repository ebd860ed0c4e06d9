"""At each teaching family's default size the lesson shows in the predicted time (default preset):
the ordering a textbook states, one family per test. The committed measurements agree where they
exist (transpose, reduction and histogram defaults, `data/measurements/h100.json`)."""
import json

import pytest

import gpusim
import programs
from gpusim.cli.program_args import FAMILY_ORDER
from validate.datadir import DATA_DIR


def predicted_us(name: str) -> float:
    c = programs.get(name).case("default")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True, shared_bytes=c.shared_bytes)
    return r.metrics["gpu__time_duration.sum"] / 1000.0


def ladder(family: str) -> dict[str, float]:
    return {name: predicted_us(name) for name in FAMILY_ORDER[family]}


def assert_strictly_faster_down_the_ladder(times: dict[str, float], margin: float = 1.05):
    names = list(times)
    for slow, fast in zip(names, names[1:]):
        assert times[slow] >= margin * times[fast], times


def test_transpose_naive_slower_than_shared_slower_than_padded():
    assert_strictly_faster_down_the_ladder(ladder("transpose"))


def test_reduction_ladder_in_harris_order():
    assert_strictly_faster_down_the_ladder(ladder("reduce"))


def test_histogram_global_atomics_slower_than_shared_privatisation():
    assert_strictly_faster_down_the_ladder(ladder("histogram"), margin=1.25)


def test_matmul_naive_slower_than_tiled():
    assert_strictly_faster_down_the_ladder(ladder("matmul"), margin=1.5)


@pytest.mark.parametrize("family", ["transpose", "reduce", "histogram"])
def test_measured_defaults_show_the_same_order(family):
    data = json.loads((DATA_DIR / "h100.json").read_text())
    measured = {k["name"]: k["metrics"]["gpu__time_duration.sum"] for k in data["kernels"]}
    t = [measured[f"{n}/default"] for n in FAMILY_ORDER[family]]
    assert t == sorted(t, reverse=True), t
