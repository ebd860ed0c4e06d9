"""The numbers the README quotes are the ones the code gives today: the Teaching section's
predicted times of each family at its default size (h100), and the `--html --plot`
overhead the committed benchmark measured (benchmarks/results/report_overhead.json)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gpusim
import programs
from gpusim.cli.program_args import FAMILY_ORDER

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def predicted_us(name: str) -> float:
    c = programs.get(name).case("default")
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True, shared_bytes=c.shared_bytes)
    return r.metrics["gpu__time_duration.sum"] / 1000.0


@pytest.mark.slow
@pytest.mark.parametrize("family,sep,digits", [("transpose", " > ", 2), ("reduce", " > ", 2), ("histogram", " vs ", 1)])
def test_teaching_section_quotes_todays_predicted_times(family, sep, digits):
    quoted = sep.join(f"{predicted_us(n):.{digits}f}" for n in FAMILY_ORDER[family])
    assert f"({quoted} µs" in README, f"README should quote {family} as ({quoted} µs ...)"


def test_overhead_of_html_and_plot_is_the_benchmarks():
    doc = json.loads((REPO / "benchmarks" / "results" / "report_overhead.json").read_text())
    m = re.search(r"takes ([\d.]+) s and ([\d.]+) s with both \(\+(\d+)%", README)
    assert m, "README should quote the plain and --html --plot times and the overhead"
    assert float(m.group(1)) == round(doc["plain_median_s"], 2)
    assert float(m.group(2)) == round(doc["html_plot_median_s"], 2)
    assert int(m.group(3)) == round(doc["overhead_pct"])
