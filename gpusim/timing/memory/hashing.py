"""Address interleaving: which L2 slice, L1 set, HBM channel or bank a block belongs to.

What is modelled: NVIDIA hashes physical addresses over L2 slices and DRAM channels so
that no power-of-two stride lands on one unit (the exact functions are undocumented).
Here, with n units and a block index i (a 128-B line for L2 slices and L1 sets, a DRAM
row for HBM channels):

    q = i // n,  unit = (i % n + fold(q)) % n,  fold(q) = q ^ q>>3 ^ q>>7 ^ q>>12 ^ q>>18 ^ q>>25

Each aligned group of n consecutive blocks is a rotation of the n units (a contiguous
range spreads exactly evenly), and the rotation amount is an XOR-fold of the higher
address bits, so strides of 2^k blocks (which keep i % n on a few values) are scattered
by q. The L2 then takes q modulo the sets of a slice, so a contiguous range of
units * sets * ways lines fills it exactly.

Used for: L2 slices (128-B lines; the slice also fixes a line's home partition, l2.py),
L1 sets (l1.py), HBM channels (1-KiB rows) and the banks within a channel (hbm.py).

Not modelled: the real hash (reverse-engineered ones differ per chip and memory size).
"""
from __future__ import annotations


def unit_of(i: int, n: int) -> int:
    """The unit (0..n-1) that block index `i` maps to."""
    q = i // n
    return (i - q * n + (q ^ (q >> 3) ^ (q >> 7) ^ (q >> 12) ^ (q >> 18) ^ (q >> 25))) % n


# Speed: a line's units are looked up many times (L1 set, L2 slice and set) and unit_of on
# the 40-bit indices of real addresses costs more than a dict lookup, so hot callers keep
# memos i -> unit_of(i, n); their contents never change a result, only how fast it comes.
MEMO_ENTRIES = 1 << 16


def memo(n: int) -> dict:
    """The memo shared by every caller hashing over n units (see `remember`)."""
    return _MEMOS.setdefault(n, {})


def remember(m: dict, i: int, n: int) -> int:
    """unit_of(i, n), stored in memo m (emptied first when it holds `MEMO_ENTRIES`)."""
    if len(m) >= MEMO_ENTRIES:
        m.clear()
    u = m[i] = unit_of(i, n)
    return u


_MEMOS: dict[int, dict] = {}
