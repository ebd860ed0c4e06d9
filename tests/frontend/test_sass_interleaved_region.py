"""ptxas schedules the SASS of PTX blocks that follow one another without a branch (split only by
labels) across the split: one PTX block's SASS comes in pieces between its neighbours' on one straight
line, and a visit of it issues every piece (gpusim/frontend/sass/mapping.py, `_region`)."""
from types import SimpleNamespace

from gpusim.frontend.sass.cfg import SassBlock, SassCFG
from gpusim.frontend.sass.mapping import _region


def _line(homes, branch_after=None):
    """SASS blocks of two instructions each on one straight line (block k -> k + 1), homed at
    `homes`; `branch_after`: a block that also branches to the end (two successors)."""
    n = len(homes)
    blocks = tuple(SassBlock(k, 2 * k, 2 * k + 2,
                             ((n - 1, k + 1) if k == branch_after else (k + 1,)) if k + 1 < n else (), None)
                   for k in range(n))
    cfg = SassCFG(blocks, tuple(k // 2 for k in range(2 * n)), (0,) + tuple(range(n - 1)), {},
                  (None,) * n, {}, ())
    ins = [SimpleNamespace(base="FADD", target=None) for _ in range(2 * n)]
    return cfg, ins


def test_a_ptx_blocks_sass_interleaved_with_its_neighbours_is_issued_in_every_piece():
    cfg, ins = _line([0, 1, 2, 1, 2, 3])           # PTX block 1's SASS in blocks 1 and 3, block 2's between
    assert _region(cfg, ins, [0, 1, 2, 1, 2, 3], 1) == [2, 3, 6, 7]
    assert _region(cfg, ins, [0, 1, 2, 1, 2, 3], 2) == [4, 5, 8, 9]


def test_a_piece_past_a_branch_is_not_taken_as_the_same_visit():
    cfg, ins = _line([0, 1, 2, 1, 3], branch_after=2)   # block 2 may jump past block 3
    assert _region(cfg, ins, [0, 1, 2, 1, 3], 1) == [2, 3]
