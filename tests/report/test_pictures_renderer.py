"""The Renderer's worker processes and the PNG writer: the same bytes as drawing inline,
errors and cancellation reach the caller, and the PNG is lossless."""
from __future__ import annotations

import io
import time

import numpy as np
import pytest
from PIL import Image

from gpusim.report.pictures import Renderer, encode_png, pngs
from gpusim.viz import roofline


@pytest.fixture(scope="module")
def data():
    return {"roofline": roofline.roofline(gpu="h100")}          # the ceilings alone: no launch


def test_a_worker_draws_the_same_png_bytes_as_drawing_inline(data):
    with Renderer() as r:
        drawn = r.submit(data)["roofline"].result(timeout=60)
    assert drawn == pngs(data)["roofline"]


def test_a_figure_that_fails_raises_from_its_future_and_the_others_are_still_drawn(data):
    with Renderer() as r:
        bad = r.submit({"roofline": "not a roofline"})["roofline"]
        good = r.submit(data)["roofline"]
        with pytest.raises(AttributeError):
            bad.result(timeout=60)
        assert good.result(timeout=60)[:8] == b"\x89PNG\r\n\x1a\n"


def test_leaving_on_an_exception_stops_the_workers_at_once(data):
    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        with Renderer() as r:
            pending = [r.submit(data)["roofline"] for _ in range(20)]
            raise KeyboardInterrupt
    assert time.perf_counter() - t < 5.0                      # 20 figures take ~1 s of drawing: not waited for
    assert all(f.done() for f in pending)
    assert sum(f.exception() is not None for f in pending) > 10


@pytest.mark.parametrize("alpha", [255, 128])
def test_encode_png_is_lossless_rgb_when_opaque(alpha):
    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, (37, 53, 4), dtype=np.uint8)
    rgba[..., 3] = alpha
    im = Image.open(io.BytesIO(encode_png(rgba)))
    assert im.mode == ("RGB" if alpha == 255 else "RGBA")
    back = np.asarray(im.convert("RGBA"))
    assert (back == rgba).all()


class _Dies:
    """Figure data whose unpickling ends the worker process (a crash, as a segfault would)."""

    def __reduce__(self):
        import os
        return os._exit, (3,)


def test_a_worker_that_dies_fails_its_figure_instead_of_hanging(data):
    with pytest.raises(RuntimeError, match="died|stopped"):
        with Renderer() as r:
            r.submit({"roofline": _Dies()})["roofline"].result(timeout=60)
