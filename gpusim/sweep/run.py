"""Running a sweep's points so that no finished point is lost.

`run_points` hands the points still missing to an executor (`executors`) and gives each
row, as it arrives in this process, to the point store beside the output (`store.py`) and
to the progress bar. It stops with one message saying how many points are kept and how
to go on, whatever stops it:
- Ctrl-C (KeyboardInterrupt) or SIGTERM (`errors.Terminated`, raised by the `gpusim`
  command's handler): the same exception class, with that message;
- a worker process that died (`errors.WorkerLost`);
- a store that cannot be written, a full disk (`errors.OutputError`).
With `resume`, the points the store already holds are not run again; without it, an
existing store is refused (its points would be silently dropped otherwise).
"""
from __future__ import annotations

from gpusim.errors import ConfigError, OutputError, Terminated, WorkerLost
from gpusim.sweep.store import PointStore, write_atomic_table


class _StoreFailed(Exception):
    """An OSError writing the store (the sink's, told apart from the points' own errors)."""


def run_points(tasks: list, keys: dict, execute, out=None, resume: bool = False, progress=None) -> list[dict]:
    """The rows of `tasks` (each with `_index`): those the store beside `out` holds (with
    `resume`) and those `execute(todo, sink)` computes. `keys`: task index -> point key."""
    store = PointStore(out) if out is not None else None
    saved: dict = {}
    if store is not None:
        if store.exists():
            if not resume:
                n = len(store.load())
                raise ConfigError(f"{store.path} holds {n} finished point{'s' if n != 1 else ''} of an interrupted "
                                  f"sweep: add --resume (resume=True) to keep them and run only the missing ones, "
                                  f"or delete it to start over")
            saved = store.load()
        store.open()
    rows, todo = [], []
    for t in tasks:
        hit = saved.get(keys.get(t.index))
        if hit is not None:
            rows.append(dict(hit, _index=t.index))
        else:
            todo.append(t)
    if progress is not None:
        progress.done = len(rows)
    total = len(tasks)

    def sink(row: dict) -> None:
        if store is not None:
            try:
                store.add(keys[row["_index"]], {k: v for k, v in row.items() if k != "_index"})
            except OSError as e:
                raise _StoreFailed(e) from None
        if progress is not None:
            progress.update()

    try:
        if todo:
            rows += execute(todo, sink)
    except KeyboardInterrupt as e:
        cls = Terminated if isinstance(e, Terminated) else KeyboardInterrupt
        raise cls(f"{'terminated' if cls is Terminated else 'interrupted'}: {kept(store, total)}") from None
    except WorkerLost as e:
        raise WorkerLost(f"{e}; {kept(store, total)}") from None
    except _StoreFailed as e:
        err = e.args[0]
        raise OutputError(f"cannot write {store.path}: {err.strerror or err}; {kept(store, total)}") from None
    except Exception as e:
        if store is not None and hasattr(e, "add_note"):
            e.add_note(kept(store, total))
        raise
    finally:
        if store is not None:
            store.close()
    return rows


def kept(store: PointStore | None, total: int) -> str:
    """How many points are kept where, and how to go on."""
    if store is None:
        return f"of the {total} points none is kept (give --out to keep finished points)"
    try:
        kept = len(PointStore(store.out).load())
    except Exception:                       # unreadable now: count what this process wrote
        kept = store.written
    return (f"{kept} of {total} points are kept in {store.path}; run the same command with --resume to compute "
            f"the other {total - kept}")


def finish(df, out, total: int) -> None:
    """Write the table to `out` atomically, then remove the point store (module doc)."""
    store = PointStore(out)
    try:
        write_atomic_table(df, out)
    except OSError as e:
        raise OutputError(f"cannot write {out}: {e.strerror or e}; all {total} points are kept in {store.path}: "
                          f"make room and run the same command with --resume to write the table") from None
    store.remove()
