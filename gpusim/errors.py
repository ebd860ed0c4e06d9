"""Errors a gpusim user can act on: each names the kernel, and where it applies the
Python source line, the block and thread, and the offending value.

Every error gpusim raises for bad input is a `GpusimError`; the `gpusim` command prints
one as a single `error: ...` line and exits with the class's `exit_code`:

    0   success
    1   a simulated output differs from its numpy reference (`gpusim check`: hazards found)
    2   bad command line: unknown program, size or parameter, a file without PROGRAM
    3   GpusimError not listed below (e.g. NVIDIA's ptxas missing for timing)
    4   ConfigError: a GPU spec, preset, override or TOML file
    5   LaunchError: launch shape, arguments, shared memory, a launch too large to simulate
    6   UnsupportedKernel: a kernel the simulator cannot compile or run (an unsupported PTX
        instruction, an indirect call, a callee without a definition, PTX it cannot parse)
    7   KernelError: the kernel failed while running (trap, assertion)
    8   MemoryAccessError: an out-of-bounds or misaligned access
    9   BarrierError: a barrier some threads can never reach, a non-converged collective
    10  StepBudgetExceeded: the kernel did not finish: its warps can make no more progress
        (NoProgress), or it ran past `max_steps` or the time limit (TimeLimitExceeded)
    11  OutputError: a file gpusim was asked to write cannot be written (a missing folder, a
        directory where a file was asked for, no permission, a full disk)
    12  WorkerLost: a worker process of a sweep died (killed, out of memory)
    130 interrupted (Ctrl-C); 143 terminated (SIGTERM)

The `isa` layer's errors (`isa.errors`) cannot derive from these (isa never imports
gpusim); `from_isa` turns one into the gpusim class of the same name, which derives from
both, so `except isa.errors.UnsupportedCall` and `except GpusimError` both catch it.
"""
from __future__ import annotations

import importlib

import isa.errors as _isa


class GpusimError(Exception):
    """Base of every error gpusim raises for bad input. Pickles with its message and fields
    (process pools send errors back: `validate compare`, sweeps), whatever its constructor takes."""
    exit_code = 3

    def __reduce__(self):
        """Pickled as its message and fields (a sweep's worker sends it to the parent): rebuilt
        without calling `__init__` (KernelError's takes keywords), as the nearest class pickle
        can find by name (`numba_errors.like` makes classes of the same name it cannot)."""
        return _rebuild, (_importable(type(self)), self.args, dict(self.__dict__))


def _importable(cls: type) -> type:
    for c in cls.__mro__:
        try:
            if getattr(importlib.import_module(c.__module__), c.__qualname__, None) is c:
                return c
        except ImportError:                       # pragma: no cover - a class of a module gone
            continue
    return GpusimError


def _rebuild(cls: type, args: tuple, state: dict) -> GpusimError:
    err = cls.__new__(cls, *args)
    BaseException.__init__(err, *args)
    err.__dict__.update(state)
    return err


class ConfigError(GpusimError):
    """An invalid GPU spec or preset name."""
    exit_code = 4


class LaunchError(GpusimError):
    """A launch CUDA itself would refuse (bad grid/block shape, too much shared memory, bad
    arguments), or one too large to simulate."""
    exit_code = 5


class UnsupportedKernel(GpusimError):
    """A kernel or argument the simulator cannot run (names what and why)."""
    exit_code = 6


class PtxSyntaxError(UnsupportedKernel, _isa.PtxSyntaxError):
    """PTX that gpusim's parser cannot read (names the PTX line)."""


class UnsupportedCall(UnsupportedKernel, _isa.UnsupportedCall):
    """A call gpusim cannot place: an indirect call, a callee without a definition, linked code it cannot build."""


class UnsupportedInstruction(UnsupportedKernel, _isa.UnsupportedInstruction):
    """A PTX instruction outside gpusim's opcode table."""


class KernelError(GpusimError):
    """The kernel did something undefined while running (bad address, deadlock)."""
    exit_code = 7

    def __init__(self, what: str, *, kernel: str, source: str | None = None,
                 block: tuple[int, int, int] | None = None, thread: tuple[int, int, int] | None = None,
                 detail: str = ""):
        self.what, self.kernel, self.source = what, kernel, source
        self.block, self.thread, self.detail = block, thread, detail
        parts = [f"{what} in kernel {kernel}"]
        if source:
            parts.append(f"at {source}")
        if block is not None:
            parts.append(f"block {block}")
        if thread is not None:
            parts.append(f"thread {thread}")
        msg = ", ".join(parts)
        super().__init__(f"{msg}: {detail}" if detail else msg)


class MemoryAccessError(KernelError):
    """An access outside every allocation, or misaligned (compute-sanitizer memcheck's class)."""
    exit_code = 8


class BarrierError(KernelError):
    """A barrier some live threads of a block can never reach (divergent syncthreads)."""
    exit_code = 9


class StepBudgetExceeded(KernelError):
    """The kernel did not finish: it ran past the step budget the caller set (`max_steps`), or
    one of the subclasses below (names the lines and threads)."""
    exit_code = 10


class NoProgress(StepBudgetExceeded):
    """The kernel can never finish: its unfinished warps repeat a loop over values nothing can
    change any more, or run a loop that ends only when a counter wraps around
    (`gpusim/functional/watchdog.py`)."""


class TimeLimitExceeded(StepBudgetExceeded):
    """The launch ran past the wall-clock limit the caller set (`time_limit_s`, `--time-limit`)."""


class TimingDeadlock(GpusimError):
    """The timing model reached a state in which no warp of an SM can ever issue again (a defect of
    the model, not of the kernel: the functional run finished); raised instead of running forever."""


class OutputError(GpusimError):
    """A file gpusim was asked to write (--out, --trace, --plot, --html) cannot be written."""
    exit_code = 11


class WorkerLost(GpusimError):
    """A worker process of a sweep died while running a point (killed, out of memory)."""
    exit_code = 12


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by the `gpusim` command's handler (exit 143); a
    KeyboardInterrupt, so whatever stops cleanly on Ctrl-C stops so on SIGTERM too."""


_FROM_ISA = ((_isa.PtxSyntaxError, PtxSyntaxError), (_isa.UnsupportedCall, UnsupportedCall),
             (_isa.UnsupportedInstruction, UnsupportedInstruction))


def from_isa(e: BaseException, message: str | None = None) -> BaseException:
    """The gpusim error for an `isa.errors.IsaError` (same fields, `message` if given);
    `e` itself when it is already a GpusimError or not an isa error."""
    if isinstance(e, GpusimError) or not isinstance(e, _isa.IsaError):
        return e
    cls = next((g for i, g in _FROM_ISA if isinstance(e, i)), UnsupportedKernel)
    out = cls.__new__(cls)
    out.__dict__.update(e.__dict__)
    out.args = (message if message is not None else str(e),)
    return out


def exit_code(e: BaseException) -> int:
    """The `gpusim` command's exit status for error `e` (see the module doc)."""
    code = getattr(type(e), "exit_code", None)
    if isinstance(e, GpusimError) and isinstance(code, int):
        return code
    if isinstance(e, _isa.IsaError):
        return UnsupportedKernel.exit_code
    return GpusimError.exit_code
