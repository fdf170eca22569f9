"""Every sniffer against every other format's real files (issue #29, part 1): no file under
tests/data or examples/ is claimed by two formats' sniffers (a folder would then hang on which
one reads it), and an empty file, blanks, binary data and other tools' tables are claimed by none."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gpucluster_analysis.ingest.files import read_head
from gpucluster_analysis.ingest.registry import FORMATS, detect_format, near_miss
from tests.conftest import REPO


def _files() -> list[Path]:
    return [
        p
        for folder in (REPO / "tests" / "data", REPO / "examples")
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    ]


def test_no_file_is_claimed_by_two_formats() -> None:
    files = _files()
    assert len(files) > 1000
    claimed_twice = []
    for path in files:
        try:
            head = read_head(path)
        except Exception:  # a damaged gzip, a Git LFS pointer: refused before any sniffer runs
            continue
        names = [f.name for f in FORMATS if f.sniff(head)]
        if len(names) > 1:
            claimed_twice.append((path.relative_to(REPO), names))
    assert claimed_twice == []


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n\n   \n",
        random.Random(29).randbytes(4096),
        b"\x00\x01\x02binary\xff\xfe" * 100,
        # other tools' tables: a spreadsheet export, a TSV of job ids without a state
        b"date,host,temperature\n2024-05-01,node01,41\n",
        b"JobID\tUser\tGPUs\n1\tann\t4\n",
        b"id|name|score\n1|a|0.5\n",
    ],
)
def test_what_no_format_is_is_claimed_by_none(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    assert detect_format(path, read_head(path)) is None


def test_a_tsv_with_a_jobid_column_is_told_why_it_is_no_sacct_dump(tmp_path: Path) -> None:
    path = tmp_path / "jobs.tsv"
    path.write_text("JobID\tUser\tGPUs\n1\tann\t4\n")
    why = near_miss(read_head(path))
    assert why is not None and "a JobID column but no State" in why
