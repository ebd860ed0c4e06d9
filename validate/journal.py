"""The journal of a `validate compare` run: every kernel's prediction appended to a JSON-lines
file the moment it finishes, so that a compare stopped part way (a device call's time limit,
Ctrl-C, a killed machine) loses nothing it finished, and `--resume` predicts only the rest.

The first line says what the rows are predictions of: the measurement file (its SHA-256), the
preset, the clock choice (`--clock`), and the model (a SHA-256 over the source of the model and of the kernels, and of the
preset's spec file when it is one). A journal written by another model, preset or measurement file is
never reused: `--resume` refuses it in one line naming the difference. Rows without a
prediction (an error, a time limit) are predicted again on resume: the limit may have been
raised. Each line is written with one `write` and flushed to disk, so a kill leaves at most one
torn last line, which resume ignores.

Where: `<--out>.partial.jsonl` beside the result; without `--out`, under the frontend's cache
directory (`$GPUSIM_CACHE_DIR/compare/`). After the result file is written the journal is removed.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from gpusim.errors import GpusimError
from gpusim.frontend.diskcache import cache_dir

ROOT = Path(__file__).resolve().parents[1]
VERSION = 1
SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".h")


class JournalMismatch(GpusimError):
    """--resume found a journal of other predictions (another model, preset or data file)."""


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def model_fingerprint(preset: str) -> str:
    """SHA-256 over the source of the model and of the kernels it predicts (isa/, gpusim/,
    programs/, validate/: *.py, *.cu, *.cuh, *.h, sorted by path; not the measurement data) and,
    when the preset is a spec file, over that file: two runs with the same fingerprint predict
    the same numbers (with the same compiler toolchain)."""
    h = hashlib.sha256()
    for pkg in ("isa", "gpusim", "programs", "validate"):
        for p in sorted(q for q in (ROOT / pkg).rglob("*") if q.suffix in SOURCE_SUFFIXES and "data" not in q.parts):
            h.update(str(p.relative_to(ROOT)).encode())
            h.update(p.read_bytes())
    if preset and Path(preset).is_file():
        h.update(Path(preset).read_bytes())
    return h.hexdigest()


def header(data_path: Path, preset: str, clock: str = "preset") -> dict:
    return {"journal": VERSION, "data": str(data_path), "data_sha256": _sha256_file(data_path), "preset": preset,
            "clock": clock, "model_sha256": model_fingerprint(preset)}


def default_path(data_path: Path, preset: str, out: Path | None) -> Path:
    if out is not None:
        return Path(str(out) + ".partial.jsonl")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{Path(data_path).stem}-{Path(preset).name}")
    return cache_dir() / "compare" / f"{safe}.jsonl"


class Journal:
    """An append-only file of finished rows (dicts), headed by what they predict."""

    def __init__(self, path: Path, head: dict):
        self.path, self.head = Path(path), head

    def read(self) -> tuple[dict | None, dict[str, dict]]:
        """(the file's header, {kernel: row}) of an existing journal; (None, {}) if there is none."""
        if not self.path.is_file():
            return None, {}
        rows: dict[str, dict] = {}
        head = None
        for line in self.path.read_text().splitlines():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:          # a torn last line from a kill: the kernel runs again
                continue
            if head is None:
                head = obj
            elif isinstance(obj, dict) and "name" in obj:
                rows[obj["name"]] = obj
        return head, rows

    def mismatch(self, head: dict | None) -> str:
        """Why an existing journal's header does not describe this run's predictions ('' if it does)."""
        if head is None:
            return ""
        for key, what in (("journal", "journal format"), ("data_sha256", "measurement file"),
                          ("preset", "preset"), ("clock", "clock"), ("model_sha256", "model source")):
            if head.get(key) != self.head.get(key):
                return f"its {what} differs ({key} {str(head.get(key))[:16]} here {str(self.head.get(key))[:16]})"
        return ""

    def resume(self) -> dict[str, dict]:
        """The rows with a prediction that an earlier run of the same predictions finished; the
        journal then continues after them. Refuses (JournalMismatch) a journal of other predictions."""
        head, rows = self.read()
        why = self.mismatch(head)
        if why:
            raise JournalMismatch(f"validate compare --resume: the journal {self.path} holds other predictions: "
                                  f"{why}; delete it or run without --resume")
        kept = {n: r for n, r in rows.items() if r.get("predicted_ns") is not None or r.get("predicted")}
        self._rewrite(kept.values())
        return kept

    def start(self) -> int:
        """Begin a fresh journal; returns how many finished rows an earlier journal of the same
        predictions held (they are replaced: `--resume` would have reused them)."""
        head, rows = self.read()
        earlier = len(rows) if head is not None and not self.mismatch(head) else 0
        self._rewrite(())
        return earlier

    def _rewrite(self, rows) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps(self.head) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def append(self, row: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
