"""The report's directory (--out): one report at a time, and replaced whole.

A report locks its directory before it computes anything, and a second report into the same
directory is refused at once, naming the lock and the process holding it. The lock is an
flock on `.NAME.gca-lock` beside the directory NAME: the system releases it when its process
ends, even by SIGKILL, so a lock file left behind never blocks.

The files are written into a new directory beside it (`.NAME.gca-new-PID`) and swapped in
by two renames (the old one becomes `.NAME.gca-old-PID`, then is removed): a report that is
killed, or fills the disk, leaves the previous one as it was, never a mix of the two. What
such a report left is removed, or put back, by the next one into the same directory.

Only a directory that holds a report and nothing else is replaced whole: the marker
`.gca-report.json` lists the files a report wrote. Into a directory with other files (the
working directory, a folder of reports, a report of a gca before this marker) the report's
files are moved one by one from a new directory inside it, `index.html` last, and the files
of the previous report that this one does not write are removed; the others stay. The same
happens where gca cannot write beside the directory, and its lock is then inside it.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from gpucluster_analysis import __version__
from gpucluster_analysis.errors import ReportError

MARKER = ".gca-report.json"
# gca's own entries inside a report directory: the marker, and the lock and new
# directory where gca cannot write beside it
_OWN_PREFIX = ".gca-"
_NEW = ".gca-new-"
_OLD = ".gca-old-"
_LOCK = ".gca-lock"
_CANNOT_WRITE_HINT = "check that the directory is writable and the disk is not full"


class ReportDirectory:
    """`out`, locked from `with` to its end; `publish` puts a new report there whole."""

    def __init__(self, out: Path) -> None:
        self.shown = Path(out)
        self.out = self.shown.resolve()  # a symlink's target is what is replaced
        self.parent = self.out.parent
        self._beside = self.parent != self.out  # the file system's root has nothing beside it
        self._lock_fd: int | None = None
        self.lock_path = self._beside_path(_LOCK) if self._beside else self.out / _LOCK

    def __enter__(self) -> ReportDirectory:
        self._lock()
        try:
            self._sweep()
        except OSError as e:
            self._unlock()
            raise ReportError(
                f"{self.shown}: cannot write the report: {e.strerror or e}", hint=_CANNOT_WRITE_HINT
            ) from e
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._unlock()

    def publish(self, write: Callable[[Path], list[str]]) -> None:
        """Call `write(folder)`, which writes the report's files into `folder` and returns
        their names (index.html last), then put them in place of the previous report."""
        whole = self._replaceable()
        new = self._beside_path(_NEW + str(os.getpid())) if whole else self.out / f"{_NEW}{os.getpid()}"
        try:
            new.mkdir(parents=True)
            names = write(new)
            (new / MARKER).write_text(
                json.dumps({"written_by": f"gca {__version__}", "files": names}, indent=1) + "\n", encoding="utf-8"
            )
            if whole:
                self._swap(new)
            else:
                self._move_in(new, names)
        except OSError as e:
            raise ReportError(
                f"{self.shown}: cannot write the report: {e.strerror or e}", hint=_CANNOT_WRITE_HINT
            ) from e
        finally:
            shutil.rmtree(new, ignore_errors=True)

    # ------------------------------------------------------------ the lock

    def _lock(self) -> None:
        try:
            self.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = self._open_locked(self.lock_path)
            except PermissionError:
                if not self._beside or not self.out.is_dir():
                    raise
                # gca may not write beside it (a web server's folder): lock inside it
                self._beside = False
                self.lock_path = self.out / _LOCK
                fd = self._open_locked(self.lock_path)
        except OSError as e:
            raise ReportError(
                f"{self.shown}: cannot write the report: {e.strerror or e}", hint=_CANNOT_WRITE_HINT
            ) from e
        os.ftruncate(fd, 0)
        os.write(fd, f"process {os.getpid()} on {socket.gethostname()}\n".encode())
        self._lock_fd = fd

    def _open_locked(self, path: Path) -> int:
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 200).decode(errors="replace").strip() or "a process that just started"
                os.close(fd)
                raise ReportError(
                    f"{self.shown}: another gca report is writing there ({holder}; lock file {path})",
                    hint="wait for it to end, or pass another --out; the lock ends with its process, even a killed one",
                ) from None
            # the holder removes the file as it ends: a lock taken on a removed file is no lock
            try:
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)

    def _unlock(self) -> None:
        if self._lock_fd is None:
            return
        try:
            self.lock_path.unlink(missing_ok=True)  # while still held: see _open_locked
        except OSError:
            pass
        os.close(self._lock_fd)
        self._lock_fd = None

    # ------------------------------------------------------------ what a killed report left

    def _sweep(self) -> None:
        """Under the lock no other report writes here: every new or old directory is a killed one's."""
        if self._beside:
            for path in self._beside_glob(_NEW):
                shutil.rmtree(path, ignore_errors=True)
            old = sorted(self._beside_glob(_OLD), key=lambda p: p.stat().st_mtime)
            if old and not self.out.exists():  # killed between the swap's two renames: the previous report
                os.rename(old.pop(), self.out)
            for path in old:
                shutil.rmtree(path, ignore_errors=True)
        if self.out.is_dir():
            for path in self.out.glob(f"{_NEW}*"):
                shutil.rmtree(path, ignore_errors=True)

    # ------------------------------------------------------------ putting the report in place

    def _replaceable(self) -> bool:
        """Whether `out` can be replaced whole: absent, or holding nothing but a report (and not
        where the user works: renaming the working directory would move them with it)."""
        if not self._beside:
            return False
        if not self.out.exists():
            return True
        cwd = Path.cwd().resolve()
        if cwd == self.out or self.out in cwd.parents or os.path.ismount(self.out):
            return False
        listed = set(self._listed())
        with os.scandir(self.out) as entries:
            return all(
                e.name.startswith(_OWN_PREFIX) or (e.name in listed and e.is_file(follow_symlinks=False))
                for e in entries
            )

    def _listed(self) -> list[str]:
        """The files the previous report wrote here, as its marker lists them."""
        try:
            files = json.loads((self.out / MARKER).read_text(encoding="utf-8"))["files"]
        except (OSError, ValueError, KeyError, TypeError):
            return []
        return [f for f in files if isinstance(f, str) and f == Path(f).name] if isinstance(files, list) else []

    def _swap(self, new: Path) -> None:
        if not self.out.exists():
            os.rename(new, self.out)
            return
        os.chmod(new, stat.S_IMODE(self.out.stat().st_mode))  # the directory's permissions stay its own
        old = self._beside_path(_OLD + str(os.getpid()))
        os.rename(self.out, old)
        try:
            os.rename(new, self.out)
        except OSError:
            os.rename(old, self.out)
            raise
        shutil.rmtree(old, ignore_errors=True)

    def _move_in(self, new: Path, names: list[str]) -> None:
        stale = set(self._listed()) - set(names)
        *tables, last = names
        for name in tables:
            os.replace(new / name, self.out / name)
        for name in stale:
            (self.out / name).unlink(missing_ok=True)
        os.replace(new / last, self.out / last)
        os.replace(new / MARKER, self.out / MARKER)

    def _beside_path(self, suffix: str) -> Path:
        return self.parent / f".{self.out.name}{suffix}"

    def _beside_glob(self, suffix: str) -> list[Path]:
        return list(self.parent.glob(f"{glob.escape('.' + self.out.name + suffix)}*"))
