"""`isa.semantics.wmma.mma` over several warps at once (a leading axis, as the functional core's
`WmmaMmaOp` runs every active warp of a step): each warp's D registers are the bits the one-warp
call gives, for every shape and type, on random register bits (NaNs, infinities, subnormals and
copies that disagree included)."""
import numpy as np
import pytest

from isa.semantics import wmma as W

RNG = np.random.default_rng(26)
FORMS = [W.WmmaMmaForm(shape, t, t, c, c) for shape in W.SHAPES for t in W.INPUTS.get(shape, W._INPUTS_K16)
         for c in (("s32",) if t in ("s8", "u8") else ("f32", "f16") if t == "f16" else ("f32",))]


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"{f.shape}.{f.atype}.{f.ctype}")
def test_several_warps_at_once_give_each_warp_s_own_bits(form):
    nd, na, nb, nc = form.nregs()
    regs = [RNG.integers(0, 1 << 32, (5, 32, n), dtype=np.uint64).astype(np.uint32) for n in (na, nb, nc)]
    together = W.mma(form, *regs)
    assert together.shape == (5, 32, nd)
    for w in range(5):
        assert np.array_equal(together[w], W.mma(form, regs[0][w], regs[1][w], regs[2][w]))
