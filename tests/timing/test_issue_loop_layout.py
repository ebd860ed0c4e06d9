"""The compiled issue loop's packed arrays (gpusim/timing/issue_loop.py): `LAYOUT` states each
array's columns in order, and the code agrees with it: the IntEnums, the short names the loop
indexes with, the width constants and the arrays sm.py, static.py and fetch.py allocate. One
property per test."""
import re

import numpy as np
import pytest
from numba import config, njit

from gpusim import specs
from gpusim.frontend.sass.listing import SassInstr
from gpusim.timing import issue_loop as L
from gpusim.timing.engine import TimingStats
from gpusim.timing.sm import SM
from gpusim.timing.static import PIPE_NAMES, IssueProgram, sass_classifier

ENUMS = {"TI": L.TIcol, "WF": L.WFcol, "WI": L.WIcol, "SPF": L.SPFcol, "SPI": L.SPIcol, "F": L.Fcol, "I": L.Icol,
         "C": L.Ccol}
PREFIX = {"TI": "T_", "WF": "W_", "WI": "W_", "SPF": "S_", "SPI": "S_", "F": "F_", "I": "I_", "C": "C_"}
WIDTH_CONSTANTS = {"TI": "T_COLS", "WF": "WF_COLS", "WI": "WI_COLS", "I": "I_SIZE"}
H100 = specs.get("h100")


def columns(array):
    """(name, first column, width) of each entry of LAYOUT[array], in order; a width fixed at
    allocation stays a string."""
    out, at = [], 0
    for entry in L.LAYOUT[array]:
        name, width = (entry, 1) if isinstance(entry, str) else entry
        out.append((name, at, width))
        at = at + width if isinstance(width, int) else None
    return out


def fixed_width(array) -> int:
    """The columns before a block sized at allocation (all of them if there is none)."""
    return sum(w for _, _, w in columns(array) if isinstance(w, int))


@pytest.mark.parametrize("array", sorted(L.LAYOUT))
def test_each_enum_member_sits_at_its_place_in_the_table(array):
    assert {m.name: int(m) for m in ENUMS[array]} == {name: at for name, at, _ in columns(array)}


@pytest.mark.parametrize("name", sorted(n for n in vars(L) if re.fullmatch(r"[TWSFIC]_[A-Z0-9]+", n)
                                        and n not in ("T_COLS", "I_SIZE")))
def test_each_short_column_name_equals_its_place_in_the_table(name):
    prefix, col = name[:2], name[2:]
    places = [at for array in L.LAYOUT if PREFIX[array] == prefix for c, at, _ in columns(array) if c == col]
    assert places == [getattr(L, name)]                 # in exactly one of the arrays it may index


@pytest.mark.parametrize("array", sorted(L.LAYOUT))
def test_a_block_sized_at_allocation_is_the_last_of_its_array(array):
    sized = [i for i, (_, _, w) in enumerate(columns(array)) if not isinstance(w, int)]
    assert sized in ([], [len(L.LAYOUT[array]) - 1])


@pytest.mark.parametrize("array", sorted(L.LAYOUT))
def test_no_two_columns_of_an_array_overlap(array):
    width = {name: w for name, _, w in columns(array)}
    members = sorted(ENUMS[array], key=int)
    for a, b in zip(members, members[1:]):
        assert a + width[a.name] <= b, (a, b)


@pytest.mark.parametrize("array", sorted(WIDTH_CONSTANTS))
def test_the_width_constant_equals_the_table_total(array):
    assert getattr(L, WIDTH_CONSTANTS[array]) == fixed_width(array)


def _by_name(WF, WI, F, k):
    return WF[k, L.W_READY] + WF[k, L.WFcol.CAND] + WI[k, L.W_GN + 1] + F[L.F_INTERVAL + WI[k, L.W_SP]]


def _by_int(WF, WI, F, k):
    return WF[k, 352] + WF[k, 354] + WI[k, 364] + F[9 + WI[k, 358]]


@pytest.mark.skipif(config.DISABLE_JIT, reason="NUMBA_DISABLE_JIT: nothing is compiled")
def test_numba_folds_a_column_name_to_its_constant():
    # the loop indexes with IntEnum members: compiled (nopython), the machine code is the one the
    # plain ints give, but for the function's own name
    args = (np.zeros((2, L.WF_COLS)), np.zeros((2, L.WI_COLS), np.int64), np.zeros(20), 1)
    code = []
    for fn in (_by_name, _by_int):
        jitted = njit(fn)
        jitted(*args)
        asm = jitted.inspect_asm(jitted.signatures[0])
        code.append([re.sub(r"_ZN\S*|_by_name|_by_int|\.size.*", "", line) for line in asm.splitlines()
                     if not line.lstrip().startswith((".file", ".loc", "#"))])
    assert code[0] == code[1] and len(code[0]) > 50


@pytest.fixture(scope="module")
def sm():
    """One SM on a synthetic kernel whose instructions bring two issue intervals of their own."""
    texts = ["FFMA R16, R4, R6, R16", "HMMA.16816.F32 R16, R4, R6, R16", "DMUL R4, R2, R6", "EXIT"]
    classify = sass_classifier(H100)
    statics = tuple(classify(i, SassInstr(offset=16 * i, opcode=t.partition(" ")[0], text=t, source_line=None,
                                          operands=t.partition(" ")[2]), None) for i, t in enumerate(texts))
    program = IssueProgram((statics,), {0: 0}, {}, np.zeros(len(texts), dtype=np.int64), len(texts))
    return SM(0, H100, program, None, TimingStats(len(texts)), lambda sm, block, t: None)


def allocated(array, sm) -> int:
    """The width LAYOUT gives `array` on this SM: its fixed columns plus the block sized at allocation."""
    extent = {"pipes": len(PIPE_NAMES), "intervals": len(sm.table.intervals), "warps": H100.sm.max_warps_per_sm}
    last = columns(array)[-1][2]
    return fixed_width(array) + (0 if isinstance(last, int) else sum(extent[w.strip()] for w in last.split("+")))


@pytest.mark.parametrize("array", ["WF", "WI", "SPF", "SPI", "F", "I"])
def test_the_sm_allocates_each_array_with_the_table_width(sm, array):
    assert len(sm.table.intervals) == 2                 # HMMA's and DMUL's: the F block's second part is used
    assert getattr(sm, array).shape[-1] == allocated(array, sm)


def test_the_issue_table_has_the_table_width(sm):
    assert sm.table.ti.shape == (4, fixed_width("TI"))


@pytest.mark.parametrize("cache", ["icache", "ccache"])
def test_a_read_only_cache_array_holds_the_table_scalars_then_absent_lines(sm, cache):
    a = getattr(sm.front, cache).a
    n = fixed_width("C")
    assert not np.isnan(a[:n]).any() and np.isnan(a[n:]).all() and len(a) > n
