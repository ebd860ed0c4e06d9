"""Which block, warp and execution a map shows: any one on request, and by default a
representative one (the most divergent of a sample of blocks, the worst execution of an
access), each named in its caption; copies of an unrolled access told apart."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import programs
from gpusim.report.pictures import maps_by_line, pictures
from gpusim.viz import bank_map, capture, divergence_map
from gpusim.viz.capture import Subject
from gpusim.viz.figures import figure_data

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "examples"))
import mandelbrot  # noqa: E402


@pytest.fixture(scope="module")
def mandel():
    c = mandelbrot.PROGRAM.case("default")
    return Subject(c.kernel, c.grid, c.block, tuple(c.args), "h100", 0, "mandelbrot")


def lanes(m) -> float:
    return m.active_lanes[m.path != divergence_map.PAD].mean()


def test_block_0_of_the_mandelbrot_set_is_converged_but_the_default_map_is_a_divergent_block(mandel):
    zero = divergence_map.divergence_map(capture(mandel, (0,)), block=0)
    assert lanes(zero) > 31                                       # the corner: its points escape together
    m = figure_data(mandel, ["divergence_map"])[1]["divergence_map"]
    assert m.block == 91 and m.why == "the most divergent of 8 sampled blocks"
    assert lanes(m) < 16                                          # 44.7% of the lanes active


def test_any_block_and_warp_on_request(mandel):
    m = figure_data(mandel, ["divergence_map"], block=37)[1]["divergence_map"]
    assert m.block == 37 and m.why == "chosen"


def test_the_strided_reductions_default_bank_map_is_its_worst_step():
    cap = capture("reduce_interleaved_strided", (0,))
    m = bank_map.bank_map(cap)
    worst = max(bank_map.wavefronts(a) for a in cap.select(m.line, "shared", m.instr))
    assert m.wavefronts == worst == 8                             # the 8-way steps, not the first (2-way) one
    first = bank_map.bank_map(cap, m.line, instr=m.instr, warp=0, occurrence=0)
    assert first.wavefronts == 2 and "execution 1 of" in bank_map.where_text(first)


def test_captions_name_block_warp_and_execution_and_tell_unrolled_copies_apart():
    c = programs.get("bank_conflict_demo").case({"blocks": 2, "stride": 8, "reps": 4})
    cap = capture(c, (1,))
    maps = maps_by_line(cap, 1)
    line = next(n for n, text in enumerate(open(c.kernel.py_func.__code__.co_filename), 1) if "acc += sh[" in text)
    captions = [m.caption for m in maps[line]]
    assert all("block 1" in t and "warp" in t and "execution" in t for t in captions)
    assert len(set(captions)) == len(captions)


def test_a_lines_maps_offer_each_distinct_execution():
    cap = capture("reduce_interleaved_strided", (0,))
    maps = maps_by_line(cap, 0)
    bank = [m for ms in maps.values() for m in ms if m.kind == "bank"]
    ways = {opt.label.rsplit(": ", 1)[1] for m in bank for opt in m.options}
    assert {"2 wavefronts", "4 wavefronts", "8 wavefronts"} <= ways      # every step of the tree, worst first
    assert all(m.options[0].svg == m.svg for m in bank)


def test_pictures_of_a_chosen_block_and_warp():
    c = programs.get("transpose_shared").case("default")
    s = Subject(c.kernel, c.grid, c.block, tuple(np.copy(a) for a in c.args), "h100", 0, "transpose_shared")
    pics = pictures(s, block=5, warp=3)
    assert "block 5" in pics.captions["bank_map"] and "warp 3" in pics.captions["bank_map"]
    assert all("block 5, warp 3" in m.caption for ms in pics.line_maps.values() for m in ms)
