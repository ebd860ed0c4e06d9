"""Source lines for the code a program runs: the `.loc` directives of a line-info compilation
carried onto the PTX of the plain one.

A compiler asked for line information does not only annotate its output: NVVM (Numba's
`lineinfo=True`) emits slightly different PTX with it (a few more instructions, other
registers), and ptxas then makes other choices from it. Numba's `nbody_shared`
(validate/_heldout2/compute.py) assembles to 440 SASS instructions either way, but with line
information 34 of them are on the uniform datapath and without it 97: the index arithmetic of its
inner loop moves to uniform registers. The GPU runs what `numba.cuda.jit` builds, which asks for
no line information by default: Nsight counted that kernel's 25,393,152 warp instructions on the
H100 with 6.58 M on the uniform pipe (data/measurements/h100_heldout2.json), which the plain build
gives exactly and the line-info one does not (25,246,592, 10 K uniform). (NVRTC's `-lineinfo`
changed none of the tensor set's 46 CUDA C++ kernels' SASS, so CUDA C++ is compiled once, with it.)

So Numba kernels are compiled twice (`numbacompile.py`): the plain PTX is the code gpusim runs and
times, and `carry_lines(plain, annotated)` gives it the annotated compilation's source lines. Both
come from one compiler run on one input, so their instruction streams are nearly the same (nbody:
235 of 266 instructions matched, 440 of 440 SASS instructions the same with the carried lines);
they are aligned on their instructions with register numbers and compiler-numbered names taken out
(`difflib`'s longest matching blocks), each plain instruction takes the `.loc` in effect at its
partner, one without a partner the line of the one before. The `.loc` directives are only
annotations to ptxas: the merged text assembles to exactly the plain PTX's SASS
(tests/frontend/test_ptx_lines.py). The `.file` table and any debug sections that the `.loc`
directives refer to are carried with them, and a `.loc` that is `inlined_at` a call site comes
after one naming that site, as ptxas requires.
"""
from __future__ import annotations

import difflib
import re

_REG = re.compile(r"%([A-Za-z_]+)\d+\b")
_NUMBERED = re.compile(r"(_cudapy_smem_|\$L__BB|\$L__info_string|__local_depot|_ZN|__cuda_local_var_)[\w$.]*")
_LOC = re.compile(r"^\s*\.loc\b")
_FILE = re.compile(r"^\s*\.file\b")
_SECTION = re.compile(r"^\s*\.section\b")
_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")


def _key(text: str) -> str:
    """An instruction with what differs between two compilations of the same code taken out."""
    return _NUMBERED.sub(r"\1", _REG.sub(r"%\1", " ".join(text.split())))


def _instructions(ptx: list[str]) -> tuple[list[int], list[str], list[str | None]]:
    """(line index, key, the `.loc` line in effect) of each non-directive line, debug sections skipped."""
    where, keys, locs = [], [], []
    loc = None
    debug = _debug_lines(ptx)
    for i, line in enumerate(ptx):
        s = line.strip()
        if i in debug:
            continue
        if _LOC.match(line):
            loc = line
            continue
        if not s or s.startswith("//") or _FILE.match(line):
            continue
        where.append(i)
        keys.append(_key(s))
        locs.append(loc)
    return where, keys, locs


def _debug_lines(ptx: list[str]) -> set[int]:
    """Indices of the lines of `.section` blocks (a `.section` line, then its braces, which may
    open on a later line)."""
    out: set[int] = set()
    depth, opened, inside = 0, False, False
    for i, line in enumerate(ptx):
        if not inside and _SECTION.match(line):
            inside, depth, opened = True, 0, False
        if inside:
            out.add(i)
            depth += line.count("{") - line.count("}")
            opened = opened or "{" in line
            if opened and depth <= 0:
                inside = False
    return out


def _where(loc: str) -> tuple:
    """(file, line, column) of a `.loc` directive."""
    return tuple(loc.replace(",", " ").split()[1:4])


def _state(loc: str, first: dict, stated: set, out: list) -> None:
    """Append `loc`, after the call site it is `inlined_at` if no earlier `.loc` of the function
    named it (ptxas requires one), recursively."""
    m = _INLINED.search(loc)
    if m and m.groups() not in stated:
        stated.add(m.groups())
        _state(first.get(m.groups(), f"\t.loc\t{' '.join(m.groups())}"), first, stated, out)
    out.append(loc)
    stated.add(_where(loc))


def _annotations(ptx: list[str]) -> list[str]:
    """The `.file` lines and debug sections, in order."""
    debug = _debug_lines(ptx)
    return [line for i, line in enumerate(ptx) if i in debug or _FILE.match(line)]


def carry_lines(plain: str, annotated: str) -> str:
    """`plain` with the `.loc` directives of `annotated` (another compilation of the same source with
    line information) placed before the instructions they describe, and its `.file` table and
    debug sections appended. `plain` unchanged where `annotated` carries no `.loc`."""
    a_lines = annotated.splitlines()
    if not any(_LOC.match(line) for line in a_lines):
        return plain
    p_lines = [line for line in plain.splitlines() if not _LOC.match(line)]
    p_at, p_keys, _ = _instructions(p_lines)
    _, a_keys, a_locs = _instructions(a_lines)
    loc_of: list[str | None] = [None] * len(p_keys)
    for i, j, n in difflib.SequenceMatcher(None, p_keys, a_keys, autojunk=False).get_matching_blocks():
        loc_of[i:i + n] = a_locs[j:j + n]
    prev = None
    for t, loc in enumerate(loc_of):                 # unmatched: the line of the instruction before
        loc_of[t] = prev = loc if loc is not None else prev
    at = dict(zip(p_at, loc_of))
    first: dict[tuple, str] = {}                 # a location -> the annotated text's first .loc of it
    for line in a_lines:
        if _LOC.match(line):
            first.setdefault(_where(line), line)
    out, current, depth = [], None, 0
    stated: set[tuple] = set()                   # locations this function's .loc lines have named
    for i, line in enumerate(p_lines):
        s = line.strip()
        loc = at.get(i)
        # a .loc only inside a function body and before an instruction or label (not a declaration)
        if depth and loc is not None and loc != current and s[:1] not in (".", "{", "}", "/"):
            _state(loc, first, stated, out)
            current = loc
        depth += s.count("{") - s.count("}") if not s.startswith("//") else 0
        if not depth:
            current = None                       # the next function states its first line again
            stated = set()
        if _FILE.match(line):
            continue
        out.append(line)
    out.extend(_annotations(a_lines))
    return "\n".join(out) + "\n"
