"""Blocks a replay adds to a recording (another SM count samples other blocks) are saved
beside it as a part file holding only those blocks, and a later process's cache loads them:
it replays that SM count without executing any block."""
import programs
from gpusim.specs import resolve
from gpusim.sweep.replay import timed_launch
from gpusim.sweep.streams import StreamCache


def _point(cache, sets):
    c = programs.get("transpose_shared").case("default")
    return timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100", sets), c.shared_bytes, cache=cache)


def test_added_blocks_go_to_a_part_file_that_a_fresh_cache_loads(tmp_path, monkeypatch):
    _, how = _point(StreamCache(tmp_path), [])
    assert how == "recorded"
    main = list(tmp_path.glob("*.pkl"))
    assert len(main) == 1
    _, how = _point(StreamCache(tmp_path), ["sm_count=66"])       # 192 blocks, sampled: 66 SMs time other blocks
    parts = sorted(tmp_path.glob("*.part-*.pkl"))
    assert how == "replayed" and len(parts) == 1
    assert parts[0].stat().st_size < main[0].stat().st_size          # only the added blocks
    from gpusim.timing import functional_streams
    ran = []
    real = functional_streams.TraceSource._run_chunk
    monkeypatch.setattr(functional_streams.TraceSource, "_run_chunk", lambda self, b, n: (ran.append(b), real(self, b, n)))
    fresh = StreamCache(tmp_path)
    _, how = _point(fresh, ["sm_count=66"])
    assert (how, ran, fresh.loads, fresh.saves) == ("replayed", [], 1, 0)
