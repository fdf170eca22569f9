"""Small file helpers for ingest: reading a file's head, hashing, finding lines."""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

if TYPE_CHECKING:
    from gpucluster_analysis.errors import InputError

HEAD_BYTES = 8192
# What a cut or corrupt .gz raises while it is being read.
DAMAGED_GZIP = (EOFError, gzip.BadGzipFile, zlib.error)


def open_binary(path: Path) -> IO[bytes]:
    """Open a file for reading, transparently decompressing `.gz`."""
    if path.suffix == ".gz":
        # a GzipFile reads as a binary file does; typeshed does not derive it from IO[bytes]
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


# Control characters but tab, LF and CR (a CR ends a line read from Windows): a text with
# none keeps its length when they are deleted, ~4x faster to test than a regex search.
CONTROL_BYTES = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])


def line_blocks(f: IO[bytes], size: int) -> Iterator[bytes]:
    """The bytes of `f` about `size` at a time, each block cut after its last line end (the
    last block: what follows the file's last line end, when anything does)."""
    rest = b""
    while True:
        block = f.read(size)
        data = rest + block
        if not data:
            return
        end = data.rfind(b"\n") + 1 if block else len(data)
        if not end:
            rest = data
            continue
        raw, rest = data[:end], data[end:]
        yield raw
        if not block:
            return


def read_head(path: Path, size: int = HEAD_BYTES) -> str:
    """The first `size` bytes of the (decompressed) file, decoded leniently."""
    try:
        with open_binary(path) as f:
            data = f.read(size)
    except DAMAGED_GZIP as e:
        raise damaged_gzip(path, e) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="replace")


def damaged_gzip(path: Path, error: BaseException) -> InputError:
    from gpucluster_analysis.errors import InputError

    return InputError(
        f"{path}: a damaged gzip file ({error or type(error).__name__}); nothing stored from it",
        hint=f"check it with `gzip -t {path.name}`; copy or download it again",
    )


LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"


def lfs_pointer(path: Path) -> str | None:
    """The object size a Git LFS pointer file names (what cloning a trace repository without
    git-lfs leaves in place of the data), or None when the file is not one. Read raw: a
    pointer named `*.csv.gz` is text, not gzip."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return None
    if not head.startswith(LFS_POINTER):
        return None
    size = re.search(rb"^size (\d+)$", head, re.MULTILINE)
    return size.group(1).decode() if size else "?"


def not_lfs_pointer(path: Path) -> None:
    """Refuse a Git LFS pointer in one line that says how to fetch the real file."""
    size = lfs_pointer(path)
    if size is not None:
        from gpucluster_analysis.errors import LfsPointerError

        shown = f"{int(size):,} bytes" if size.isdigit() else "the real file"
        raise LfsPointerError(
            f"{path}: a Git LFS pointer ({path.stat().st_size} bytes of text), not the data ({shown})",
            hint=f"fetch it in its repository: git lfs install && git lfs pull --include '{path.name}'",
        )


def looks_binary(head: str) -> bool:
    return "\x00" in head


def first_lines(head: str, n: int) -> list[str]:
    """Up to `n` complete lines from the head of a file (without line ends)."""
    lines = head.splitlines()
    if not head.endswith(("\n", "\r")) and len(lines) > 1:
        lines = lines[:-1]  # the last one may be cut
    return [ln for ln in lines][:n]


def sha256_of(path: Path, on_bytes: Callable[[int], None] | None = None) -> str:
    """Hex sha256 of the raw file bytes, read in 4 MiB chunks."""
    digest = hashlib.sha256()
    buffer = bytearray(4 << 20)  # one buffer for the whole file: no new 4 MiB of pages per chunk
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as f:
        while size := f.readinto(buffer):
            digest.update(view[:size])
            if on_bytes:
                on_bytes(size)
    return digest.hexdigest()


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without line end) for each line, streaming."""
    with open_binary(path) as f:
        for number, raw in enumerate(f, start=1):
            yield number, raw.decode("utf-8", errors="replace").rstrip("\r\n")


def locate_prefixes(path: Path, prefixes: Iterable[str]) -> dict[str, list[int]]:
    """Line numbers of lines starting with each prefix (exact prefix + ',' or whole line)."""
    wanted = set(prefixes)
    found: dict[str, list[int]] = {}
    if not wanted:
        return found
    for number, line in iter_lines(path):
        for key in _candidate_keys(line):
            if key in wanted:
                found.setdefault(key, []).append(number)
                break
    return found


def _candidate_keys(line: str) -> Iterator[str]:
    # A reject's text is the row's leading fields (trimmed) joined by ','.
    parts = [p.strip() for p in line.split(",")]
    while parts and parts[-1] == "":
        parts.pop()  # the trailing comma of upstream rows
    for n in range(len(parts), 0, -1):
        yield ",".join(parts[:n])


def locate_json_keys(path: Path, key: str, values: Iterable[str]) -> dict[str, list[int]]:
    """Line numbers where `"key": "value"` appears, for each value."""
    wanted = set(values)
    found: dict[str, list[int]] = {}
    if not wanted:
        return found
    pattern = re.compile(r'"' + re.escape(key) + r'"\s*:\s*"((?:[^"\\]|\\.)*)"')
    for number, line in iter_lines(path):
        for match in pattern.finditer(line):
            if match.group(1) in wanted:
                found.setdefault(match.group(1), []).append(number)
    return found


# Python's json parser knows the line of a syntax error, DuckDB's does not; it is
# only run on files that already failed, and only up to this size.
_JSON_LOCATE_LIMIT = 256 << 20


def locate_json_error(path: Path) -> tuple[int, str] | None:
    """(line, message) of the first JSON syntax error in the file, if it can tell."""
    import json

    if path.stat().st_size > _JSON_LOCATE_LIMIT:
        return None
    with open_binary(path) as f:
        text = f.read().decode("utf-8", errors="replace")
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return e.lineno, f"{e.msg} (column {e.colno})"
    return None
