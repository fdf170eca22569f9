"""Writing a text file whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` through a temporary file beside it and a rename, so that
    a reader never sees half a file and an interrupted write leaves the old one."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
