"""One numba-cuda cudapy test module run against gpusim's drop-in, in this process.

    python tests/numba_cuda/child.py MODULE OUT.jsonl [--skip ID ...] [--test-timeout S]

The module `numba.cuda.tests.cudapy.MODULE` (and every usecase module it imports from
that package) is imported with its source changed the way a user changes a program:
`from numba import cuda` -> `from gpusim import cuda`, `from numba.cuda import X` ->
`from gpusim.cuda import X`, `import numba.cuda as c` -> `import gpusim.cuda as c`, also in
program text that a test runs in a subprocess, and in a test run again in a subprocess
(`run_test_in_subprocess`: `subproc/sitecustomize.py` installs the change there).
Nothing else is patched in the tests, except numba.cuda.testing's compute-capability
probe, which asks the simulated device instead of the CUDA driver.

Each test runs under unittest with a per-test alarm; one JSON line is appended to OUT
before ("start") and after (the outcome) each test, so that the parent
(`harness.py`) knows which test a hang or a dead process was in. Outcomes: pass, fail
(assertion), error (exception), skip (the test's own skip decorators), xfail
(expected failure that failed), xpass (unexpected success). An error whose innermost
frame is inside gpusim/ or isa/, is not a GpusimError/IsaError and is not raised by a
`raise` statement there (a deliberate error naming a gap) is marked `crash`: a bug of
the simulator, not an unsupported feature.
"""
from __future__ import annotations

import argparse
import ast
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import signal
import sys
import time
import traceback
import unittest

PACKAGE = "numba.cuda.tests.cudapy"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OURS = (os.path.join(REPO, "gpusim") + os.sep, os.path.join(REPO, "isa") + os.sep)


# ----------------------------------------------------------------------------- the one-import change
class _Rewrite(ast.NodeTransformer):
    """numba.cuda imports -> gpusim.cuda imports (see module doc)."""

    def visit_ImportFrom(self, node: ast.ImportFrom):
        if node.level == 0 and node.module == "numba":
            ours = [a for a in node.names if a.name == "cuda"]
            if not ours:
                return node
            rest = [a for a in node.names if a.name != "cuda"]
            out = [ast.ImportFrom(module="gpusim", names=ours, level=0)]
            if rest:
                out.append(ast.ImportFrom(module="numba", names=rest, level=0))
            return [ast.copy_location(n, node) for n in out]
        if node.level == 0 and node.module == "numba.cuda":
            node.module = "gpusim.cuda"
        return node

    def visit_Constant(self, node: ast.Constant):
        # programs the tests run in a subprocess (source text): the same one-import change
        if isinstance(node.value, str) and "from numba import cuda\n" in node.value:
            node.value = node.value.replace("from numba import cuda\n", "from gpusim import cuda\n")
        return node

    def visit_Import(self, node: ast.Import):
        for a in node.names:
            if a.name == "numba.cuda" and a.asname:
                a.name = "gpusim.cuda"
        return node


class _Loader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):           # never the unrewritten bytecode in __pycache__
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)

    def source_to_code(self, data, path, *, _optimize=-1):
        tree = ast.fix_missing_locations(_Rewrite().visit(ast.parse(data, path)))
        return compile(tree, path, "exec", dont_inherit=True, optimize=_optimize)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(PACKAGE + ".") or fullname.count(".") != PACKAGE.count(".") + 1:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not str(spec.origin).endswith(".py"):
            return spec
        return importlib.util.spec_from_file_location(fullname, spec.origin,
                                                      loader=_Loader(fullname, spec.origin))


def install() -> None:
    """Install the import rewrite and the simulated device's compute capability probe."""
    sys.dont_write_bytecode = True            # rewritten modules must not land in __pycache__
    sys.meta_path.insert(0, _Finder())
    import numba.cuda.testing as testing
    from gpusim import cuda

    def cc_X_or_above(major: int, minor: int) -> bool:
        return tuple(cuda.get_current_device().compute_capability) >= (major, minor)
    testing.cc_X_or_above = cc_X_or_above


# ----------------------------------------------------------------------------- running
def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t


def _is_crash(exc: BaseException, tb) -> bool:
    from gpusim.errors import GpusimError
    from isa.errors import IsaError
    if isinstance(exc, (GpusimError, IsaError)):
        return False
    frames = traceback.extract_tb(tb)
    if not frames or not frames[-1].filename.startswith(OURS):
        return False
    # a `raise` statement of ours names a gap on purpose (Python's AttributeError for a missing
    # attribute, Numba's exception types); a crash is an operation failing inside gpusim
    return not (frames[-1].line or "").lstrip().startswith("raise")


class _Result(unittest.TestResult):
    def __init__(self) -> None:
        super().__init__()
        self.outcomes: list[tuple[str, str, dict]] = []

    def _err(self, test, err, status):
        etype, exc, tb = err
        if etype.__name__ == "Skipped" and any(c.__module__ == "_pytest.outcomes" for c in etype.__mro__):
            self.addSkip(test, str(exc))              # pytest.skip() inside a unittest test
            return
        msg = str(exc).strip().splitlines()
        info = {"exc": "Timeout" if etype is _Timeout else etype.__name__, "msg": (msg[0] if msg else "")[:300]}
        frames = traceback.extract_tb(tb)
        if frames:
            f = frames[-1]
            info["where"] = f"{os.path.basename(f.filename)}:{f.lineno}"
        if status == "error" and _is_crash(exc, tb):
            info["crash"] = True
            info["trace"] = "".join(traceback.format_exception(etype, exc, tb)[-6:])[-2000:]
        self.outcomes.append((test.id(), status, info))

    def addSuccess(self, test):
        self.outcomes.append((test.id(), "pass", {}))

    def addFailure(self, test, err):
        self._err(test, err, "fail")

    def addError(self, test, err):
        self._err(test, err, "error")

    def addSkip(self, test, reason):
        self.outcomes.append((test.id(), "skip", {"msg": str(reason)[:300]}))

    def addExpectedFailure(self, test, err):
        self.outcomes.append((test.id(), "xfail", {}))

    def addUnexpectedSuccess(self, test):
        self.outcomes.append((test.id(), "xpass", {}))

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._err(test, err, "fail" if issubclass(err[0], test.failureException) else "error")


class _Timeout(BaseException):
    pass


_CURRENT: list = []          # the running test's result, so a timeout can stop its remaining subtests


def _alarm(signum, frame):
    if _CURRENT:
        _CURRENT[0].failfast = True          # unittest then stops at the subtest that timed out
    raise _Timeout("the test ran past its time limit")


def _short(test_id: str) -> str:
    return test_id[len(PACKAGE) + 1:] if test_id.startswith(PACKAGE + ".") else test_id


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("out")
    ap.add_argument("--skip", nargs="*", default=[])
    ap.add_argument("--test-timeout", type=float, default=60.0)
    args = ap.parse_args(argv)
    skip = set(args.skip)
    out = open(args.out, "a", buffering=1)

    def emit(**rec):
        out.write(json.dumps(rec) + "\n")

    install()
    # processes the tests start themselves (run_test_in_subprocess) get the same change (subproc/)
    os.environ["GPUSIM_NUMBA_CUDA_REWRITE"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                          "subproc"), os.environ.get("PYTHONPATH")]))
    name = f"{PACKAGE}.{args.module}"
    try:
        mod = importlib.import_module(name)
        tests = list(_flatten(unittest.defaultTestLoader.loadTestsFromModule(mod)))
    except BaseException as e:         # noqa: BLE001  (any import failure is the module's outcome)
        emit(id=f"{args.module}.<import>", status="error", exc=type(e).__name__,
             msg=(str(e).strip().splitlines() or [""])[0][:300],
             crash=_is_crash(e, e.__traceback__) or None)
        return 0
    emit(event="collected", ids=[_short(t.id()) for t in tests])
    signal.signal(signal.SIGALRM, _alarm)
    for t in tests:
        tid = _short(t.id())
        if tid in skip:
            continue
        emit(event="start", id=tid)
        res = _Result()
        t0 = time.perf_counter()
        _CURRENT[:] = [res]
        signal.setitimer(signal.ITIMER_REAL, args.test_timeout, 1.0)     # again every second if swallowed
        try:
            try:
                t(res)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Timeout:
            res.outcomes.append((t.id(), "error", {"exc": "Timeout", "msg": f"over {args.test_timeout:g} s"}))
        dt = round(time.perf_counter() - t0, 3)
        if not res.outcomes:
            res.outcomes.append((t.id(), "pass", {}))
        # a test whose subtests failed reports those and then success: the failure wins
        bad = [o for o in res.outcomes if o[1] in ("fail", "error", "xpass")]
        _, status, info = (bad or res.outcomes)[0]
        emit(id=tid, status=status, seconds=dt, **info)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    sys.exit(main())
