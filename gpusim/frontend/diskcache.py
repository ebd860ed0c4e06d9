"""Cache entries on disk that are written atomically and checked when read.

Writing: the data goes to a temporary file beside the entry (named for the process and
thread, so concurrent writers never share one), which then replaces the entry in one
rename; readers see the old entry or the new one, never a partial file. Two processes
writing the same key write the same bytes.

Checking: an entry is one header line, `gpusim-cache 1 sha256=<hex> bytes=<n>`, then the
data. `read_entry` returns the data only when the header parses and the length and
SHA-256 match; a truncated entry, binary garbage, an edited entry (say `add.f32` turned
into `sub.f32` in a cached PTX) or one written by an older gpusim without a header is a
miss, counted in `corrupt_entries()`, and the caller computes the data again and
overwrites it. A cache that cannot be written is not an error either: the caller
computes again next time.

Where: `cache_dir()`, the frontend's PTX cache directory (`$GPUSIM_CACHE_DIR`, else
`~/.cache/gpusim/ptx`); the other caches (NVRTC's PTX, the extern shims, the sweep's streams)
live in and beside it.
"""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path


def cache_dir() -> Path:
    """The frontend's PTX cache directory (see module doc)."""
    env = os.environ.get("GPUSIM_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "gpusim" / "ptx"


MAGIC = b"gpusim-cache 1 "
_CORRUPT = [0]


def write_atomic(path: Path, data: bytes | str) -> bool:
    """Write `data` to `path` atomically; False (and nothing written) on an OS error."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return False


def header(data: bytes) -> bytes:
    return MAGIC + f"sha256={hashlib.sha256(data).hexdigest()} bytes={len(data)}\n".encode()


def write_entry(path: Path, data: bytes | str) -> bool:
    """Write `data` (str: UTF-8) as a checked entry, atomically; False on an OS error."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    return write_atomic(path, header(raw) + raw)


def read_entry(path: Path) -> bytes | None:
    """The data of the entry at `path`, or None when it is missing, unreadable or corrupt."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    end = raw.find(b"\n", 0, 200)
    data = raw[end + 1:] if end >= 0 else b""
    if end < 0 or raw[:end + 1] != header(data):
        _CORRUPT[0] += 1
        return None
    return data


def read_text_entry(path: Path) -> str | None:
    """`read_entry` decoded as UTF-8 (None for a missing or corrupt entry)."""
    data = read_entry(path)
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:             # only if the bytes were written so: the checksum held
        _CORRUPT[0] += 1
        return None


def corrupt_entries() -> int:
    """Entries found corrupt (and so recomputed) since the process started."""
    return _CORRUPT[0]
