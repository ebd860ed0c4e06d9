"""The error paths themselves: every error class survives a process boundary (pickle, as a
process pool sends it back: `validate compare`, sweeps) and a deepcopy with its message, fields
and exit status, and the builders of the did-not-finish errors work on any batch state."""
import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from numba import cuda

import gpusim
import isa.errors
from gpusim import errors
from gpusim.frontend.sass.tools import SassToolError
from gpusim.functional import budget
from gpusim.functional.syscalls import DeviceHeapError
from gpusim.functional.watchdog import Watchdog
from gpusim.sweep.space import TooManyPoints


def _classes(root):
    out = [root]
    for sub in root.__subclasses__():
        out += _classes(sub)
    return out


def _instance(cls):
    if issubclass(cls, errors.KernelError):
        return cls("it went wrong", kernel="k", source="k.py:3 (x = 1)", block=(1, 0, 0), thread=(5, 0, 0),
                   detail="details")
    if issubclass(cls, isa.errors.PtxSyntaxError):
        return cls("bad token", 12, "add.s32 %r1,")
    if issubclass(cls, isa.errors.UnsupportedInstruction):
        return cls("foo.b32", ptx_line=7, source="k.py:2", kernel="k", reason="no such opcode")
    if issubclass(cls, isa.errors.UnsupportedCall):
        return cls("cannot link", callee="f", ptx_line=3)
    if cls is TooManyPoints:
        return cls("a message", points=5)
    return cls("a message")


ALL = sorted({c for root in (errors.GpusimError, isa.errors.IsaError) for c in _classes(root)}
             | {SassToolError, DeviceHeapError}, key=lambda c: (c.__qualname__, c.__module__))


@pytest.mark.parametrize("cls", ALL, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_error_class_pickles_and_copies_with_its_message_and_fields(cls):
    e = _instance(cls)
    for back in (pickle.loads(pickle.dumps(e)), copy.deepcopy(e)):
        assert type(back) is cls and str(back) == str(e) and back.__dict__ == e.__dict__
        assert errors.exit_code(back) == errors.exit_code(e)


def _raise_in_worker():
    raise errors.StepBudgetExceeded("kernel did not finish within max_steps", kernel="sgemm", source="s.py:9",
                                    block=(3, 0, 0), thread=(0, 1, 0), detail="500 steps")


def test_a_kernel_error_raised_in_a_process_pool_reaches_the_caller_as_itself():
    # issue 24: "KernelError.__init__() missing 1 required keyword-only argument: 'kernel'" came
    # from unpickling a KernelError sent back by validate compare's worker processes
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        with pytest.raises(errors.StepBudgetExceeded) as e:
            pool.submit(_raise_in_worker).result()
    assert (e.value.kernel, e.value.block, e.value.thread) == ("sgemm", (3, 0, 0), (0, 1, 0))
    assert str(e.value).startswith("kernel did not finish within max_steps in kernel sgemm, at s.py:9")


def two_paths(out):
    t = cuda.threadIdx.x
    if t < 40:
        out[t] = t
    else:
        out[t] = -t


@pytest.mark.parametrize("state", ["fresh", "midway", "finished"])
def test_the_did_not_finish_errors_build_on_any_batch_state(state):
    p = gpusim.prepare(two_paths, 2, 64, (np.zeros(64, np.int64),))
    ex = p.batch(0, 2)
    if state == "midway":
        ex.step()
        ex.step()
    elif state == "finished":
        ex.run()
    ex.step_budget = 10
    every = np.arange(ex.nwarps)
    built = [budget.budget_error(ex, 0), budget.time_limit_error("two_paths", 1.5, ex, 0),
             budget.time_limit_error("two_paths", 1.5, timed=(3, 8)),
             budget.no_progress_error(ex, Watchdog(ex), every), budget.no_progress_error(ex, Watchdog(ex), every[:0])]
    for e in built:
        assert isinstance(e, errors.StepBudgetExceeded) and e.kernel == "two_paths" and "\n" not in str(e)
    if state != "finished":
        assert built[0].block == (0, 0, 0) and built[0].source is not None and built[0].thread is not None
