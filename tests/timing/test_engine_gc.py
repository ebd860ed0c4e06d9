"""The timing engine's garbage-collector setting is scoped to the launch it times."""
import gc

import gpusim
import programs
from gpusim.timing.engine import FULL_COLLECTION_THRESHOLD, rare_full_collections


def test_full_collections_are_rare_inside_and_the_threshold_restored_after():
    before = gc.get_threshold()
    with rare_full_collections():
        assert gc.get_threshold()[2] >= FULL_COLLECTION_THRESHOLD
        assert gc.get_threshold()[:2] == before[:2]           # young collections as before
    assert gc.get_threshold() == before


def test_a_timed_launch_leaves_the_collector_as_it_found_it():
    before = gc.get_threshold()
    c = programs.get("vector_add").case("default")
    gpusim.launch(c.kernel, c.grid, c.block, c.args, timing=True)
    assert gc.get_threshold() == before
