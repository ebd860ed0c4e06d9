"""What `validate measure` runs: the suites (`SUITES`), each one's (kind, group, size) in run order
(`selected`), and the kernel spec of a record (`spec_of`), for the measurement and for the
prediction of a measured record (`validate/predict.py`).
"""
from __future__ import annotations

import re

SUITES = ("programs", "heldout", "heldout2", "all", "mechanisms", "tensor")


def selected(only: str | None, skip: str | None, suite: str = "programs") -> list[tuple[str, str, str]]:
    """(kind, group, size) for every size of every kernel of `suite`, in run order: program
    and microbenchmark sizes ("programs"), held-out sizes ("heldout"), the second held-out suite's
    measured sizes ("heldout2": all but 'default'), all three ("all"), or the mechanism
    microbenchmarks' measured sizes ("mechanisms": their 'default' sizes are for the simulator only)."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose one of {', '.join(SUITES)}")
    out = []
    # lazy, each suite import below: a suite's module defines its numba kernels when imported (the
    # tensor set's builds CUDA C++ and Triton sources); only the suites asked for are loaded
    if suite in ("programs", "all"):
        import programs  # lazy: this suite only
        from validate.microbench import MICROBENCHMARKS  # lazy: this suite only
        out += [("program", name, size) for name, spec in programs.PROGRAMS.items() for size in spec.sizes]
        out += [("microbenchmark", name, size) for name, spec in MICROBENCHMARKS.items() for size in spec.sizes]
    if suite in ("heldout", "all"):
        from validate.heldout import HELDOUT  # lazy: this suite only
        out += [("heldout", name, size) for name, spec in HELDOUT.items() for size in spec.sizes]
    if suite in ("heldout2", "all"):
        from validate.heldout2 import HELDOUT2, measured_sizes  # lazy, as the other suites: numba kernels
        out += [("heldout2", name, size) for name in HELDOUT2 for size in measured_sizes(name)]
    if suite == "mechanisms":
        from validate.mechanisms import MECHANISMS  # lazy: this suite only
        out += [("mechanism", name, size) for name, spec in MECHANISMS.items() for size in spec.sizes
                if size != "default"]
    if suite == "tensor":
        from validate.tensor_set.suite import cases  # the entries whose programs exist here
        out += [("tensor", name, size) for name, size in cases()]
    keep = lambda g, s: (only is None or re.search(only, f"{g}/{s}")) and not (skip and re.search(skip, f"{g}/{s}"))
    return [(k, g, s) for k, g, s in out if keep(g, s)]


def spec_of(kind: str, group: str):
    """The spec (`ProgramSpec`) of kernel `group` of record kind `kind` ("program", "heldout", "heldout2",
    "mechanism", "tensor", else a microbenchmark)."""
    # lazy, each import below: only the suite named is loaded (see `selected`)
    if kind == "program":
        import programs  # lazy: this suite only
        return programs.get(group)
    if kind == "heldout":
        from validate.heldout import HELDOUT  # lazy: this suite only
        return HELDOUT[group]
    if kind == "heldout2":
        from validate.heldout2 import HELDOUT2  # lazy: this suite only
        return HELDOUT2[group]
    if kind == "mechanism":
        from validate.mechanisms import MECHANISMS  # lazy: this suite only
        return MECHANISMS[group]
    if kind == "tensor":
        from validate.tensor_set.suite import spec  # lazy: this suite only
        return spec(group)
    from validate.microbench import MICROBENCHMARKS  # lazy: this suite only
    return MICROBENCHMARKS[group]
