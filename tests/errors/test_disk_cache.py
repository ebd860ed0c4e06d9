"""The PTX disk cache: a truncated, garbled or edited entry is detected (length and SHA-256
in its header) and rebuilt, never a UnicodeDecodeError or a silently wrong result;
concurrent writers never leave a partial entry."""
import multiprocessing
import threading

import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim import launch_plan
from gpusim.frontend import compile as fc
from gpusim.frontend import diskcache


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    d = tmp_path / "ptx"
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(d))
    monkeypatch.delenv("GPUSIM_DISK_CACHE", raising=False)
    fc.clear_memory_cache()
    fc.reset_cache_stats()
    yield d
    fc.clear_memory_cache()


def add_half(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = a[i] + np.float32(0.5)


def run_add_half() -> np.ndarray:
    a = np.arange(32, dtype=np.float32)
    gpusim.launch(add_half, 1, 32, (a,))
    return a


def entry(cache_dir):
    run_add_half()
    (path,) = [p for p in cache_dir.glob("*.ptx")]
    fc.clear_memory_cache()
    fc.reset_cache_stats()
    return path


def rebuilt(path) -> None:
    a = run_add_half()
    assert (a == np.arange(32, dtype=np.float32) + 0.5).all()          # the right result
    assert fc.cache_stats().compiles == 1                               # compiled again, not read
    assert diskcache.read_text_entry(path) is not None                 # and the entry is whole again


def test_truncated_entry_is_rebuilt(cache):
    path = entry(cache)
    path.write_bytes(path.read_bytes()[:300])
    rebuilt(path)


def test_binary_garbage_is_rebuilt_without_unicode_error(cache):
    path = entry(cache)
    path.write_bytes(bytes(range(256)) * 8)
    rebuilt(path)


def test_edited_entry_add_to_sub_is_detected(cache):
    path = entry(cache)
    raw = path.read_bytes()
    assert b"add.f32" in raw
    path.write_bytes(raw.replace(b"add.f32", b"sub.f32"))
    rebuilt(path)


def test_entry_of_an_older_format_without_header_is_rebuilt(cache):
    path = entry(cache)
    path.write_text(diskcache.read_text_entry(path))
    rebuilt(path)


def test_intact_entry_is_read_not_compiled(cache):
    entry(cache)
    run_add_half()
    assert (fc.cache_stats().disk_hits, fc.cache_stats().compiles) == (1, 0)


def _writer(path: str, payload: bytes, n: int, bad) -> None:
    from pathlib import Path
    for _ in range(n):
        diskcache.write_entry(Path(path), payload)
        got = diskcache.read_entry(Path(path))
        if got is not None and got not in (b"A" * 5000, b"B" * 7000):
            bad.value += 1


def test_concurrent_writers_in_processes_and_threads_leave_whole_entries(tmp_path):
    path = tmp_path / "entry.ptx"
    ctx = multiprocessing.get_context("fork")
    bad = ctx.Value("i", 0)
    procs = [ctx.Process(target=_writer, args=(str(path), p, 150, bad)) for p in (b"A" * 5000, b"B" * 7000)]
    for p in procs:
        p.start()
    threads = [threading.Thread(target=_writer, args=(str(path), b"A" * 5000, 150, bad)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(30)
    assert bad.value == 0 and diskcache.read_entry(path) in (b"A" * 5000, b"B" * 7000)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]      # no temporary files left


def test_garbled_sass_cache_entries_are_rebuilt(cache, monkeypatch):
    from gpusim.frontend.sass import tools
    a = np.arange(32, dtype=np.float32)
    gpusim.launch(add_half, 1, 32, (a,), timing=True)                  # fills the PTX and SASS caches
    sass = cache / "sass"
    entries = [p for p in sass.iterdir() if p.suffix in (".json", ".cubin", ".sass")]
    assert entries
    for p in entries:
        p.write_bytes(b"\xff\xfe garbage")
    monkeypatch.setattr(tools, "_MEMORY", {})
    monkeypatch.setattr(tools, "_TEXT", {})
    fc.clear_memory_cache()
    monkeypatch.setattr(launch_plan, "_DECODED", {})
    a = np.arange(32, dtype=np.float32)
    r = gpusim.launch(add_half, 1, 32, (a,), timing=True)
    assert (a == np.arange(32, dtype=np.float32) + 0.5).all() and r.metrics["gpu__time_duration.sum"] > 0
    assert all(diskcache.read_entry(p) is not None for p in entries)     # rewritten whole


def test_cold_and_warm_cache_give_the_same_metrics(cache):
    def metrics():
        fc.clear_memory_cache()
        r = gpusim.launch(add_half, 1, 32, (np.arange(32, dtype=np.float32),), timing=True)
        return {k: v for k, v in r.metrics.items() if isinstance(v, (int, float))}
    cold = metrics()
    assert fc.cache_stats().compiles == 1
    warm = metrics()
    assert fc.cache_stats().disk_hits == 1 and warm == cold
