"""The generic address space: where each state space's window lies.

PTX generic addressing maps `.shared`, `.local` and `.const` into windows of one
64-bit generic space; everything outside the windows is `.global`. `cvta` converts
between a state-space address and a generic one by adding or subtracting the
window base. These bases are this simulator's choice (hardware's are not
architectural); a kernel that only uses `cvta` and the addresses it is given cannot
tell the difference.

Source: PTX ISA, "Generic Addressing" and the `cvta` instruction.
"""
from __future__ import annotations

WINDOW_BYTES = 1 << 32                 # each window spans 4 GiB of generic addresses

SHARED_WINDOW_BASE = 0x0000_1000_0000_0000
LOCAL_WINDOW_BASE = 0x0000_2000_0000_0000
CONST_WINDOW_BASE = 0x0000_3000_0000_0000
PARAM_WINDOW_BASE = 0x0000_4000_0000_0000
GLOBAL_BASE = 0x0000_7000_0000_0000    # first byte of the simulated device heap

# A `.shared::cluster` address (distributed shared memory): bits 0-23 the byte offset in a CTA's
# shared memory, bits 24.. the CTA's rank in its cluster plus one; 0 there means the executing CTA,
# so a `.shared::cta` address is also the `.shared::cluster` address of the same byte
# (`isa.semantics.cluster.mapa`; gpusim's encoding, as the windows are).
CLUSTER_RANK_SHIFT = 24
CTA_OFFSET_MASK = (1 << CLUSTER_RANK_SHIFT) - 1

WINDOWS: dict[str, int] = {
    "shared": SHARED_WINDOW_BASE,
    "local": LOCAL_WINDOW_BASE,
    "const": CONST_WINDOW_BASE,
    "param": PARAM_WINDOW_BASE,
    "global": 0,
}


def window_base(space: str) -> int:
    """Generic address of offset 0 in `space` (0 for global: generic == global there)."""
    return WINDOWS[space]
