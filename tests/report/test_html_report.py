"""`gpusim run --html` / `--plot`: the page is self-contained and renders in a real
headless Chromium (Debian's `chromium`) with no console output, showing the source
lines, the figures and working per-line map toggles.

The browser test is skipped only when no chromium binary is found *and*
GPUSIM_REQUIRE_BROWSER is unset; CI (.ci/run) sets it, so a missing browser fails there.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from gpusim import cli

PROGRAM = "bank_conflict_demo"          # default size: lines 37-48, a 32-way conflicted shared read on line 47
SOURCE_LINES = 12                       # @cuda.jit (37) .. the last line of the kernel (48)
FIGURES = 7                             # bank, coalescing, divergence, memory chart, roofline, occupancy, warp timeline
MAP_LINES = (43, 47, 48)                # lines with a shared or global access: one toggle each


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("html")
    assert cli.main(["run", PROGRAM, "--html", str(d / "r.html"), "--plot", str(d / "plots")]) == 0
    return d


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_plot_writes_one_png_per_figure_kind(page):
    pngs = sorted(p.name for p in (page / "plots").iterdir())
    assert len(pngs) == FIGURES and all(p.startswith(PROGRAM + "_") for p in pngs)
    assert all((page / "plots" / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_page_is_self_contained(page):
    html = (page / "r.html").read_text()
    assert not re.search(r'(?:src|href)\s*=\s*"(?!data:|#)', html)          # images are data: URIs, links anchors
    assert "<link" not in html and "@import" not in html
    assert html.count('class="map-toggle"') == len(MAP_LINES)


def test_page_renders_in_headless_chromium_without_console_errors(page, tmp_path):
    exe = chromium()
    if exe is None:
        if os.environ.get("GPUSIM_REQUIRE_BROWSER"):
            pytest.fail("GPUSIM_REQUIRE_BROWSER is set but no chromium binary is on PATH (apt-get install chromium)")
        pytest.skip("chromium not installed (Debian: apt-get install chromium)")
    out = subprocess.run([exe, "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                          "--virtual-time-budget=5000", "--dump-dom", (page / "r.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    console = [ln for ln in out.stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]
    assert console == [], "\n".join(console)
    body = re.search(r"<body([^>]*)>", out.stdout)
    assert body, out.stdout[:500]
    data = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    assert data.get("ready") == "1"
    assert int(data["lines"]) == SOURCE_LINES
    assert int(data["figures"]) == FIGURES and int(data["images-decoded"]) == FIGURES
    assert int(data["toggles"]) == len(MAP_LINES) and int(data["maps"]) >= len(MAP_LINES)
    assert data["toggle-works"] == "1"                   # the script opened and closed a line's map
    assert int(data["sass-rows"]) > 20 and int(data["sass-marked"]) >= 1      # clicking a line marks its SASS
    rows = re.findall(r'<tr class="src" data-line="(\d+)"', out.stdout)
    assert [int(r) for r in rows] == list(range(37, 37 + SOURCE_LINES))
    assert "acc += sh[(tid * stride + r)" in out.stdout


def test_line_map_selector_switches_executions_in_chromium(tmp_path):
    exe = chromium()
    if exe is None:
        if os.environ.get("GPUSIM_REQUIRE_BROWSER"):
            pytest.fail("GPUSIM_REQUIRE_BROWSER is set but no chromium binary is on PATH (apt-get install chromium)")
        pytest.skip("chromium not installed (Debian: apt-get install chromium)")
    html = tmp_path / "r.html"
    assert cli.main(["run", "reduce_interleaved_strided", "--functional", "--html", str(html)]) == 0
    text = html.read_text()
    assert text.count('class="map-pick"') >= 1 and "8 wavefronts" in text and "2 wavefronts" in text
    out = subprocess.run([exe, "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
                          html.as_uri()], capture_output=True, text=True, timeout=120)
    data = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', re.search(r"<body([^>]*)>", out.stdout).group(1)))
    assert data.get("selector-works") == "1" and int(data["map-options"]) > int(data["maps"])


def test_source_and_sass_side_by_side_show_the_predicated_branch(tmp_path):
    html = tmp_path / "d.html"
    assert cli.main(["run", "divergence_demo", "--functional", "--html", str(html)]) == 0
    text = html.read_text()
    assert 'class="sass-view"' in text and 'class="pane-sass"' in text
    pred_off = re.findall(r'<tr data-line="(\d+)" class="pred-off">.*?</tr>', text)
    rows = re.findall(r'<tr data-line="(3[13])" class="pred-off"><td>\d+</td><td>\w+</td><td class="code">\[B[-\d]{6}:R[-\d]:W[-\d]:[Y-]:S\d\d\]</td>'
                      r'<td class="code">(@!?P0 [^<]+)'
                      r'</td><td>512</td><td>100%</td><td>50%</td></tr>', text)
    assert len(rows) >= 8 and {r[0] for r in rows} == {"31", "33"}        # both sides: 100% active, 50% on
    assert len(pred_off) >= len(rows)
