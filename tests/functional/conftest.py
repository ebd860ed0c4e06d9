"""Fixtures of the functional core's tests."""
import pytest

from gpusim.functional.fastpath.segment_op import SegmentOp


@pytest.fixture
def again_results(monkeypatch) -> list:
    """What each `SegmentOp._again` call returned (True: the segment ran again with its kept table),
    appended as the test runs."""
    results = []
    again = SegmentOp._again

    def spy(self, x, last):
        ok = again(self, x, last)
        results.append(ok)
        return ok

    monkeypatch.setattr(SegmentOp, "_again", spy)
    return results
