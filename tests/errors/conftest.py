"""Fixture of the bad-input tests: the `gpusim` command run in-process, returning its exit
status, stdout and stderr (bad_inputs.py holds the kernels and `one_line`).

Issue 11's findings and the tests that hold them:
- default budget took 765 s for one spinning thread, minutes for a spin lock and 64x256:
  test_step_budget.py (each stops in seconds, functional and timing, naming line and threads;
  since issue 24 by lack of progress, with no default budget);
- `max_steps` ignored with timing=True: test_timing_mode_honours_max_steps; no budget option
  in `gpusim run`: test_run_max_steps_stops_a_long_file_with_exit_10;
- `--set sm.count=1e6` / 1e30 (OverflowError with --functional): test_spec_values.py;
- the largest legal grid starts silently: test_largest_legal_grid_is_refused_at_once_with_an_estimate;
- UnsupportedCall / PtxSyntaxError outside GpusimError, exit 1, "cannot link
  cudaCGGetIntrinsicHandle", recursion's Numba attribute error: test_unsupported.py,
  test_cli_errors.py (a status per class, none 1);
- PTX cache: truncated never rebuilt, garbage UnicodeDecodeError, edited add->sub silently
  wrong: test_disk_cache.py;
- 52 KB of static shared memory accepted: test_52_kib_of_static_shared_memory_is_refused_like_ptxas;
- no progress with --functional or while spinning: test_cli_errors.py (progress);
- a wheel at the repository root: test_repository.py.
(The race, missing-barrier and uninitialised-read findings are the sanitizer's: tests/sanitizer.)
"""
import pytest

from gpusim import cli


@pytest.fixture
def run_cli(capsys):
    def run(*argv):
        code = cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err
    return run

