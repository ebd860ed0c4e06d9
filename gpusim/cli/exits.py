"""The `gpusim` command's exit statuses (`EXIT_CODES`, printed by `gpusim --help`) and how an
error becomes one: a user's error (bad input, a `GpusimError`, an `IsaError`, Numba's errors,
an exception a `debug=True` kernel raised) is printed as one `error: ...` line and mapped to
its status; anything else is a bug in gpusim and keeps its traceback.
"""
from __future__ import annotations

import sys
import traceback

from numba.core.errors import NumbaError

from gpusim.errors import GpusimError, KernelError, UnsupportedKernel, exit_code
from isa.errors import IsaError

EXIT_OK, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
EXIT_CODES = (            # status, meaning: `gpusim --help` prints this table
    (0, "success"),
    (1, "a simulated output differs from its numpy reference (gpusim check: the tools found hazards)"),
    (2, "bad command line: unknown program, size, parameter or option; a file without PROGRAM"),
    (3, "another gpusim error (e.g. NVIDIA's ptxas/nvdisasm missing for timing)"),
    (4, "ConfigError: bad GPU preset, spec field or value (out of range), or TOML file"),
    (5, "LaunchError: bad launch shape, arguments or shared memory, or a launch too large to simulate"),
    (6, "UnsupportedKernel: the kernel uses what gpusim cannot run (grid sync, recursion, ...)"),
    (7, "KernelError: the kernel failed while running (trap, assert)"),
    (8, "MemoryAccessError: out-of-bounds or misaligned access"),
    (9, "BarrierError: a barrier not all threads reach, a non-converged warp collective"),
    (10, "StepBudgetExceeded: the kernel cannot finish (no progress), or passed --max-steps or --time-limit"),
    (11, "OutputError: a file to write (--out, --trace, --plot, --html) cannot be: missing folder, full disk, ..."),
    (12, "WorkerLost: a sweep's worker process died (killed, out of memory); its finished points are kept"),
    (130, "interrupted (Ctrl-C)"),
    (143, "terminated (SIGTERM)"),
)


class UsageError(Exception):
    """Bad input to the command itself (unknown program, size or parameter)."""


class CheckFailed(Exception):
    """A simulated output differs from the program's numpy reference."""


def is_user_error(e: BaseException) -> bool:
    if isinstance(e, (UsageError, GpusimError, IsaError)) or raised_in_kernel(e):
        return True
    return isinstance(e, NumbaError)


def raised_in_kernel(e: BaseException) -> str | None:
    """The kernel that raised `e` (a `debug=True` kernel's own exception), or None."""
    name = getattr(e, "gpusim_kernel", None)
    return name if isinstance(name, str) else None


def report_error(e: BaseException, show_traceback: bool, prefix: str = "") -> int:
    if show_traceback:
        traceback.print_exception(e, file=sys.stderr)
    text = "; ".join([str(e), *getattr(e, "__notes__", ())]) if str(e) else type(e).__name__
    if raised_in_kernel(e):
        text = f"kernel {raised_in_kernel(e)} raised {type(e).__name__}: {text}"
    msg = " ".join(text.split())                                 # one line, whatever the message holds
    print(f"error: {prefix}{msg}", file=sys.stderr)
    return error_code(e)


def error_code(e: BaseException) -> int:
    """The exit status for error `e` (EXIT_CODES)."""
    if isinstance(e, CheckFailed):
        return EXIT_MISMATCH
    if raised_in_kernel(e):
        return KernelError.exit_code
    if isinstance(e, (GpusimError, IsaError)):
        return exit_code(e)
    if isinstance(e, UsageError):
        return EXIT_ERROR
    return UnsupportedKernel.exit_code               # Numba's own errors: the kernel cannot be compiled
