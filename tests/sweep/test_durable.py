"""Durable sweeps (issue 25): every finished point is kept as it finishes, a stopped sweep says
so in one line, and `--resume` completes it to the table an uninterrupted run writes.

The columns that say how a row was obtained, not what it predicts (`wall_s`, the point's wall
time; `functional_run`, recorded or replayed, which depends on what the cache held) are left
out of the comparisons."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import gpusim.sweep.executors as executors
from gpusim.cli import main
from gpusim.sweep.store import PointStore, store_path

HOW = ["wall_s", "functional_run"]
ARGS = ["sweep", "vector_add", "--size", "n=1024", "--vary", "hbm.bandwidth_GBps=1000:4000:4",
        "--vary", "sm.count=66,132", "--no-progress", "--workers", "1"]
POINTS = 8


def same(a: Path, b: Path) -> None:
    pd.testing.assert_frame_equal(pd.read_csv(a).drop(columns=HOW), pd.read_csv(b).drop(columns=HOW))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The table of an uninterrupted run."""
    out = tmp_path_factory.mktemp("ref") / "ref.csv"
    assert main(ARGS + ["--out", str(out)]) == 0
    assert not store_path(out).exists()                     # removed once the table is written
    return out


def stop_at(monkeypatch, k: int, exc: BaseException):
    """run_task raises `exc` when asked for its k-th point (0-based) of this process."""
    real, calls = executors.run_task, [0]

    def run(task):
        if calls[0] == k:
            raise exc
        calls[0] += 1
        return real(task)
    monkeypatch.setattr(executors, "run_task", run)


@pytest.mark.slow
@pytest.mark.parametrize("k", range(POINTS))
def test_interrupted_at_any_point_resumes_to_the_uninterrupted_table(k, reference, tmp_path, monkeypatch, capsys):
    out = tmp_path / "s.csv"
    stop_at(monkeypatch, k, KeyboardInterrupt())
    assert main(ARGS + ["--out", str(out)]) == 130
    err = capsys.readouterr().err.strip()
    assert err == (f"interrupted: {k} of {POINTS} points are kept in {store_path(out)}; run the same command "
                   f"with --resume to compute the other {POINTS - k}")
    assert len(PointStore(out).load()) == k and not out.exists()
    monkeypatch.undo()
    assert main(ARGS + ["--out", str(out), "--resume"]) == 0
    same(out, reference)
    assert not store_path(out).exists()


def test_a_line_cut_short_by_a_kill_is_run_again(reference, tmp_path, monkeypatch, capsys):
    """SIGKILL while a point's line is being written leaves part of it: every cut of the last
    line reads as the points before it, and the resumed table is the uninterrupted one."""
    out = tmp_path / "s.csv"
    stop_at(monkeypatch, 3, KeyboardInterrupt())
    main(ARGS + ["--out", str(out)])
    monkeypatch.undo()
    path = store_path(out)
    whole = path.read_bytes()
    last = whole.rstrip(b"\n").rfind(b"\n") + 1          # where the third point's line starts
    for cut in (last + 1, last + 20, len(whole) - 1):
        path.write_bytes(whole[:cut])
        assert len(PointStore(out).load()) == 2
    assert main(ARGS + ["--out", str(out), "--resume"]) == 0
    same(out, reference)


def test_a_corrupt_line_is_run_again(reference, tmp_path, monkeypatch):
    out = tmp_path / "s.csv"
    stop_at(monkeypatch, 4, KeyboardInterrupt())
    main(ARGS + ["--out", str(out)])
    monkeypatch.undo()
    path = store_path(out)
    data = bytearray(path.read_bytes())
    data[data.index(b"gpu__time_duration.sum") + 30] ^= 1      # one flipped bit in a predicted time
    path.write_bytes(bytes(data))
    store = PointStore(out)
    assert len(store.load()) == 3 and store.bad_lines == 1
    assert main(ARGS + ["--out", str(out), "--resume"]) == 0
    same(out, reference)


def test_a_store_left_behind_is_not_dropped_without_resume(tmp_path, monkeypatch, capsys):
    out = tmp_path / "s.csv"
    stop_at(monkeypatch, 2, KeyboardInterrupt())
    main(ARGS + ["--out", str(out)])
    monkeypatch.undo()
    capsys.readouterr()
    calls = []
    monkeypatch.setattr(executors, "run_task", lambda t: calls.append(t))
    assert main(ARGS + ["--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert "holds 2 finished points of an interrupted sweep: add --resume" in err and not calls


def test_a_store_written_by_other_sources_is_refused(tmp_path, capsys):
    out = tmp_path / "s.csv"
    store_path(out).write_text("gpusim-sweep-points 1 code=0123\n")
    assert main(ARGS + ["--out", str(out), "--resume"]) == 4
    assert "computed by other gpusim sources" in capsys.readouterr().err


def test_out_into_a_missing_folder_fails_before_any_work(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(executors, "run_task", lambda t: calls.append(t))
    out = tmp_path / "no" / "such" / "s.csv"
    assert main(ARGS + ["--out", str(out)]) == 11
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --out {out}: the folder {out.parent} does not exist"] and not calls


def test_out_naming_a_directory_fails_before_any_work(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(executors, "run_task", lambda t: calls.append(t))
    (tmp_path / "d.csv").mkdir()
    assert main(ARGS + ["--out", str(tmp_path / "d.csv")]) == 11
    assert "is a directory" in capsys.readouterr().err and not calls


def test_resume_without_out_is_a_usage_error(capsys):
    assert main(ARGS + ["--resume"]) == 2
    assert "--resume continues the sweep that writes --out" in capsys.readouterr().err


@pytest.mark.slow
def test_a_full_disk_keeps_every_finished_point_and_says_so_in_one_line(reference, tmp_path, monkeypatch, capsys):
    out = tmp_path / "s.csv"
    real = PointStore.add

    def add(self, key, row):
        if self.written == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(self, key, row)
    monkeypatch.setattr(PointStore, "add", add)
    assert main(ARGS + ["--out", str(out)]) == 11
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: cannot write {store_path(out)}: No space left on device; 3 of {POINTS} points are kept "
                   f"in {store_path(out)}; run the same command with --resume to compute the other {POINTS - 3}"]
    monkeypatch.undo()
    assert main(ARGS + ["--out", str(out), "--resume"]) == 0
    same(out, reference)


@pytest.mark.slow
def test_a_full_disk_when_writing_the_table_keeps_the_old_table_and_every_point(reference, tmp_path, monkeypatch,
                                                                                  capsys):
    out = tmp_path / "s.csv"
    out.write_text("old,table\n1,2\n")

    def full(self, path, **kw):
        Path(path).write_text("program,si")                 # part of the table, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    assert main(ARGS + ["--out", str(out)]) == 11
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"all {POINTS} points are kept in {store_path(out)}" in err[0]
    assert out.read_text() == "old,table\n1,2\n"                 # untouched: the new table goes to a temporary file
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    monkeypatch.undo()
    calls = []
    real = executors.run_task
    monkeypatch.setattr(executors, "run_task", lambda t: calls.append(t) or real(t))
    assert main(ARGS + ["--out", str(out), "--resume"]) == 0
    assert not calls                                            # every point came from the store
    same(out, reference)


@pytest.mark.slow
def test_a_dead_worker_stops_the_sweep_with_one_line_and_keeps_the_points(reference, tmp_path, monkeypatch, capsys):
    out = tmp_path / "s.csv"
    real = executors.run_task

    def run(task):
        if task.index == 5:
            os._exit(1)                                          # the worker dies (as if killed)
        return real(task)
    monkeypatch.setattr(executors, "run_task", run)              # forked workers inherit it
    assert main(ARGS[:-1] + ["2", "--out", str(out)]) == 12
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: a sweep worker process died (killed, or out of memory)")
    kept = len(PointStore(out).load())
    assert f"{kept} of {POINTS} points are kept" in err[0]
    monkeypatch.undo()
    assert main(ARGS + ["--out", str(out), "--resume"]) == 0
    same(out, reference)


def _default_sigint() -> None:
    """In the sweep's process before it starts: SIGINT as a terminal's foreground process has it.
    A shell that starts pytest in the background (`cmd &`) ignores SIGINT for it, the ignore is
    inherited, and Python then installs no KeyboardInterrupt handler: Ctrl-C never reaches it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_until(out: Path, points: int, sig: int, env: dict) -> subprocess.CompletedProcess:
    """The sweep in a process of its own, sent `sig` once its store holds `points` points."""
    cmd = [sys.executable, "-m", "gpusim.cli", *ARGS[:-1], "2", "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True, preexec_fn=_default_sigint)
    path, deadline = store_path(out), time.monotonic() + 240
    while time.monotonic() < deadline and p.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") - 1 >= points:
            break
        time.sleep(0.05)
    p.send_signal(sig)
    o, e = p.communicate(timeout=120)
    try:
        os.killpg(p.pid, signal.SIGKILL)                       # nothing of it may be left running
    except ProcessLookupError:
        pass
    return subprocess.CompletedProcess(cmd, p.returncode, o, e)


@pytest.mark.slow
@pytest.mark.parametrize("sig, points, code", [(signal.SIGINT, 2, 130), (signal.SIGTERM, 4, 143),
                                               (signal.SIGKILL, 3, -signal.SIGKILL)])
def test_a_sweep_killed_by_a_signal_resumes_to_the_uninterrupted_table(sig, points, code, reference, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = tmp_path / "s.csv"
    r = _run_until(out, points, sig, env)
    kept = len(PointStore(out).load())
    if r.returncode == 0:                                       # it finished before the signal arrived
        pytest.fail(f"the sweep ended before {sig!r}: {r.stderr}")
    assert r.returncode == code and kept >= points
    if sig != signal.SIGKILL:
        word = "interrupted" if sig == signal.SIGINT else "terminated"
        assert r.stderr.strip().splitlines()[-1] == (
            f"{word}: {kept} of {POINTS} points are kept in {store_path(out)}; run the same command with --resume "
            f"to compute the other {POINTS - kept}")
    resumed = subprocess.run([sys.executable, "-m", "gpusim.cli", *ARGS, "--out", str(out), "--resume"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    same(out, reference)
