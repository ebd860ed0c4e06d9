"""Text reports of a launch's `Result`: the per-line source view with its verdict,
and the comparison table of several runs. Pure functions returning strings; only
`gpusim.cli` prints them."""
from gpusim.report.fmt import want_color
from gpusim.report.sourceview import render_source_view
from gpusim.report.summary import render_comparison
from gpusim.report.verdict import Issue, line_issues

__all__ = ["render_source_view", "render_comparison", "line_issues", "Issue", "want_color"]
