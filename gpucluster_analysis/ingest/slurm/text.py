"""Slurm's text output read line by line or in ~16 MiB chunks: UTF-8 (a line that is not is
read as Latin-1), without byte-order mark or line ends, binary data refused."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.files import CONTROL_BYTES, line_blocks, open_binary

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # never in Slurm's output; tabs are let through
# `scontrol show job -dd` appends the batch script, which may hold any character but NUL
NUL = re.compile(r"\x00")


def text_lines(
    path: Path, latin1: set[int] | None = None, control: re.Pattern[str] | None = None
) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of each line, streaming: without a byte-order mark or line
    end; a line that is not UTF-8 is read as Latin-1 (a JobName typed on an old terminal),
    and its number added to `latin1`. A character `control` matches refuses the file (binary)."""
    with open_binary(path) as f:
        for number, raw in enumerate(f, start=1):
            yield number, _decode_line(path, number, raw, latin1, control or _CONTROL)


def _decode_line(path: Path, number: int, raw: bytes, latin1: set[int] | None, control: re.Pattern[str]) -> str:
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if number == 1 and raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ParseError(
            f"{path}:1: UTF-16 text (as Windows PowerShell saves command output)",
            hint=f"convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 {path.name}",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
        if latin1 is not None:
            latin1.add(number)
    text = text.rstrip("\r\n")
    if control.search(text):
        raise ParseError(
            f"{path}:{number}: binary data, not Slurm's text output", hint="give gca the text sacct or scontrol printed"
        )
    return text


_CHUNK_BYTES = 16 << 20


def text_chunks(path: Path, latin1: set[int]) -> Iterator[tuple[int, pa.Array | list[str]]]:
    """The lines of text_lines, ~16 MiB at a time: (number of the first line, the lines as an
    Arrow string array), without a Python string per line. A chunk that is not plainly UTF-8
    text (Latin-1 lines, control characters, a CR inside a line) comes as text_lines' strings.
    (A chunk is at most a run typed at once: 16 MiB typed faster than 8 or 32 at a million jobs.)"""
    number, first = 1, True
    with open_binary(path) as f:
        for raw in line_blocks(f, _CHUNK_BYTES):
            ends = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 10)  # found once: the count and the lines
            count = len(ends) + (not raw.endswith(b"\n"))
            lines: pa.Array | list[str] | None = None
            if not (first and raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"))) and _no_control_bytes(
                raw, len(ends)
            ):
                lines = _plain_lines(raw, count, ends)
            if lines is None:
                pieces = raw.split(b"\n")[:count]
                lines = [_decode_line(path, number + k, piece, latin1, _CONTROL) for k, piece in enumerate(pieces)]
            first = False
            yield number, lines
            number += count


def _no_control_bytes(raw: bytes, line_ends: int) -> bool:
    """Whether `raw` (with `line_ends` LFs) holds none of CONTROL_BYTES. The bytes below 32 are
    counted at once: when they are the line ends alone (no tab, no CR) and there is no DEL, there
    is none; else the bytes are tested one by one (a third of the time of that test, on the
    chunks of a plain dump)."""
    if np.count_nonzero(np.frombuffer(raw, dtype=np.uint8) < 32) == line_ends and b"\x7f" not in raw:
        return True
    return len(raw.translate(None, CONTROL_BYTES)) == len(raw)


def _plain_lines(raw: bytes, count: int, ends: np.ndarray) -> pa.Array | None:
    """The `count` lines of a block without control characters as an Arrow string array, or
    None when it is not UTF-8 or a CR stands inside a line. Without any CR the array is built
    on the block's bytes with the line ends (`ends`: where each LF is) taken out (no split, no
    string per line)."""
    if b"\r" not in raw:
        if not raw.isascii():
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        offsets = np.empty(count + 1, dtype=np.int32)
        offsets[0] = 0
        offsets[1 : len(ends) + 1] = ends - np.arange(len(ends))
        data = raw.replace(b"\n", b"")
        offsets[count] = len(data)  # a last line without its line end, if any
        return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    parts = pc.list_flatten(pc.split_pattern(pa.array([text]), "\n"))
    parts = pc.utf8_rtrim(parts.slice(0, count), "\r")
    if pc.any(pc.match_substring(parts, "\r")).as_py():
        return None
    return parts
