"""A wgmma's accumulators as the rows of one array (`BatchState.grouped`, gpusim/functional/state.py):
each register's own array is its row, so a write to a register holding one value lands in the row;
a group made again takes every register's value, bit for bit."""
import numpy as np

from gpusim.functional.state import BatchState

F32 = [np.dtype(np.float32)] * 4
SLOTS = (0, 1, 2, 3)


def test_a_whole_write_to_a_grouped_register_holding_one_value_lands_in_its_row():
    st = BatchState(64, F32)
    st.pool_key = "pooled"                           # a pooled state: whole writes go to the register's own array
    base = st.grouped(SLOTS)
    st.write(2, np.float32(1.5))                     # one value: the register holds a scalar
    st.write(2, np.arange(64, dtype=np.float32))     # every lane: into its own array, the row
    assert np.shares_memory(st.regs[2], base[2])     # (before: an array of its own, the group made again)
    assert np.array_equal(st.grouped(SLOTS)[2], np.arange(64, dtype=np.float32))


def test_a_group_made_again_keeps_each_registers_bits_negative_zero_and_swapped_rows_included():
    st = BatchState(64, F32)
    base = st.grouped(SLOTS)
    base[:] = np.arange(4, dtype=np.float32)[:, None]
    st.regs[0], st.regs[1] = st.regs[1], st.regs[0]  # two registers hold each other's rows
    st.regs[2], st.regs[3] = np.float32(0.0), np.float32(-0.0)
    got = st.grouped(SLOTS)
    assert np.array_equal(got[:, 0], [1, 0, 0, 0])
    assert list(np.signbit(got[2:, 0])) == [False, True]
    assert all(np.shares_memory(st.regs[r], got[k]) for k, r in enumerate(SLOTS))
