"""How a process opens its stores (db/connect.py): each open is a connection of its own to the
store attached once to the process's DuckDB database, detached (its file lock released, the file
checkpointed) when the last connection to it closes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from gpucluster_analysis.db import open_store
from gpucluster_analysis.db.connect import _attached
from gpucluster_analysis.errors import StoreError


def test_two_opens_of_one_store_share_it_and_keep_their_own_temporaries(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        con.execute("INSERT INTO schema_version VALUES (0)")
    with open_store(db, read_only=True) as a, open_store(db, read_only=True) as b:
        assert len(_attached) == 1
        a.execute("CREATE TEMP TABLE mine AS SELECT 1 AS x")
        assert b.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'mine'").fetchall() == [(0,)]
        assert (
            a.execute("SELECT count(*) FROM schema_version").fetchall()
            == b.execute("SELECT count(*) FROM schema_version").fetchall()
        )
    assert not _attached


def test_a_closed_store_is_free_for_another_process_and_whole(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        con.execute("CREATE TABLE kept AS SELECT range AS x FROM range(1000)")
    assert not Path(str(db) + ".wal").exists()  # checkpointed as it was detached
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import duckdb; c = duckdb.connect({str(db)!r}); print(c.sql('SELECT sum(x) FROM kept').fetchall())",
        ],
        capture_output=True,
        text=True,
    )
    assert other.returncode == 0 and "[(499500,)]" in other.stdout, other.stderr


def test_a_store_open_for_writing_is_not_opened_read_only_beside_it(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with open_store(db):
        with pytest.raises(StoreError) as refused:
            with open_store(db, read_only=True):
                pass
        assert "cannot open the store" in refused.value.message and "\n" not in refused.value.message
    with open_store(db, read_only=True) as con:  # and nothing stays attached after the refusal
        assert con.execute("SELECT count(*) FROM schema_version").fetchall() == [(1,)]
    assert not _attached


def test_a_name_with_a_quote_opens(tmp_path: Path) -> None:
    db = tmp_path / "it's a store.duckdb"
    with open_store(db) as con:
        assert con.execute("SELECT current_database()").fetchall()[0][0].startswith("gca_store_")
    assert duckdb.connect(str(db), read_only=True).execute("SELECT count(*) FROM schema_version").fetchall() == [(1,)]


def test_every_open_has_the_session_and_the_store_holds_none_of_it(tmp_path: Path) -> None:
    """The session's macros and settings are the process database's: each connection to each
    store finds them (and its own temporary macros first), and no store file gets them."""
    first, second = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    with open_store(first) as a, open_store(second) as b:
        for con in (a, b):
            assert con.execute(
                "SELECT reason_kind('7 fields where the header has 11', ''), list_contains(wait_cause_columns(),"
                " 'wait_other_s'), current_setting('TimeZone'), current_setting('enable_progress_bar_print')"
            ).fetchone() == ("… fields where the header has …", True, "UTC", False)
        a.execute("CREATE TEMP MACRO reason_kind(reason, row_text) AS 'own'")
        a.execute("CREATE TABLE made_here (x INTEGER)")
        assert a.execute("SELECT reason_kind('7', '')").fetchone() == ("own",)
        assert b.execute("SELECT reason_kind('7', '')").fetchone() == ("…",)
    con = duckdb.connect(str(first), read_only=True)
    try:
        functions = con.execute(
            "SELECT function_name FROM duckdb_functions() WHERE database_name = current_database()"
        ).fetchall()
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    finally:
        con.close()
    assert functions == [] and "made_here" in tables
