"""The lines of a tool's text output (nvidia-smi, dcgm-exporter, dcgmi, sinfo, sacctmgr): gzip, a BOM
and CRLF read alike; UTF-16, binary data and a damaged gzip file refused in one line. read_lines
gives a Python string per line, read_chunks Arrow arrays of ~8 MiB of lines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.files import CONTROL_BYTES, DAMAGED_GZIP, line_blocks, open_binary

# Never in the tools' text output (tabs indent nvidia-smi's XML; CR ends Windows lines).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _file_start(path: Path, raw: bytes) -> bytes:
    """The first line without its UTF-8 byte-order mark; UTF-16 text refused."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ParseError(
            f"{path}:1: UTF-16 text (as Windows PowerShell saves command output)",
            hint=f"convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 {path.name}",
        )
    return raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw


def _binary_data(path: Path, number: int) -> ParseError:
    return ParseError(
        f"{path}:{number}: binary data, not the text nvidia-smi or dcgm-exporter prints",
        hint="give gca the tool's text output (a .gz is read as such)",
    )


def _damaged(path: Path, number: int, error: BaseException) -> ParseError:
    return ParseError(
        f"{path}:{number}: the compressed file is damaged or cut short ({error})",
        hint=f"copy it again, or keep what is readable: zcat {path.name} > {path.stem} and ingest that",
    )


def read_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(1-based number, stripped text, cut) of each line; gzip, a BOM and CRLF read alike.

    cut: the line has no line end, so it is the file's last and was cut off while the
    log was being written (a killed `nvidia-smi -l` leaves half a buffered line): a
    number on it may have lost digits. UTF-16 (Windows PowerShell's `>`) and binary data
    are refused in one line, as is a damaged gzip file.
    """
    number = 0
    try:
        with open_binary(path) as f:
            for number, raw in enumerate(f, start=1):
                if number == 1:
                    raw = _file_start(path, raw)
                text = raw.decode("utf-8", errors="replace")
                if _CONTROL.search(text):
                    raise _binary_data(path, number)
                yield number, text.strip(), not raw.endswith(b"\n")
    except DAMAGED_GZIP as e:
        raise _damaged(path, number + 1, e) from e


CHUNK_BYTES = 8 << 20


def read_chunks(path: Path) -> Iterator[tuple[int, pa.Array, bool]]:
    """(number of the first line, the lines stripped as an Arrow string array, last line cut)
    for each ~8 MiB of the file: read_lines' lines and checks, without a Python string per line."""
    number = 1
    try:
        with open_binary(path) as f:
            for raw in line_blocks(f, CHUNK_BYTES):
                if number == 1:
                    raw = _file_start(path, raw)
                text = raw.decode("utf-8", errors="replace")
                binary = _CONTROL.search(text) if len(raw.translate(None, CONTROL_BYTES)) != len(raw) else None
                if binary:  # the lines before it are read, then the file fails at it
                    text = text[: text.rfind("\n", 0, binary.start()) + 1]
                cut = bool(text) and not text.endswith("\n")
                parts = pc.list_flatten(pc.split_pattern(pa.array([text]), "\n"))
                if not cut:
                    parts = parts.slice(0, len(parts) - 1)  # after the last line end
                if len(parts):
                    yield number, pc.utf8_trim_whitespace(parts), cut
                number += len(parts)
                if binary:
                    raise _binary_data(path, number)
    except DAMAGED_GZIP as e:
        raise _damaged(path, number, e) from e
