"""A store is a store: `--db` opens only a gca store (or creates one); any other file is
refused in one line, exit 2, before anything is written to it (issue #26, item 2)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import ExitCode, NotAStoreError
from tests.test_cli import assert_one_line_error
from tests.test_ingest_philly import JOB_LOG


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _csv(path: Path) -> None:
    path.write_text("a,b\n")


def _json(path: Path) -> None:
    path.write_text('{"jobs": [{"id": 1}]}\n')


def _parquet(path: Path) -> None:
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT 1 AS job_id, 'u' AS user_name) TO '{path}' (FORMAT parquet)")


def _empty_file(path: Path) -> None:
    path.write_bytes(b"")


def _other_application(path: Path) -> None:
    """Another application's DuckDB database, with a `jobs` table of its own."""
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE jobs (id INTEGER, owner VARCHAR)")
        con.execute("INSERT INTO jobs VALUES (1, 'alice'), (2, 'bob')")


def _other_application_with_schema_version(path: Path) -> None:
    """An application whose migrations keep a `schema_version (version INTEGER)` table, as gca's do."""
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        con.execute("INSERT INTO schema_version VALUES (3)")
        con.execute("CREATE VIEW people AS SELECT 1 AS id")


def _other_application_after_a_crash(path: Path) -> None:
    """Another application's database as a crash leaves it: its last commit only in the
    write-ahead log beside it. Any writable open replays the log into the file."""
    live = path.with_name("live.duckdb")
    con = duckdb.connect(str(live))
    con.execute("CREATE TABLE jobs (id INTEGER)")
    con.execute("CHECKPOINT")
    con.execute("INSERT INTO jobs VALUES (1), (2)")  # committed to the log, not to the file
    shutil.copy(live, path)
    shutil.copy(f"{live}.wal", f"{path}.wal")
    con.close()
    live.unlink()


FOREIGN = {
    "r.csv": _csv,
    "r.json": _json,
    "r.parquet": _parquet,
    "empty.duckdb": _empty_file,
    "other_app.duckdb": _other_application,
    "migrations.duckdb": _other_application_with_schema_version,
    "crashed_app.duckdb": _other_application_after_a_crash,
}


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("command", ["ingest", "report", "export"])
@pytest.mark.parametrize("name", list(FOREIGN))
def test_db_on_a_foreign_file_exits_2_and_leaves_it_byte_for_byte(tmp_path: Path, name: str, command: str) -> None:
    """printf 'a,b\\n' > /tmp/r.csv; gca ingest examples/synthetic --db /tmp/r.csv
    printed "loaded", exited 0 and kept nothing (DuckDB opened the CSV as a database in
    memory); on another application's DuckDB file it added 11 columns to its jobs table and
    about 20 tables, then ended in "internal error"."""
    folder = tmp_path / "site"
    folder.mkdir()
    db = folder / name
    FOREIGN[name](db)
    before = _snapshot(folder)
    log = tmp_path / "cluster_job_log"
    log.write_text(JOB_LOG)
    args: dict[str, list[object]] = {
        "ingest": ["ingest", log, "--db", db],
        "report": ["report", "--db", db, "--out", tmp_path / "out"],
        "export": ["export", "--db", db, "--to", tmp_path / "dataset"],
    }
    result = run(*args[command])
    assert_one_line_error(result, ExitCode.USAGE, f"{db}: ", "not a gca store", "--db")
    assert _snapshot(folder) == before  # the file (and its log) byte for byte, nothing beside it
    assert not (tmp_path / "out").exists() and not (tmp_path / "dataset").exists()


@pytest.mark.parametrize("make", [_csv, _other_application, _other_application_after_a_crash])
def test_open_store_refuses_before_duckdb_writes(tmp_path: Path, make: Callable[[Path], None]) -> None:
    db = tmp_path / "f.duckdb"
    make(db)
    before = _snapshot(tmp_path)
    for read_only in (False, True):
        with pytest.raises(NotAStoreError, match="not a gca store"):
            with open_store(db, read_only=read_only):
                pass
    assert _snapshot(tmp_path) == before


def test_what_the_refusals_say(tmp_path: Path) -> None:
    """Each kind of foreign file is named for what it is, and the hint says what --db takes."""
    cases = {
        "r.csv": "not a DuckDB database file",
        "empty.duckdb": "an empty file (0 bytes)",
        "other_app.duckdb": "a DuckDB database of another application, holding jobs",
        "migrations.duckdb": "holding people, schema_version",
    }
    for name, says in cases.items():
        FOREIGN[name](tmp_path / name)
        with pytest.raises(NotAStoreError) as err:
            with open_store(tmp_path / name):
                pass
        assert says in err.value.message and err.value.hint and "--db" in err.value.hint


def test_an_empty_duckdb_database_becomes_a_store(tmp_path: Path) -> None:
    """A DuckDB file holding nothing (made by `duckdb site.duckdb` and left) is taken as a new store."""
    db = tmp_path / "site.duckdb"
    duckdb.connect(str(db)).close()
    log = tmp_path / "cluster_job_log"
    log.write_text(JOB_LOG)
    result = run("ingest", log, "--db", db)
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(db), read_only=True) as con:
        # JOB_LOG stores three jobs (job_a, job_b, job_e: test_ingest_philly reads it row by row)
        assert con.execute("SELECT count(*) FROM jobs").fetchall() == [(3,)]
    again = run("ingest", log, "--db", db)  # and it is a gca store from then on
    assert again.exit_code == 0 and "unchanged" in again.stderr
