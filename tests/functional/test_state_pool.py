"""A kernel's small batch states are pooled (gpusim/functional/state.py): a state given back is
taken again, reset, with each register's own array kept, and a whole-span write lands in that
array (the same object every launch, what a compiled segment's kept run checks); large batches are
not pooled."""
import numpy as np

from gpusim.functional.state import BatchState, StatePool

DTYPES = [np.dtype(np.uint32), np.dtype(np.float32)]


def test_a_state_given_back_is_taken_again_reset_with_its_arrays():
    pool = StatePool()
    st = pool.take(64, DTYPES, "blocks 0..1")
    st.write(0, np.arange(64, dtype=np.uint32))
    own = st.regs[0]
    assert own is st.spare[0]
    pool.give(st)
    again = pool.take(64, DTYPES, "blocks 0..1")
    assert again is st
    assert again.regs[0] == 0 and type(again.regs[0]) is np.uint32          # reset: every register its zero
    again.write(0, np.full(64, 7, np.uint32))
    assert again.regs[0] is own and (own == 7).all()                         # the same array, the new values
    assert pool.take(64, DTYPES, "blocks 0..1") is not st                    # taken: not handed out twice


def test_a_state_of_other_blocks_or_a_large_batch_is_not_shared():
    pool = StatePool()
    st = pool.take(64, DTYPES, "blocks 0..1")
    pool.give(st)
    assert pool.take(64, DTYPES, "blocks 2..3") is not st
    big = pool.take(StatePool.MAX_LANES + 32, DTYPES, "blocks 0..1")
    assert big.pool_key is None
    big.write(1, np.ones(StatePool.MAX_LANES + 32, np.float32))
    assert big.regs[1] is not big.spare[1]                                   # not pooled: the value itself
    pool.give(big)
    assert pool.take(StatePool.MAX_LANES + 32, DTYPES, "blocks 0..1") is not big


def test_a_partial_write_to_a_uniform_register_fills_its_own_array_first():
    st = BatchState(64, DTYPES)
    st.regs[1] = np.float32(2.5)
    st.span(0, 64, np.arange(64) < 32)
    st.write(1, np.zeros(64, np.float32))
    assert st.regs[1] is st.spare[1]
    assert (st.regs[1][:32] == 0).all() and (st.regs[1][32:] == 2.5).all()
