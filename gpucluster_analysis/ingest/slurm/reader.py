"""Walks the data lines of a sacct dump, following its (possibly repeated) header: plain runs
of `-P`/`-p` lines are typed in bulk by sacct_fast.py in worker threads, the other lines are
split into fields here for the exact way (sacct_exact.py)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.slurm.layout import (
    FREE_TEXT,
    NEEDED_COLUMNS,
    PLACING_COLUMNS,
    PROMPT,
    RULE,
    SACCT_FORMAT,
    SONAR_COLUMNS,
    TOOL_MESSAGES,
    Columns,
    Layout,
    clean_columns,
    delimiter_for,
    fixed_layout,
    header_fields,
    is_sonar_row,
    off_columns,
)
from gpucluster_analysis.ingest.slurm.text import text_chunks

# runs of plain lines typed at once, one per worker thread (on two cores, three keep both busy:
# a run waits on polars and DuckDB in turn)
_RUNS_AHEAD = 3


@dataclass
class Reader:
    """Walks the data lines of a sacct dump, following its (possibly repeated) header."""

    path: Path
    columns_option: tuple[str, ...] | None
    layout: Layout | None = None
    delimiter_option: str | None = None  # gca ingest --delimiter: sacct's, named by the user
    cols: Columns | None = None
    header_text: str | None = None
    latin1_lines: set[int] = field(default_factory=set)  # lines read as Latin-1
    headers: int = 0  # header lines read so far: each starts a dump (concatenated dumps repeat it)
    missing: list[str] = field(default_factory=list)  # NEEDED_COLUMNS some layout lacks
    pending_header: tuple[int, str] | None = None  # fixed width: a header, its rule expected next

    def set_layout(self, layout: Layout, line_no: int) -> None:
        names = set(layout.columns)
        if not ({"jobid", "jobidraw"} & names) or "state" not in names:
            raise ParseError(
                f"{self.path}:{line_no}: the sacct columns lack JobID or State "
                f"({', '.join(layout.names or layout.columns)})",
                hint="gca needs at least JobID and State; add them to sacct --format",
            )
        if not names.intersection(PLACING_COLUMNS):
            # `sacct -a` as it prints by default: JobID, JobName, Partition, Account, AllocCPUS,
            # State, ExitCode; nothing says when a job ran nor on how many GPUs
            raise ParseError(
                f"{self.path}:{line_no}: sacct output without a time, GPU, node or usage column "
                f"({', '.join(layout.names or layout.columns)}): gca cannot tell when its jobs ran, where, "
                "nor on how many GPUs",
                hint=f"dump it with sacct -a -D -P --format {SACCT_FORMAT}",
            )
        self.layout, self.cols = layout, Columns(layout)
        self.headers += 1
        self.missing += [
            column
            for column, spellings, _ in NEEDED_COLUMNS
            if column not in self.missing and not names.intersection(spellings)
        ]

    def rows(self, prepare: Callable[[Any], Any]) -> Iterator[tuple[int, str, list[str] | int | str] | Any]:
        """(line number, text, fields) of each data line; a field count instead of fields when
        it is wrong, the reason for a line that is no row (a message of the tool, a prompt).

        Runs of plain `-P`/`-p` data lines go to sacct_fast, which types the clean ones itself;
        what `prepare` makes of them (a sacct_fast.FastRows) is yielded as one item, and the
        rest of each run comes back here. Runs are typed and prepared in worker threads, up to
        _RUNS_AHEAD at once, while this one reads the next chunk and the caller stages the run
        before (polars and DuckDB let go of the GIL); what a run yields is yielded in line
        order, before any line after it is fed, so a header changes nothing of a run before it."""
        # imported here: it imports polars, which is slow to import
        from gpucluster_analysis.ingest.slurm import sacct_fast

        def typed_run(
            texts: pa.Array, numbers: np.ndarray, layout: Layout, cols: Columns, dump: int
        ) -> tuple[Any, np.ndarray]:
            typed, other = sacct_fast.split_clean(texts, numbers, layout, cols, dump)
            return (prepare(typed) if typed.height else None), other

        with ThreadPoolExecutor(max_workers=_RUNS_AHEAD) as worker:
            pending: deque[tuple[Future[Any], np.ndarray, pa.Array]] = deque()
            for first, lines in text_chunks(self.path, self.latin1_lines):
                if isinstance(lines, list):  # a chunk that is not plain UTF-8 text: line by line
                    yield from self._typed(pending, 0)
                    for offset, text in enumerate(lines):
                        if (row := self.feed(first + offset, text)) is not None:
                            yield row
                    continue
                size, pos = len(lines), 0
                mask, mask_for = None, None
                while pos < size:
                    fast = self.layout is not None and self.pending_header is None and sacct_fast.eligible(self.layout)
                    if fast:
                        assert self.layout is not None and self.cols is not None
                        if mask_for != self.headers:  # every new layout comes with a new header count
                            mask, mask_for = sacct_fast.plain_rows(lines, self.layout), self.headers
                        assert mask is not None
                        run = int(mask[pos:].argmin()) if not mask[pos:].all() else size - pos
                        if run:
                            numbers = np.arange(first + pos, first + pos + run, dtype=np.int64)
                            texts = lines.slice(pos, run)
                            pending.append(
                                (
                                    worker.submit(typed_run, texts, numbers, self.layout, self.cols, self.headers),
                                    numbers,
                                    texts,
                                )
                            )
                            yield from self._typed(pending, _RUNS_AHEAD - 1)
                            pos += run
                            continue
                    yield from self._typed(pending, 0)
                    if (row := self.feed(first + pos, lines[pos].as_py())) is not None:
                        yield row
                    pos += 1
            yield from self._typed(pending, 0)
        if self.pending_header is not None:
            raise ParseError(
                f"{self.path}:{self.pending_header[0]}: fixed-width sacct header without the dashed rule under it",
                hint="export with sacct --parsable2 (-P)",
            )

    def _typed(
        self, pending: deque[tuple[Future[Any], np.ndarray, pa.Array]], keep: int
    ) -> Iterator[tuple[int, str, list[str] | int | str] | Any]:
        """What the oldest runs of plain lines typed in the workers yield, till `keep` are left in
        flight: each run's prepared rows, then the rest of it."""
        while len(pending) > keep:
            future, numbers, texts = pending.popleft()
            typed, other = future.result()
            if typed is not None:
                yield typed
            # plain lines are data rows of this layout: what feed() does with them
            for line_no, text in zip(numbers[other].tolist(), texts.filter(pa.array(other)).to_pylist(), strict=True):
                yield line_no, text, self._split(text, line_no)

    def feed(self, line_no: int, text: str) -> tuple[int, str, list[str] | int | str] | None:
        """What one line is: None for a header, a rule or a blank line, else as rows() yields it."""
        if not text.strip():
            return None
        if self.pending_header is not None:
            header_no, header = self.pending_header
            self.pending_header = None
            if not RULE.match(text):
                raise ParseError(
                    f"{self.path}:{line_no}: fixed-width sacct output without the dashed rule under its header",
                    hint="export with sacct --parsable2 (-P)",
                )
            layout = fixed_layout(header, text)
            if layout is None:
                raise ParseError(
                    f"{self.path}:{header_no}: the fixed-width header does not line up with the dashed rule under it"
                    " (spaces changed, e.g. by a copy from a terminal or tabs)",
                    hint="export with sacct --parsable2 (-P)",
                )
            self.set_layout(layout, header_no)
            return None
        if text.startswith(TOOL_MESSAGES):
            return line_no, text, "a message of sacct, not a row"  # sacct 2>&1: recorded, not read
        if self.layout is None and PROMPT.match(text):
            return line_no, text, "the shell's prompt and command, not a row"  # a pasted terminal session
        # The header comes first, and again wherever dumps were concatenated.
        if self.layout is None or text == self.header_text or text.lstrip()[:5].lower() == "jobid":
            found = header_fields(text, self.delimiter_option)
            if found is not None:
                self.header_text = text
                fields, delimiter = found
                if delimiter is None:
                    self.pending_header = (line_no, text)
                else:
                    trailing = text.rstrip().endswith(delimiter)
                    self.set_layout(
                        Layout([f.lower() for f in fields], delimiter, trailing=trailing, names=fields), line_no
                    )
                return None
        if self.layout is None:
            self._headerless(line_no, text)
        return line_no, text, self._split(text, line_no)

    def _headerless(self, line_no: int, text: str) -> None:
        spec, named_by = self.columns_option, "--columns names"
        if not spec and is_sonar_row(text):
            spec, named_by = SONAR_COLUMNS, "sonar's sacct layout has"
        if not spec:
            raise ParseError(
                f"{self.path}:{line_no}: sacct output without a header line (sacct -n/--noheader)",
                hint="name its columns in sacct --format order with --columns, e.g. --columns "
                "JobID,JobName,State,Start,End",
            )
        names = clean_columns(spec)
        # `|` (-P), or the delimiter (sacct --delimiter) that splits the row into the named columns
        delimiter = self.delimiter_option or delimiter_for(text, len(names)) or ("|" if "|" in text else None)
        if delimiter is None:
            raise ParseError(
                f"{self.path}:{line_no}: sacct output without a delimiter that splits it into the {len(names)}"
                " columns named, and without a header line: fixed-width output cannot be read without its header",
                hint="export with sacct --parsable2 (-P), or name its columns as the dump has them with --columns",
            )
        fields = text.split(delimiter)
        trailing = len(fields) == len(names) + 1 and fields[-1].strip() == ""
        self.set_layout(
            Layout([n.lower() for n in names], delimiter, trailing=trailing, names=names, named_by=named_by), line_no
        )

    def _split(self, text: str, line_no: int) -> list[str] | int | str:
        layout = self.layout
        assert layout is not None
        if layout.delimiter is None:
            return self._slice(text, line_no)
        n = len(layout.columns)
        if layout.trailing and text.rstrip().endswith(layout.delimiter):
            text = text.rstrip()[: -len(layout.delimiter)]
        fields = text.split(layout.delimiter)
        if len(fields) > n:
            free = [i for i, name in enumerate(layout.columns) if name in FREE_TEXT]
            if len(free) != 1:
                return len(fields)
            # One free-text column (JobName) held the delimiter: the fields around it are exact.
            k, extra = free[0], len(fields) - n
            fields = fields[:k] + [layout.delimiter.join(fields[k : k + extra + 1])] + fields[k + extra + 1 :]
        if len(fields) == n - 1:  # a trailing empty field a copy dropped (`...|gpu01` for `...|gpu01|`)
            fields.append("")
        if len(fields) != n:
            return len(fields)
        return [f.strip() for f in fields]

    def _slice(self, text: str, line_no: int) -> list[str] | str:
        layout, cols = self.layout, self.cols
        assert layout is not None and cols is not None
        # sacct pads by bytes: slice the bytes the line was read from
        raw = text.encode("latin-1" if line_no in self.latin1_lines else "utf-8")
        if off_columns(raw, layout.spans):
            return "text between the fixed-width columns: the line does not line up with the header"
        fields = []
        for i, (start, end) in enumerate(layout.spans):
            cell = raw[start:end].decode("latin-1" if line_no in self.latin1_lines else "utf-8", errors="replace")
            if i in cols.used and len(cell) == end - start and cell.endswith("+") and not cell.startswith(" "):
                raise ParseError(
                    f"{self.path}:{line_no}: sacct cut the {layout.names[i]} field to {cell.strip()!r}:"
                    " its fixed-width output loses what does not fit",
                    hint="export with sacct --parsable2 (-P), or widen the column, e.g. --format=JobName%60",
                )
            fields.append(cell.strip())
        return fields
