"""The shared-memory banks: how many wavefronts (and how many of them bank conflicts) one
warp's shared load or store takes, from its lanes' byte offsets (`shared_wavefronts`), as
Nsight counts `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}` and
`l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}`. Used by the functional core's
load/store unit (`lsu.py`, the compiled fast path `fastpath/lsu_kernels.py` follows the same
rule), `ldmatrix` and `wmma` accounting and the timing's trace.

Banks: `sm.shared_banks` banks of `sm.shared_bank_width_bytes` (32 of 4 bytes on every NVIDIA
GPU since Maxwell): word w = offset // width lives in bank w % banks; a warp needs as many
wavefronts as the most distinct words mapped to one bank, lanes reading one word share it, an
access wider than a word spans consecutive words, and a wide access (LDS.64 / LDS.128 and
stores) is served in groups of lanes (`shared_wavefronts`; measured on an H200 by
`validate/wide_shared_probe.py`).
"""
from __future__ import annotations

import numpy as np

U64 = np.uint64
BANKS = 32                             # the default bank geometry: 32 banks ...
BANK_WIDTH = 4                         # ... of 4 bytes (sm.shared_banks, sm.shared_bank_width_bytes)


def shared_wavefronts(warps: np.ndarray, offsets: np.ndarray, nbytes: int, nwarps: int,
                      banks: int = BANKS, width: int = BANK_WIDTH, lanes: np.ndarray | None = None,
                      store: bool = False, free: bool = False):
    """Wavefronts per warp of one shared-memory access of `nbytes` per lane at byte
    `offsets` (see module docstring): `banks` banks of `width` bytes, both powers of two.
    With 8-byte banks two lanes reading the two halves of one 8-byte word share it
    (Kepler's 8-byte mode); with 64 banks a stride of 32 words is 16-way, not 32-way.

    A warp of lanes wider than a bank word that carries more than one wavefront of bytes
    (`nbytes` x 32 > banks x width: LDS.64 / LDS.128 and their stores on 32 x 4-B banks) is served in groups of lanes that
    carry one wavefront's bytes each (half-warps at 8 B, quarter-warps at 16 B; `lanes`, each
    element's lane id, tells the groups): a store takes each group's own count, summed; a load
    takes one wavefront for two neighbouring groups (within 256 B of lane data) that together
    need only one, else each group's own count. Measured on an H200
    (`python -m validate.wide_shared_probe`, data/measurements/wide_shared_h200.json): a
    broadcast LDS.128 takes 2 wavefronts, STS.128 4, STS.64 2, LDS.64 1; lanes l reading
    16-B element (l % 4) * 8 + l / 4 take 16 (4 words a bank in each quarter-warp), not
    the 4 of the warp's words a bank. Without `lanes` the whole warp is one group. With `free`,
    also the conflict-free wavefronts per warp (one a group that has lanes, one a merged pair;
    one a warp that has lanes for a narrow access), which Nsight's bank-conflict count subtracts
    (a broadcast LDS.128: 2 wavefronts, no conflict)."""
    group = lane_group(nbytes, banks, width)
    if lanes is None or group >= 32:                        # the whole warp one group
        wf = _most_words_per_bank(warps, offsets, nbytes, nwarps, banks, width)
        return (wf, (np.bincount(warps, minlength=nwarps) > 0).astype(np.int64)) if free else wf
    ngroups = 32 // group
    g = ((lanes & 31) // group).astype(np.int64)
    per_group = _most_words_per_bank(warps.astype(np.int64) * ngroups + g, offsets, nbytes,
                                     nwarps * ngroups, banks, width).reshape(nwarps, ngroups)
    active = per_group > 0
    if store:
        return (per_group.sum(axis=1), active.sum(axis=1)) if free else per_group.sum(axis=1)
    units = ngroups // 2                                    # two groups: 256 B of lane data
    together = _most_words_per_bank(warps.astype(np.int64) * units + g // 2, offsets, nbytes,
                                    nwarps * units, banks, width).reshape(nwarps, units)
    apart = per_group.reshape(nwarps, units, 2).sum(axis=2)
    wf = np.where(together <= 1, together, apart).sum(axis=1)
    if not free:
        return wf
    groups = active.reshape(nwarps, units, 2).sum(axis=2)
    return wf, np.where(together <= 1, together, groups).sum(axis=1)


def lane_group(nbytes: int, banks: int = BANKS, width: int = BANK_WIDTH) -> int:
    """Lanes served together in an access of `nbytes` a lane: those whose bytes fill one
    wavefront (banks x width) where a lane is wider than a bank word and the warp's bytes more
    than a wavefront (16 at 8 B, 8 at 16 B on 32 x 4-B banks), else the whole warp (32)."""
    if nbytes <= width or nbytes * 32 <= banks * width:
        return 32
    return (banks * width) // nbytes


def _most_words_per_bank(warps: np.ndarray, offsets: np.ndarray, nbytes: int, nwarps: int,
                         banks: int, width: int) -> np.ndarray:
    """Per warp (index in `warps`, 0..nwarps-1): the most distinct `width`-byte words of its
    lanes' accesses (`nbytes` each, consecutive words) that fall into one bank."""
    shift = U64(width.bit_length() - 1)
    words = (offsets >> shift).astype(np.int64)
    nwords = max(1, nbytes // width)
    if nwords > 1:
        words = (words[:, None] + np.arange(nwords)).ravel()
        warps = np.repeat(warps, nwords)
    bank = words & (banks - 1)
    wb = warps.astype(np.int64) * banks + bank
    pair = (wb.astype(U64) << U64(32)) | words.astype(U64)
    u = np.unique(pair)
    per_bank = np.bincount((u >> U64(32)).astype(np.int64), minlength=nwarps * banks)
    return per_bank.reshape(nwarps, banks).max(axis=1)
