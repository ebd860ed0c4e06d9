"""The finished points of a sweep, kept on disk as they finish: what `--resume` reads.

A sweep with an output (`--out sweep.csv`) appends every finished point to
`sweep.csv.points` beside it, in the process that collects the rows, one `os.write` per
point: a sweep stopped at any moment (Ctrl-C, SIGTERM, SIGKILL, a dead worker, a full disk)
keeps every point it finished. The file is also `fsync`ed at most once a second (and when
closed), so a machine that loses power loses at most the last second's points. The file:

    gpusim-sweep-points 1 code=<digest of gpusim's, isa's and programs' sources>
    <sha256 of the JSON, 16 hex digits> {"key": "<point key>", "row": {...}}
    ...

A line whose checksum does not match, or a last line cut short (the process died while
writing it), is not a point: it runs again. Rows are JSON (floats as Python writes them,
which read back bit for bit; NaN and infinities as Python's json writes them; tuples
tagged), so a resumed table equals an uninterrupted one.

A point's key (`point_key`) names everything its row depends on: the program (a file
program: with its file's digest; a `Launch`: with its kernel's fingerprint), the size,
the spec (its whole repr), the seed, the timing options and whether outputs are checked.
The header's code digest covers the simulator: a store written by other sources is
refused (its points could differ from what this code computes). When the final table is
written (atomically: a temporary file renamed over `--out`) the store is removed.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import time
from pathlib import Path

import numpy as np

from gpusim.errors import ConfigError, OutputError
from gpusim.frontend.compile import _unwrap
from gpusim.frontend.fingerprint import fingerprint
from gpusim.sweep.point import Launch

MAGIC = "gpusim-sweep-points 1"
SYNC_EVERY_S = 1.0              # fsync at most this often (7.5 ms each here: a tenth of a small point)
SUFFIX = ".points"


def store_path(out) -> Path:
    p = Path(out)
    return p.with_name(p.name + SUFFIX)


_CODE: str | None = None


def code_digest() -> str:
    """SHA-256 over the sources of gpusim, isa and programs (the code a row depends on)."""
    global _CODE
    if _CODE is None:
        h = hashlib.sha256()
        top = Path(__file__).resolve().parents[2]              # the checkout: gpusim/, isa/, programs/
        for pkg in ("gpusim", "isa", "programs"):
            root = top / pkg
            for f in sorted(root.rglob("*")):
                if f.suffix in (".py", ".toml", ".json") and "__pycache__" not in f.parts:
                    h.update(str(f.relative_to(root.parent)).encode() + b"\0" + f.read_bytes())
        _CODE = h.hexdigest()[:32]
    return _CODE


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def program_identity(program) -> str:
    """A library program's name; a program from a file with its file's digest; a Launch with
    its kernel's fingerprint."""

    if isinstance(program, str):
        return program
    if isinstance(program, Launch):
        try:
            fp = fingerprint(_unwrap(program.kernel)[0]).digest
        except Exception:                          # not a kernel: the launch reports it
            fp = "?"
        return f"launch:{program.name}:{fp}"
    try:
        src = Path(inspect.getsourcefile(program.build)).read_bytes()
    except (TypeError, OSError):
        src = b""
    return f"file:{program.name}:{hashlib.sha256(src).hexdigest()}"


def point_key(identity: str, size, task) -> str:
    """The key of one point (module doc)."""
    size_part = size if isinstance(size, str) or size is None else sorted(size.items())
    return _digest(repr((identity, size_part, task.values, repr(task.spec), task.seed, repr(task.options),
                         bool(task.check))))


def _encode(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, tuple):
            v = {"__tuple__": list(v)}
        out[k] = v
    return out


def _decode(row: dict) -> dict:
    return {k: tuple(v["__tuple__"]) if isinstance(v, dict) and "__tuple__" in v else v for k, v in row.items()}


def line(key: str, row: dict) -> bytes:
    payload = json.dumps({"key": key, "row": _encode(row)}, separators=(",", ":"))
    return f"{_digest(payload)[:16]} {payload}\n".encode()


class PointStore:
    """The append-only file of finished points beside `out` (module doc)."""

    def __init__(self, out):
        self.out = Path(out)
        self.path = store_path(out)
        self.rows: dict[str, dict] = {}         # key -> row, read from the file
        self.bad_lines = 0
        self.written = 0                        # points appended by this process
        self._fd: int | None = None
        self._synced = time.monotonic()

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> dict[str, dict]:
        """The points the file holds (key -> row); a bad or cut line is skipped and counted."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise OutputError(f"cannot read {self.path}: {e.strerror or e}") from None
        lines = raw.split(b"\n")
        head = lines[0].decode("utf-8", "replace")
        if not head.startswith(MAGIC):
            raise ConfigError(f"{self.path} is not a gpusim sweep's points file; move it away or delete it")
        if head != f"{MAGIC} code={code_digest()}":
            raise ConfigError(f"{self.path} holds points computed by other gpusim sources (the code changed since): "
                              "they could differ from what this version computes; delete it to start over")
        for ln in lines[1:-1]:                    # the last element follows the last newline: empty or cut short
            text = ln.decode("utf-8", "replace")
            check, _, payload = text.partition(" ")
            if _digest(payload)[:16] != check:
                self.bad_lines += 1
                continue
            try:
                doc = json.loads(payload)
                self.rows[doc["key"]] = _decode(doc["row"])
            except (ValueError, KeyError, TypeError):
                self.bad_lines += 1
        return self.rows

    def open(self) -> None:
        """Open for appending (creating it with its header); a last line cut short is dropped."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            size = os.fstat(fd).st_size
            if size == 0:
                os.write(fd, f"{MAGIC} code={code_digest()}\n".encode())
            else:
                data = self._tail(fd, size)
                keep = size - len(data) + data.rfind(b"\n") + 1 if b"\n" in data else 0
                if keep < size:
                    os.ftruncate(fd, keep)
            os.lseek(fd, 0, os.SEEK_END)
            os.fsync(fd)
        except OSError as e:
            raise OutputError(f"cannot write {self.path} (beside --out {self.out}): {e.strerror or e}") from None
        self._fd = fd

    @staticmethod
    def _tail(fd: int, size: int) -> bytes:
        os.lseek(fd, max(0, size - (1 << 20)), os.SEEK_SET)
        return os.read(fd, 1 << 20)

    def add(self, key: str, row: dict) -> None:
        """Append one finished point, durably (OSError, e.g. ENOSPC, goes to the caller)."""
        data = line(key, row)
        n = os.write(self._fd, data)
        if n != len(data):                       # a short write: the disk filled up
            raise OSError(28, os.strerror(28))
        self.written += 1
        now = time.monotonic()
        if now - self._synced >= SYNC_EVERY_S:
            os.fsync(self._fd)
            self._synced = now

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def write_atomic_table(df, path) -> None:
    """Write `df` as CSV or Parquet (by extension) to a temporary file beside `path`, then
    rename it over `path`: `path` is the old file or the whole new one, never a part."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        if p.name.lower().endswith(".csv"):
            df.to_csv(tmp, index=False)
        else:
            df.to_parquet(tmp, index=False)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
