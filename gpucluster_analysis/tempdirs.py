"""Temporary directories that do not outlive their process by more than its next run.

gca removes its temporary directories when it ends, whether it fails or is interrupted; a
process killed outright (SIGKILL, the OOM killer, a power cut) cannot. So each directory
holds a lock (flock on a file inside) for as long as its process lives, and every new one
first removes those of its kind whose lock is free: their process is gone. The system
releases the lock however the process ends; a live process, another user's directory, or
one an older gca made without the lock file is left alone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

OWNER_FILE = ".gca-owner"


class OwnedTempDir:
    """A directory under the system's temporary folder (TMPDIR), locked by this process."""

    def __init__(self, prefix: str) -> None:
        sweep(prefix)
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        # locked under another name and then renamed, so that a sweep never opens it unlocked
        claiming = self.path / f"{OWNER_FILE}.new"
        self._fd: int | None = os.open(claiming, os.O_CREAT | os.O_WRONLY, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.rename(claiming, self.path / OWNER_FILE)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def sweep(prefix: str) -> list[Path]:
    """Remove the directories `prefix`* of the temporary folder whose process is gone; the
    ones removed."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        try:
            fd = os.open(path / OWNER_FILE, os.O_RDONLY)
        except OSError:  # not ours to judge: no lock file, or another user's
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its process is alive
            os.close(fd)
            continue
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)
        if not path.exists():
            removed.append(path)
    return removed
