"""The store's schema: a version-1 store is upgraded in place, a newer one is refused."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from gpucluster_analysis.db import open_store
from gpucluster_analysis.db.schema import SCHEMA_VERSION
from gpucluster_analysis.errors import StoreError
from gpucluster_analysis.sqlfiles import load_sql


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    return {r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()}


def test_version_1_store_is_upgraded_keeping_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(db))
    con.execute(load_sql("schema", "001_core")).fetchall()
    con.execute("INSERT INTO schema_version VALUES (1)")
    con.execute("INSERT INTO jobs VALUES ('philly', 'j1', 'u', 'v', 'passed', 'Pass', '2017-10-10 10:00:00', 1)")
    con.close()
    with open_store(db) as con:
        assert con.execute("SELECT max(version) FROM schema_version").fetchall() == [(SCHEMA_VERSION,)] == [(11,)]
        assert {"eligible_at", "job_name", "cancelled_by"} <= _columns(con, "jobs")
        assert {"num_gpus", "num_nodes", "status"} <= _columns(con, "attempts")
        assert con.execute("SELECT job_id, eligible_at FROM jobs").fetchall() == [("j1", None)]
        assert con.execute("SELECT count(*) FROM job_logs").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM pending_reasons").fetchall() == [(0,)]
        assert {"cpus", "memory_mib", "gpu_model", "source"} <= _columns(con, "machines")
        assert {"sm_active", "tensor_active", "dram_active", "nvlink_rx_bytes"} <= _columns(con, "gpu_sample_details")
        assert con.execute("SELECT count(*) FROM prometheus_chunks").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM kept_results").fetchall() == [(0,)]  # none until the next ingest
        assert con.execute("SELECT count(*) FROM sample_spans").fetchall() == [(0,)]


def test_store_from_a_newer_gca_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    with open_store(db) as con:
        con.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StoreError, match="schema version 99"):
        with open_store(db):
            pass


def test_a_report_upgrades_a_store_from_an_older_gca(tmp_path: Path) -> None:
    from gpucluster_analysis.db import upgrade_older_store

    db = tmp_path / "v3.duckdb"
    with open_store(db) as con:
        con.execute("DROP TABLE prometheus_chunks")
        con.execute("DROP TABLE kept_results")
        con.execute("ALTER TABLE gpu_sample_details DROP COLUMN sm_active")
        con.execute("UPDATE schema_version SET version = 3")
    assert upgrade_older_store(db) is True
    with open_store(db, read_only=True) as con:
        assert "sm_active" in _columns(con, "gpu_sample_details")
        assert "kept_results" in {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert con.execute("SELECT max(version) FROM schema_version").fetchall() == [(SCHEMA_VERSION,)] == [(11,)]
    assert upgrade_older_store(db) is False  # current: left alone


def test_a_version_8_store_is_upgraded_and_its_duplicates_set_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written before samples had an identity (schema 8) that holds the trace's GPU file
    and a gzip copy of it, both stored: the upgrade adds the spans and the tables of duplicates,
    and its next ingest (of any file) compares its telemetry files, so the copy's samples leave
    gpu_samples."""
    import gzip

    from gpucluster_analysis.ingest import IngestOptions, ingest_paths, load

    examples = Path(__file__).resolve().parent.parent / "examples" / "synthetic"
    trace = examples / "cluster_gpu_util"
    cells = sum(1 for line in trace.read_text().splitlines()[1:] for v in line.split(",")[2:] if v not in ("", "NA"))
    copy = tmp_path / "cluster_gpu_util.gz"
    copy.write_bytes(gzip.compress(trace.read_bytes()))
    db = tmp_path / "v8.duckdb"
    with monkeypatch.context() as before_9:
        before_9.setattr(load, "compare_new", lambda con, kinds: {})  # what gca did before schema 9
        with open_store(db) as con:
            ingest_paths(con, [trace, copy], IngestOptions())
            for table in (
                "sample_spans",
                "gpu_samples_duplicates",
                "gpu_sample_details_duplicates",
                "host_samples_duplicates",
            ):
                con.execute(f"DROP TABLE {table}")
            con.execute("UPDATE schema_version SET version = 8")
            assert con.execute("SELECT count(*) FROM gpu_samples").fetchall() == [(2 * cells,)]
    with open_store(db) as con:
        assert con.execute("SELECT max(version) FROM schema_version").fetchall() == [(SCHEMA_VERSION,)] == [(11,)]
        assert con.execute("SELECT count(*) FROM gpu_samples").fetchall() == [(2 * cells,)]
        ingest_paths(con, [examples / "cluster_machine_list"], IngestOptions())
        assert con.execute("SELECT count(*) FROM gpu_samples").fetchall() == [(cells,)]
        assert con.execute("SELECT rows_loaded FROM ingested_files WHERE path = ?", [str(copy)]).fetchall() == [(0,)]


def test_a_view_another_gca_made_is_made_again(tmp_path: Path) -> None:
    """The store's views are this gca's SQL after a writable open: one an older gca made (its
    comment another mark, or none) is replaced."""
    from gpucluster_analysis.db.schema import store_views

    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        con.execute("CREATE OR REPLACE VIEW log_attempts AS SELECT 1 AS stale")
        con.execute("COMMENT ON VIEW attempt_root_causes IS 'gca 0000000000000000'")
    with open_store(db) as con:
        marks = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
        assert "stale" not in [c[0] for c in con.execute("DESCRIBE log_attempts").fetchall()]
    assert {v: marks[v] for v in store_views()} == {v: mark for v, (_, mark) in store_views().items()}
