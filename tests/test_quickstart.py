"""The README's quickstart and CI cannot drift apart: `.ci/run` runs the README's second command,
exactly as written, inside a virtual environment it has just made from nothing."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def quickstart_commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, "the README's Quickstart section has no ```bash block"
    return [ln.strip() for ln in block.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def ci_lines() -> list[str]:
    return [ln.strip() for ln in (REPO / ".ci/run").read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def test_the_quickstart_is_two_commands_install_and_run_then_install_and_test():
    first, second = quickstart_commands()
    assert first.startswith("pip install -e . ") and "gpusim run" in first
    assert second.startswith('pip install -e ".[test]"') and "pytest" in second


def test_ci_runs_the_readmes_second_command_as_written():
    second = quickstart_commands()[1]
    lines = ci_lines()
    assert lines[-1] == second, f".ci/run ends with {lines[-1]!r}, the README says {second!r}"


def test_ci_runs_it_in_a_fresh_virtual_environment_without_system_packages():
    lines = ci_lines()
    text = "\n".join(lines)
    made = next(i for i, ln in enumerate(lines) if re.search(r"-m venv\b", ln))
    removed = next(i for i, ln in enumerate(lines) if ln.startswith("rm -rf"))
    activated = next(i for i, ln in enumerate(lines) if re.match(r"(source|\.) .*bin/activate", ln))
    assert removed < made < activated < len(lines) - 1
    assert "system-site-packages" not in text
    assert "GPUSIM_REQUIRE_INSTALLED=1" in text       # a skip for a missing module fails there
