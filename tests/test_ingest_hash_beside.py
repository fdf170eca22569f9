"""A big file whose path is new is hashed beside its load (ingest/store_file.py, _hash_beside), not
before it. What is stored must not show it: the content hash is the file's sha256 (hashlib's,
taken here), the same bytes under another name are still `unchanged` and store nothing, and a
load that fails leaves the store as it was. The size threshold is set to 0 so that the small
test files take that way."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from gpucluster_analysis.ingest import store_file
from tests.store_helpers import ingest, rows

DATA = Path(__file__).resolve().parent / "data" / "slurm"


@pytest.fixture(autouse=True)
def hash_beside_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_file, "_HASH_BESIDE_MIN_BYTES", 0)


def _snapshot(db: Path) -> dict[str, list[tuple]]:
    return {
        table: rows(db, f"SELECT * FROM {table} ORDER BY ALL")
        for table in ("jobs", "attempts", "attempt_hosts", "sacct_records", "rejects")
    } | {"files": rows(db, "SELECT file_id, path, content_hash, rows_loaded FROM ingested_files ORDER BY file_id")}


def test_the_stored_hash_is_the_files_sha256(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    source = DATA / "requeue.txt"
    (report,) = ingest(db, source, zone="UTC")
    assert report.status == "loaded" and report.rows > 0
    assert rows(db, "SELECT path, content_hash FROM ingested_files") == [
        (str(source.resolve()), hashlib.sha256(source.read_bytes()).hexdigest())
    ]


def test_the_same_bytes_under_another_name_store_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ingest(db, DATA / "requeue.txt", zone="UTC")
    before = _snapshot(db)
    copy = shutil.copy(DATA / "requeue.txt", tmp_path / "renamed.txt")
    (report,) = ingest(db, Path(copy), zone="UTC")
    assert report.status == "unchanged"
    assert str((DATA / "requeue.txt").resolve()) in report.message
    assert _snapshot(db) == before


def test_another_file_is_loaded_beside_the_first(tmp_path: Path) -> None:
    """Two new paths of different bytes: both stored, each with its own sha256."""
    db = tmp_path / "s.duckdb"
    first, second = DATA / "requeue.txt", DATA / "parsable2.txt"
    ingest(db, first, zone="UTC")
    (report,) = ingest(db, second, zone="UTC")
    assert report.status == "loaded"
    assert rows(db, "SELECT content_hash FROM ingested_files ORDER BY file_id") == [
        (hashlib.sha256(first.read_bytes()).hexdigest(),),
        (hashlib.sha256(second.read_bytes()).hexdigest(),),
    ]


def test_a_failed_load_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ingest(db, DATA / "requeue.txt", zone="UTC")
    before = _snapshot(db)
    bad = tmp_path / "json.txt"
    bad.write_text('{"meta": {"plugin": {"type": "openapi/slurmdbd"}}, "jobs": []}\n')
    (report,) = ingest(db, bad, zone="UTC", format_name="slurm_sacct")
    assert report.status == "failed"
    assert _snapshot(db) == before
