"""Shared fixtures: paths to the real Philly extracts and stores ingested from them."""

from __future__ import annotations

import os
import sys

# Keep the compiled modules (gca's, and the tests as pytest rewrites them) in __pycache__ even
# where PYTHONDONTWRITEBYTECODE is set: each worker compiles them again otherwise (~4 s a run).
sys.dont_write_bytecode = False

from pathlib import Path

import pytest

from gpucluster_analysis import cores
from gpucluster_analysis.db import open_store
from gpucluster_analysis.ingest import IngestOptions, ingest_paths

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
PHILLY_SAMPLE = SHARED_DATA / "philly-sample"
PHILLY_5910 = SHARED_DATA / "philly-5910"


def pytest_configure(config: pytest.Config) -> None:
    """Each worker process of the run (pytest-xdist) gives DuckDB its share of the cores, as
    gca does when GCA_THREADS says so: every worker's DuckDB on every core only contends (the
    ingest and report tests ran 12% faster on one thread each in two workers on two cores). A
    GCA_THREADS already set wins; a run without workers (`-n0`) leaves DuckDB every core, and
    test_report_determinism.py asks for every core."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers and cores.ENV not in os.environ:
        os.environ[cores.ENV] = str(max(1, (os.cpu_count() or 1) // int(workers)))


def require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is not available (CI keeps ../shared beside the checkout)")
    return path


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the five files of ../shared/data/philly-sample (not its upstream examples)."""
    data = require(PHILLY_SAMPLE)
    db = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    files = sorted(p for p in data.iterdir() if p.is_file() and p.name.startswith("cluster_"))
    with open_store(db) as con:
        reports = ingest_paths(con, files, IngestOptions())
    assert all(r.status == "loaded" for r in reports), reports
    return db


@pytest.fixture(scope="session")
def sample_report(sample_store: Path, tmp_path_factory: pytest.TempPathFactory):
    """The report of sample_store, built once per worker and shared by the tests that read it
    (none may write into its directory: a test that writes copies it or builds its own)."""
    from gpucluster_analysis.report.build import build_report

    messages: list[str] = []
    written = build_report(sample_store, tmp_path_factory.mktemp("sample_report") / "out", log=messages.append)
    assert any("report built" in m for m in messages), messages
    return written


@pytest.fixture(scope="session")
def store_5910(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the four files of ../shared/data/philly-5910."""
    data = require(PHILLY_5910)
    db = tmp_path_factory.mktemp("philly5910") / "s.duckdb"
    with open_store(db) as con:
        reports = ingest_paths(con, sorted(p for p in data.iterdir() if p.name.startswith("cluster_")), IngestOptions())
    assert all(r.status == "loaded" for r in reports), reports
    return db
