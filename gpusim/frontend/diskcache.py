"""Writing cache entries so that readers never see a partial file: the data goes to a
temporary file beside the entry (named for the process and thread), which then replaces
the entry in one rename. A cache that cannot be written is not an error: the caller
computes again next time."""
from __future__ import annotations

import os
import threading
from pathlib import Path


def write_atomic(path: Path, data: bytes | str) -> bool:
    """Write `data` to `path` atomically; False (and nothing written) on an OS error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        if isinstance(data, str):
            tmp.write_text(data)
        else:
            tmp.write_bytes(data)
        os.replace(tmp, path)
        return True
    except OSError:
        return False
