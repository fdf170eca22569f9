"""The report's heaviest results kept from ingest (analyze/kept.py, issue #11 part 2): used only
while the store's inputs are those they were computed from, and equal to what the report
computes itself. That `gca ingest` keeps them: tests/test_cli.py; that a report reading them
writes the same bytes: tests/test_report_determinism.py."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from gpucluster_analysis.analyze import kept
from gpucluster_analysis.analyze.catalog import kept_queries
from gpucluster_analysis.analyze.prepare import prepare, prepare_report
from gpucluster_analysis.analyze.selection import EVERY_JOB, Selection
from gpucluster_analysis.db import open_store
from gpucluster_analysis.db.queries import run_query
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from tests.conftest import PHILLY_SAMPLE, require


def _computed(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[object, ...]]]:
    """The kept queries as the report computes them (nothing kept is read: prepare's default)."""
    prepare(con)
    prepare_report(con)
    rows = {
        q: con.sql(f"SELECT * FROM temp.main.{q} ORDER BY ALL").fetchall()
        for q in ("gpu_samples_by_machine", "attributed_util")
    }
    rows["host_util_cdf_by_activity"] = run_query(con, "host_util_cdf_by_activity").rows()
    return rows


def _kept(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[object, ...]]]:
    return {
        q: con.sql(f"{kept.read_kept(con, q)}{' ORDER BY ALL' if q != 'host_util_cdf_by_activity' else ''}").fetchall()
        for q in kept_queries()
    }


def test_a_later_file_makes_kept_results_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = require(PHILLY_SAMPLE)
    monkeypatch.setattr(kept, "KEEP_MIN_SAMPLES", 0)
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(
            con, [data / "cluster_job_log", data / "cluster_machine_list", data / "cluster_cpu_util"], IngestOptions()
        )
        assert kept.keep(con) is not None
        assert kept.usable(con, EVERY_JOB) == frozenset(kept_queries())
        assert kept.keep(con) is None  # current: nothing to do
        # a filtered report may use only what does not depend on the jobs it selects
        assert kept.usable(con, Selection(vcs=("7f04ca",))) == frozenset({"gpu_samples_by_machine"})
        before = _kept(con)
        assert before["attributed_util"] == []  # no GPU samples yet
        # the GPU samples arrive later: what was kept no longer holds
        ingest_paths(con, [data / "cluster_gpu_util"], IngestOptions())
        assert kept.usable(con, EVERY_JOB) == frozenset()
        assert kept.usable(con, Selection(vcs=("7f04ca",))) == frozenset()
        # until it is kept again (what `gca ingest` does once it has stored its files: test_cli.py)
        assert kept.keep(con) is not None
        assert kept.usable(con, EVERY_JOB) == frozenset(kept_queries())
        now, computed = _kept(con), _computed(con)
    assert now == computed
    assert now["attributed_util"] and now["attributed_util"] != before["attributed_util"]
    assert now["gpu_samples_by_machine"] != before["gpu_samples_by_machine"]
    # the same host samples, binned by whether a job ran beside them
    assert sum(r[3] for r in now["host_util_cdf_by_activity"]) == sum(r[3] for r in before["host_util_cdf_by_activity"])


def test_a_small_store_keeps_nothing_and_drops_what_it_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = require(PHILLY_SAMPLE)
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [data / "cluster_job_log", data / "cluster_gpu_util"], IngestOptions())
        samples = con.execute("SELECT count(*) FROM gpu_samples").fetchall()[0][0]
        monkeypatch.setattr(kept, "KEEP_MIN_SAMPLES", samples)
        assert kept.keep(con) is not None
        monkeypatch.setattr(kept, "KEEP_MIN_SAMPLES", samples + 1)
        ingest_paths(con, [data / "cluster_machine_list"], IngestOptions())
        assert kept.keep(con) is None
        assert con.execute("SELECT count(*) FROM kept_results").fetchall() == [(0,)]
        assert not con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'kept\\_%' ESCAPE '\\'"
            " AND table_name <> 'kept_results'"
        ).fetchall()
