"""Job logs parsed by worker processes store exactly what parsing them here stores."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

import gpucluster_analysis.ingest.parse_pool as parse_pool
import gpucluster_analysis.ingest.plan as plan
from tests.conftest import REPO
from tests.store_helpers import ingest, rows

LOGS = REPO / "examples" / "synthetic" / "logs"
TABLES = {
    "job_logs": "SELECT * EXCLUDE (file_id) FROM job_logs ORDER BY job_id, attempt_ref, stream",
    "gpu_bindings": "SELECT * FROM gpu_bindings ORDER BY ALL",
    "files": "SELECT path, size_bytes, content_hash, format, rows_loaded, rejects FROM ingested_files ORDER BY path",
}


def stored(db: Path) -> dict[str, list[tuple]]:
    return {name: rows(db, sql) for name, sql in TABLES.items()}


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """The example's logs, plus one damaged gzip log that must fail alone."""
    root = tmp_path / "trace" / "logs"
    shutil.copytree(LOGS, root)
    bad = root / "application_1507359600941_7626" / "attempt_9"
    bad.mkdir()
    (bad / "stderr.log.gz").write_bytes(gzip.compress(b"Traceback (most recent call last):\n" * 50)[:40])
    return root


@pytest.mark.slow  # every log stored both ways (worker processes and in process), compared
def test_worker_processes_store_the_same_rows(logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    serial = ingest(tmp_path / "serial.duckdb", logs)
    monkeypatch.setattr(parse_pool, "PARALLEL_PARSE_MIN_FILES", 1)
    monkeypatch.setattr(parse_pool, "_WORKERS", 2)
    monkeypatch.setattr(parse_pool, "_CHUNK_FILES", 3)  # many tasks per batch, in order
    monkeypatch.setattr(plan, "PARSED_BATCH_FILES", 7)  # several batches, parsed ahead of the store
    from_workers: list[bool] = []
    results = parse_pool.ParsePool.results

    def spy(self, key):
        done = results(self, key)
        from_workers.append(done is not None)
        return done

    monkeypatch.setattr(parse_pool.ParsePool, "results", spy)
    parallel = ingest(tmp_path / "parallel.duckdb", logs)
    assert len(from_workers) > 5 and all(from_workers)  # every batch came from the workers
    n = sum(1 for p in logs.rglob("*") if p.is_file())
    assert len(serial) == len(parallel) == n > 40
    assert [(r.path, r.status, r.rows, r.message) for r in parallel] == [
        (r.path, r.status, r.rows, r.message) for r in serial
    ]
    (failed,) = [r for r in parallel if r.status == "failed"]
    assert failed.path.name == "stderr.log.gz" and "damaged gzip" in failed.message and failed.error is not None
    assert stored(tmp_path / "parallel.duckdb") == stored(tmp_path / "serial.duckdb")
    assert len(stored(tmp_path / "serial.duckdb")["job_logs"]) == n - 1
