"""The source view, verdict and comparison table of a hand-built Result (conftest.py:
64 warps; line 9 runs at 50% SIMT efficiency, lines 11-12 are 32-way bank
conflicted, line 13 moves 32 sectors per request)."""
from __future__ import annotations

import re

from gpusim.report import line_issues, render_comparison, render_source_view, want_color

WARPS = 64                     # warps in the conftest Result (2 blocks x 1024 threads)


def rows_by_line(text: str) -> dict[int, str]:
    """Table rows of the view, keyed by source line number."""
    out = {}
    for row in text.splitlines():
        m = re.match(r"\s*(\d+)\s.*\|", row)
        if m:
            out[int(m.group(1))] = row
    return out


def cells(row: str) -> list[str]:
    return row.split("|")[0].split()


def test_every_line_of_the_function_is_shown_including_lines_without_instructions(demo_result):
    rows = rows_by_line(render_source_view(demo_result))
    assert sorted(rows) == list(range(4, 14))         # @cuda.jit .. last line, comment line 10 included
    assert rows[4].endswith("| @cuda.jit")
    assert cells(rows[10]) == ["10"]                  # no instructions: blank columns
    assert cells(rows[7]) == ["7"]


def test_columns_line_up(demo_result):
    text = render_source_view(demo_result)
    table = [r for r in text.splitlines() if " | " in r]
    assert len(table) == 11                            # header + lines 4..13
    assert len({r.index(" | ") for r in table}) == 1
    # the warp-instruction column is right-aligned: its last digit is at the same column in every row
    header = table[0]
    end = header.index("warp inst") + len("warp inst")
    for r in table[1:]:
        if len(cells(r)) > 1:
            assert r[end - 1].isdigit() and r[end] in " *", r


def test_warp_instructions_and_efficiency_per_line(demo_result):
    rows = rows_by_line(render_source_view(demo_result))
    assert cells(rows[6])[:3] == ["6", f"{3 * WARPS}*", "100.0"]   # hot: 192 of 640 = 30%
    assert cells(rows[8])[:3] == ["8", "64", "100.0"]


def test_fifty_percent_efficiency_is_flagged(demo_result):
    rows = rows_by_line(render_source_view(demo_result))
    assert "50.0!" in cells(rows[9])
    assert "100.0!" not in rows[8]


def test_divergent_line_appears_in_verdict(result_factory):
    lines = {5: {"inst": WARPS, "thread_inst": 32 * WARPS},
             9: {"inst": 4 * WARPS, "thread_inst": 16 * 4 * WARPS}}
    text = render_source_view(result_factory(lines=lines))
    verdict = text.split("verdict:")[1]
    assert "line 9: SIMT efficiency 50%" in verdict
    assert "different branches" in verdict
    assert "16.0 of 32" in verdict


def test_31_conflicts_per_access_gets_the_bank_conflict_verdict(demo_result):
    text = render_source_view(demo_result, width=200)
    verdict = " ".join(text.split("verdict:")[1].split())
    assert "line 11: 32-way bank conflict: 31 extra wavefronts per warp access" in verdict
    assert "[32][33]" in verdict
    rows = rows_by_line(text)
    assert cells(rows[12])[-2:] == [f"{32 * WARPS:,}", f"{31 * WARPS:,}!"]   # wavefronts, conflicts flagged


def test_uncoalesced_line_gets_sectors_verdict(demo_result):
    text = render_source_view(demo_result, width=300)
    assert "32.00!" in rows_by_line(text)[13]
    assert "4.00!" not in text
    assert "line 13: 32 sectors per request (global store) where 4 would do: uncoalesced global access" in text


def test_verdict_lists_three_worst_lines_worst_first(demo_result):
    issues = line_issues(demo_result)
    assert [i.line for i in issues] == [11, 12, 13, 9]         # 1984, 1984, 1792 extra, then 32 idle slots
    verdict = render_source_view(demo_result, width=1000).split("verdict:")[1]
    assert [int(n) for n in re.findall(r"^  line (\d+):", verdict, re.M)] == [11, 12, 13]
    # a repeated kind does not repeat the advice
    assert ("line 12: 32-way bank conflict: 31 extra wavefronts per warp access (1,984 in all); "
            "same cause and fix as line 11.") in " ".join(verdict.split())


def test_eight_byte_accesses_at_eight_sectors_are_not_flagged(result_factory):
    r = result_factory(lines={5: {"inst": WARPS, "thread_inst": 32 * WARPS,
                                  "global_ld_requests": WARPS, "global_ld_sectors": 8 * WARPS}})
    r.infos[0].access_bytes = 8
    text = render_source_view(r)
    assert "8.00 " in rows_by_line(text)[5] and "8.00!" not in text
    assert "verdict: no divergence, bank conflicts" in text


def test_header_totals_and_no_time_without_timing_model(demo_result):
    text = render_source_view(demo_result, case_name="demo [n=2048]")
    head = text.split("\n\n")[0]
    assert head.startswith("== demo [n=2048] ==")
    assert "grid (2, 1, 1) x block (1024, 1, 1)" in head
    assert "warp instructions 640" in head and "thread instructions 19,456" in head
    assert f"{31 * WARPS * 2:,} bank conflicts" in head
    assert "time" not in text.lower()


def test_header_shows_predicted_time_and_stalls_when_present(result_factory):
    extra = {"gpu__time_duration.sum": 12_345.0, "sm__cycles_elapsed.max": 21_000,
             "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio": 3.0,
             "smsp__average_warp_latency_issue_stalled_barrier.ratio": 1.0}
    head = render_source_view(result_factory(metrics_extra=extra)).split("\n\n")[0]
    assert "predicted time 12.35 us (21,000 cycles)" in head
    assert "top stalls: long_scoreboard 75%, barrier 25%" in head


def test_width_truncates_source_only(demo_result):
    text = render_source_view(demo_result, width=80)
    table = [r for r in text.splitlines() if " | " in r]
    assert max(len(r) for r in table) <= 80
    assert any(r.endswith("...") for r in table)


def test_plain_text_unless_color_requested(demo_result):
    assert "\x1b[" not in render_source_view(demo_result)
    colored = render_source_view(demo_result, color=True)
    assert "\x1b[31m" in colored
    plain = [r for r in render_source_view(demo_result).splitlines() if " | " in r]
    painted = [re.sub(r"\x1b\[\d+m", "", r) for r in colored.splitlines() if " | " in r]
    assert plain == painted                           # color changes no column


class FakeTTY:
    def isatty(self):
        return True


def test_want_color_respects_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert want_color(FakeTTY())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not want_color(FakeTTY())
    monkeypatch.delenv("NO_COLOR")
    assert not want_color(object())                   # not a terminal


def test_comparison_table(result_factory):
    a = result_factory()
    b = result_factory(lines={5: {"inst": 2 * WARPS, "thread_inst": 64 * WARPS}})
    text = render_comparison([("slow", a), ("fast", b)], title="comparison: demo")
    rows = text.splitlines()
    assert rows[0] == "== comparison: demo =="
    assert rows[1].split()[:3] == ["program", "warp", "inst"]
    assert rows[2].split()[:3] == ["slow", "640", "1.00x"]
    assert rows[3].split()[:4] == ["fast", "128", "0.20x", "100.0"]
    assert "time" not in text


def test_comparison_shows_time_when_every_run_has_it(result_factory):
    a = result_factory(metrics_extra={"gpu__time_duration.sum": 2000.0})
    b = result_factory(metrics_extra={"gpu__time_duration.sum": 1000.0})
    rows = render_comparison([("a", a), ("b", b)]).splitlines()
    assert rows[1].split()[-2:] == ["time", "speedup"]
    assert rows[3].split()[-3:] == ["1.00", "us", "2.00x"]


def test_partial_last_warp_is_named_as_such(result_factory):
    # 80 threads per block = 3 warps, the last with 16 lanes: 80 / 96 of the lanes work
    lines = {5: {"inst": WARPS, "thread_inst": 32 * WARPS}, 8: {"inst": 3 * WARPS, "thread_inst": 80 * WARPS}}
    text = render_source_view(result_factory(lines=lines, block=(80, 1, 1)), width=1000)
    assert "83.3 " in rows_by_line(text)[8]          # a launch property: no line is to blame
    assert ("launch: 80 threads per block: not a multiple of 32, so the last warp of each block runs with 16 of "
            "32 lanes") in text
    assert "use a multiple of 32 threads per block" in text


def test_local_memory_column_appears_only_with_local_traffic(result_factory, demo_result):
    assert "local sect" not in render_source_view(demo_result)
    lines = {8: {"inst": WARPS, "thread_inst": 32 * WARPS,
                 "local_ld_requests": WARPS, "local_ld_sectors": 4 * WARPS}}
    text = render_source_view(result_factory(lines=lines), width=1000)
    assert "local sect" in text and f"{4 * WARPS}!" in rows_by_line(text)[8]
    assert f"line 8: local memory: {WARPS} requests ({4 * WARPS} sectors)" in text


def test_function_spans_cover_each_function_with_decorators():
    from gpusim.report.sourceview import function_spans
    src = "import x\n\n@cuda.jit(device=True)\ndef helper(v):\n    return v + 1\n\n\n@cuda.jit\ndef k(a):\n    a[0] = helper(1)\n"
    assert function_spans(src, [5, 10]) == [(3, 5), (8, 10)]     # device function, then the kernel
    assert function_spans(src, [10]) == [(8, 10)]
    assert function_spans("def broken(:\n", [1]) == [(1, 1)]       # unparsable: just the lines
