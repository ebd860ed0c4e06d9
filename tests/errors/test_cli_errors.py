"""The gpusim command: every error one `error: ...` line, each class its own exit status
(never 1, which means "output differs from numpy")."""
import io

import numpy as np
import pytest

import gpusim
from gpusim import errors
from gpusim.cli import build_parser
from gpusim.cli.exits import EXIT_CODES, error_code
from gpusim.cli.progress import ProgressLine

from bad_inputs import one_line
from bad_inputs import spin_one_thread


def test_each_error_class_has_its_own_exit_status_and_none_is_1():
    classes = [errors.GpusimError, errors.ConfigError, errors.LaunchError, errors.UnsupportedKernel,
               errors.KernelError, errors.MemoryAccessError, errors.BarrierError, errors.StepBudgetExceeded]
    codes = [c.exit_code for c in classes]
    assert len(set(codes)) == len(codes) and 1 not in codes and 2 not in codes
    documented = dict(EXIT_CODES)
    assert all(c in documented for c in codes)


def test_help_documents_the_exit_statuses():
    text = build_parser().format_help()
    assert "exit status:" in text and "10   StepBudgetExceeded" in text and "4    ConfigError" in text


def test_isa_error_reaching_the_cli_is_an_unsupported_kernel_status():
    import isa.errors
    assert error_code(isa.errors.PtxSyntaxError("unmatched '}'", 3, "}")) == 6


def test_unknown_program_lists_close_names(run_cli):
    code, _, err = run_cli("run", "transpoze")
    assert code == 2 and "no program named 'transpoze'" in one_line(err) and "transpose" in err


def test_unknown_size_lists_the_sizes(run_cli):
    code, _, err = run_cli("run", "vector_add", "--size", "huge")
    assert code == 2 and "vector_add has no size 'huge'; its sizes: default, medium, large" in one_line(err)


def test_file_with_a_syntax_error(run_cli, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n    pass\n")
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "SyntaxError" in one_line(err) and "broken.py" in err


def test_file_without_program(run_cli, tmp_path):
    path = tmp_path / "nothing.py"
    path.write_text("x = 1\n")
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "must define PROGRAM = ProgramSpec(...)" in one_line(err)


def test_missing_file(run_cli, tmp_path):
    code, _, err = run_cli("run", str(tmp_path / "missing.py"))
    assert code == 2 and "missing.py" in one_line(err)


def test_launch_error_from_a_program_parameter_is_exit_5(run_cli):
    code, _, err = run_cli("run", "dynamic_shared", "--functional", "--set", "block=2048")
    assert code == 5 and "2048" in one_line(err) and "limit" in err


def test_bad_max_steps_option(run_cli):
    code, _, err = run_cli("run", "vector_add", "--max-steps", "lots")
    assert code == 2 and "--max-steps" in err


# ---------------------------------------------------------------- progress

def test_launch_reports_progress_while_a_kernel_spins():
    seen = []
    with pytest.raises(errors.StepBudgetExceeded):
        gpusim.launch(spin_one_thread, 1, 32, (np.zeros(1, np.int64),), max_steps=3000, progress=seen.append)
    spinning = [p for p in seen if p.steps]
    assert [p.steps for p in spinning] == [1024, 2048] and spinning[0].step_budget == 3000
    assert spinning[0].phase == "functional" and spinning[0].blocks_total == 1


def test_functional_progress_counts_blocks():
    from bad_inputs import copy
    seen = []
    a = np.zeros(1 << 16, np.float32)
    gpusim.launch(copy, 256, 256, (a, a.copy()), progress=seen.append, batch_lanes=1 << 14)
    assert [p.blocks_done for p in seen] == [0, 64, 128, 192, 256] and seen[-1].blocks_total == 256


def test_timing_progress_has_simulated_time():
    from bad_inputs import copy
    seen = []
    a = np.zeros(4096, np.float32)
    gpusim.launch(copy, 16, 256, (a, a.copy()), timing=True, progress=seen.append)
    last = seen[-1]
    assert (last.phase, last.blocks_done, last.blocks_total) == ("timing", 16, 16) and last.simulated_ns > 0


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_is_drawn_on_a_terminal(monkeypatch):
    from gpusim.api import Progress
    from gpusim.cli import progress
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    tty = Tty()
    line = ProgressLine("spin", tty)
    assert ProgressLine.wanted(tty)
    line(Progress("spin", "functional", 0, 1, steps=4096, step_budget=10008))
    assert "spin: functional 0/1 blocks (0%), batch at step 4,096 of 10,008" in tty.getvalue()


def test_progress_line_of_a_long_batch_without_a_budget_counts_its_steps(monkeypatch):
    from gpusim.api import Progress
    from gpusim.cli import progress
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    tty = Tty()
    ProgressLine("csr", tty)(Progress("csr", "timing", 3, 8, steps=2_000_000))
    assert "csr: timing 3/8 blocks (37%), batch at step 2,000,000, " in tty.getvalue()


def test_a_long_kernel_reports_its_steps_while_it_runs():
    from test_step_budget import count_to
    seen = []
    gpusim.launch(count_to, 1, 1, (np.array([30000]), np.zeros(1, np.int64)), progress=seen.append)
    steps = [p.steps for p in seen if p.steps]
    assert steps[:2] == [1024, 2048] and all(p.step_budget == 0 for p in seen)


def test_no_progress_when_stderr_is_piped(run_cli):
    code, _, err = run_cli("run", "vector_add", "--functional")
    assert code == 0 and not ProgressLine.wanted(io.StringIO()) and "\r" not in err
