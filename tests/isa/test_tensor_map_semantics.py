"""Tensor maps (isa.semantics.tensor_map): gpusim's 128-byte encoding, the driver's rules, and
which element of a tiled box comes from where. One property per test."""
import numpy as np
import pytest

from isa.semantics import tensor_map as T


def f16_map(**kw):
    base = dict(dtype=T.DTYPE_CODE["float16"], address=0x7000_0000_0000, dims=(96, 40), strides=(192,),
                box=(64, 8), element_strides=(1, 1), swizzle=T.SWIZZLE_CODE["128B"])
    base.update(kw)
    return T.TensorMapFields(**base)


def test_encode_decode_round_trip():
    f = f16_map(dims=(96, 40, 7), strides=(192, 7680), box=(64, 8, 3), element_strides=(1, 2, 3), oob_fill=1)
    raw = T.encode(f)
    assert len(raw) == 128 and T.decode(raw) == f


def test_bytes_that_are_not_a_map_are_refused():
    with pytest.raises(ValueError, match="not a tensor map"):
        T.decode(bytes(128))


def test_a_valid_map_has_no_problem():
    assert T.problems(f16_map()) is None


@pytest.mark.parametrize("change, words", [
    ({"address": 0x7000_0000_0008}, "not 16-byte aligned"),
    ({"box": (64, 257)}, "box size 257"),
    ({"strides": (200,)}, "stride 200 bytes"),
    ({"box": (4, 8), "swizzle": 0}, "inner dimension is 8 bytes"),
    ({"box": (64, 8), "swizzle": T.SWIZZLE_CODE["64B"]}, "wider than the 64B swizzle span"),
    ({"element_strides": (1, 9)}, "traversal stride 9"),
    ({"dtype": T.DTYPE_CODE["int32"], "oob_fill": 1, "box": (32, 8)}, "NaN out-of-bounds fill needs"),
])
def test_each_driver_rule_is_checked(change, words):
    assert words in T.problems(f16_map(**change))


def test_a_box_narrower_than_its_swizzle_span_is_valid_but_not_modelled():
    f = f16_map(box=(32, 8))                        # 64 bytes under a 128B swizzle: the driver accepts it
    assert T.problems(f) is None and "narrower than the swizzle span" in T.unmodelled(f)


def test_traversal_strides_skip_elements_of_the_outer_dimensions_only():
    f = f16_map(dims=(40, 10, 6), strides=(80, 800), box=(16, 8, 5), element_strides=(4, 2, 3), swizzle=0)
    assert T.box_shape(f) == (16, 4, 2) and T.box_bytes(f) == 16 * 4 * 2 * 2
    glob, ok, soff = T.box_elements(f, (8, 1, 0))
    # element (k0, k1, k2) = (1, 1, 1): coordinates (9, 3, 3), packed at index 1 + 16 * (1 + 4 * 1)
    i = 1 + 16 * (1 + 4 * 1)
    assert glob[i] == 9 * 2 + 3 * 80 + 3 * 800 and soff[i] == i * 2 and ok.all()


def test_out_of_bounds_elements_are_flagged_by_any_coordinate():
    glob, ok, _ = T.box_elements(f16_map(swizzle=0, box=(8, 8)), (-2, 38))
    k = np.arange(64)
    want = ((k % 8) >= 2) & ((k // 8) < 2)         # columns -2, -1 and rows 40.. are outside 96 x 40
    assert (ok == want).all()


def test_the_f16_nan_fill_is_the_pattern_the_h100_writes():
    """0x7FF7, not the canonical 0x7FFF: what an H100's TMA wrote for box oob_nan_f16
    (data/measurements/tma_h100.npz, 80 filled elements)."""
    assert T.fill_bits(f16_map(oob_fill=1)) == 0x7FF7 and T.fill_bits(f16_map()) == 0


# ---------------------------------------------------------------- the mbarrier's transaction count
def _phase(word: int) -> int:
    return word >> 63


def test_phase_waits_for_the_bytes_after_the_last_arrival():
    from isa.semantics.async_copy import mbarrier_update as U
    w, _ = U(0, "init", [1])
    w, _ = U(w, "arrive_expect_tx", [1024])          # arrivals done, 1024 bytes still to land
    assert _phase(w) == 0
    w, _ = U(w, "complete_tx", [1024])
    assert _phase(w) == 1 and U(w, "try_wait", [0])[1] == 1


def test_bytes_landing_before_the_expect_tx_count_negative():
    from isa.semantics.async_copy import mbarrier_update as U
    w, _ = U(0, "init", [1])
    w, _ = U(w, "complete_tx", [512])                # the copy completes before the producer's expect_tx
    assert _phase(w) == 0 and ((w >> 42) & ((1 << 21) - 1)) == (1 << 21) - 512
    w, _ = U(w, "arrive_expect_tx", [512])
    assert _phase(w) == 1 and (w & ((1 << 21) - 1)) == 1      # completed, pending re-armed to 1


@pytest.mark.parametrize("swizzle, width", [("32B", 32), ("64B", 64), ("128B", 128)])
def test_a_swizzled_tma_box_is_what_a_wgmma_descriptor_reads(swizzle, width):
    """A 64-row box of `width`-byte rows loaded with a swizzle, read through a K-major wgmma
    descriptor of the same swizzle (8-row atoms 8 * width bytes apart), gives element (m, k)."""
    from isa.semantics import mma_layout as L
    from isa.semantics import wgmma as W
    kh = width // 2                                  # halves per row
    f = f16_map(dims=(kh, 64), strides=(width,), box=(kh, 64), swizzle=T.SWIZZLE_CODE[swizzle])
    base = 2048                                      # a 1024-byte aligned shared address
    glob, ok, soff = T.box_elements(f, (0, 0))
    placed = L.swizzle_addr(base + soff, swizzle)    # where the TMA puts element i (glob // 2 = m * kh + k)
    where = dict(zip((glob // 2).tolist(), placed.tolist()))
    code = {"128B": 1, "64B": 2, "32B": 3}[swizzle]
    for k0 in range(0, kh, 16):                      # the K loop: the start moves 32 bytes inside the atom
        desc = ((base + 2 * k0) >> 4) | ((8 * width) >> 4) << 32 | code << 62
        addr = W.operand_addresses(desc, 64, 16, 16, "k")
        want = np.array([[where[m * kh + k0 + k] for k in range(16)] for m in range(64)])
        assert (addr == want).all()


@pytest.mark.parametrize("c0, refused", [(0, False), (8, False), (-8, False), (4, True), (-2, True)])
def test_a_box_must_start_16_bytes_aligned(c0, refused):
    assert (T.start_problem(f16_map(), (c0, 3)) is not None) == refused


@pytest.mark.parametrize("fields, coords", [
    ({}, (16, 3)),
    ({"dims": (96, 40, 7), "strides": (192, 7680), "box": (64, 8, 3), "element_strides": (1, 2, 3)}, (8, 1, 0)),
    ({"dtype": T.DTYPE_CODE["uint8"], "dims": (256, 64), "strides": (256,), "box": (128, 16)}, (32, 48)),
])
def test_a_whole_box_in_16_byte_pieces_moves_the_bytes_of_its_elements(fields, coords):
    f = f16_map(**fields)
    glob, ok, boff = T.box_elements(f, coords)
    assert ok.all()
    pieces = T.box_chunks(f, coords)
    assert pieces is not None
    g16, b16 = pieces
    esz = f.elem_bytes
    g_bytes = (g16[:, None] + np.arange(16)).ravel()
    b_bytes = (b16[:, None] + np.arange(16)).ravel()
    assert np.array_equal(g_bytes, (glob[:, None] + np.arange(esz)).ravel())
    assert np.array_equal(b_bytes, (boff[:, None] + np.arange(esz)).ravel())


def test_a_box_reaching_past_the_tensor_is_not_moved_in_pieces():
    f = f16_map()                         # dims (96, 40), box (64, 8)
    assert T.box_chunks(f, (40, 0)) is None          # columns 40..103 of 96
    assert T.box_chunks(f, (0, 33)) is None          # rows 33..40 of 40
    assert T.box_chunks(f, (0, -1)) is None
    assert T.box_chunks(f, (32, 32)) is not None
