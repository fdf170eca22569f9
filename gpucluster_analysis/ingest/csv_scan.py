"""One streaming pass over a CSV text file before DuckDB's CSV reader reads it (public traces,
squeue snapshots): its encoding, and what that reader cannot take refused with the line."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.files import open_binary

# A control character is never in a trace CSV; \x01 is also the byte DuckDB splits lines at.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LONE_CR = re.compile(rb"\r(?!\n)")
_LF_WITHOUT_CR = re.compile(rb"(?<!\r)\n")
_C1 = re.compile(rb"[\x80-\x9f]")
# The longest line DuckDB is asked to read (its default, 2 MB, fails a file on one long
# field); a longer line is no trace row, and the file is refused at it.
MAX_LINE_BYTES = 64 << 20
SCAN_CHUNK_BYTES = 4 << 20  # below MAX_LINE_BYTES: a longer line spans chunks, which is where it is caught


class TextScan:
    """One streaming pass over a trace CSV before DuckDB reads it (a failed DuckDB read would
    abort the file's transaction, leaving no second try): its encoding, and what DuckDB's CSV
    reader cannot take, refused with the line: UTF-16, control characters, mixed line ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines_before = 0  # line ends in the chunks already scanned
        self.crlf: bool | None = None  # the file's line end, from its first one
        self.line_bytes = 0  # bytes since the last line end

    def encoding(self) -> str:
        decoder = codecs.getincrementaldecoder("utf-8")()
        utf8 = True
        carry = b""  # a chunk's last byte when it is \r: its \n may open the next chunk
        with open_binary(self.path) as f:
            if f.read(2) in (b"\xff\xfe", b"\xfe\xff"):
                raise ParseError(
                    f"{self.path}:1: UTF-16 text (as Windows tools save CSV)",
                    hint=f"convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 {self.path.name}",
                )
            f.seek(0)
            while raw := f.read(SCAN_CHUNK_BYTES):
                chunk = carry + raw
                carry = chunk[-1:] if chunk.endswith(b"\r") else b""
                chunk = chunk[: len(chunk) - len(carry)]
                self._check(chunk)
                self._measure(chunk)
                if utf8:
                    try:
                        decoder.decode(chunk)
                    except UnicodeDecodeError:
                        utf8 = False
                if not utf8 and (c1 := _C1.search(chunk)):
                    # DuckDB's Latin-1 has no characters there; Windows-1252 puts quotes and the euro sign there
                    raise ParseError(
                        f"{self.path}:{self._line(chunk, c1.start())}: neither UTF-8 nor Latin-1 text",
                        hint=f"convert it to UTF-8 first, e.g. iconv -f CP1252 -t UTF-8 {self.path.name}",
                    )
                self.lines_before += chunk.count(b"\n")
            self._check(carry)
            if utf8:
                try:
                    decoder.decode(b"", final=True)
                except UnicodeDecodeError:
                    utf8 = False
        return "utf-8" if utf8 else "latin-1"

    def _measure(self, chunk: bytes) -> None:
        first, last = chunk.find(b"\n"), chunk.rfind(b"\n")
        if self.line_bytes + (first if first >= 0 else len(chunk)) > MAX_LINE_BYTES:
            limit = f"{MAX_LINE_BYTES >> 20} MB" if MAX_LINE_BYTES >= 1 << 20 else f"{MAX_LINE_BYTES} bytes"
            raise ParseError(
                f"{self.path}:{self.lines_before + 1}: a line longer than {limit}",
                hint="this is no trace row; check the file (line ends lost?)",
            )
        self.line_bytes = len(chunk) - last - 1 if last >= 0 else self.line_bytes + len(chunk)

    def _line(self, chunk: bytes, position: int) -> int:
        return self.lines_before + chunk.count(b"\n", 0, position) + 1

    def _check(self, chunk: bytes) -> None:
        if control := _CONTROL.search(chunk):
            raise ParseError(
                f"{self.path}:{self._line(chunk, control.start())}: a control character"
                f" (0x{chunk[control.start()]:02x}): binary data, not a CSV text file",
                hint="give gca the CSV as published (gzip-compressed is fine)",
            )
        if (cr := _LONE_CR.search(chunk)) and cr.end() < len(chunk):
            raise ParseError(
                f"{self.path}:{self._line(chunk, cr.start())}: a carriage return inside the line",
                hint=f"remove it, or normalize the line ends (e.g. dos2unix {self.path.name})",
            )
        if self.crlf is None and (first := chunk.find(b"\n")) >= 0:
            self.crlf = chunk[first - 1 : first] == b"\r"  # a \r ending the previous chunk was carried here
        position = None
        if self.crlf and (lf := _LF_WITHOUT_CR.search(chunk)):
            position = lf.start()
        elif self.crlf is False and (crlf := chunk.find(b"\r\n")) >= 0:
            position = crlf
        if position is not None:
            raise ParseError(
                f"{self.path}:{self._line(chunk, position)}: the line ends change here"
                f" ({'LF after CRLF' if self.crlf else 'CRLF after LF'}), as when files are concatenated",
                hint=f"normalize them first, e.g. dos2unix {self.path.name}",
            )
