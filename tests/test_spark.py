"""`gca report --engine spark` (issue #11, part 3): the heavy queries translated to Spark SQL.

The Spark tests run PySpark in local mode (local[2]), one session for the module, and are
skipped where PySpark or Java is missing (CI installs neither yet). They compare what
Spark computes with what DuckDB computes from the same Parquet dataset.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.dataset import export_store, open_dataset
from gpucluster_analysis.dataset.layout import read_dataset
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import ExitCode
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.report.tables import format_for_csv, jobs_table, prepare
from tests.test_cli import assert_one_line_error

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = {"synthetic": (REPO / "examples" / "synthetic", {}),
            "slurm": (REPO / "examples" / "slurm", {"zone": "America/Los_Angeles"})}


def test_engine_spark_without_pyspark_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now fails
    result = CliRunner().invoke(app, ["report", "--from", str(tmp_path), "--engine", "spark", "--out", str(tmp_path / "r")])
    assert_one_line_error(result, ExitCode.USAGE, "--engine spark needs pyspark", 'pip install "gpucluster-analysis[spark]"')


def test_engine_is_duckdb_or_spark(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "--db", str(tmp_path / "s.duckdb"), "--engine", "polars"])
    assert_one_line_error(result, ExitCode.DATA, "--engine polars: not an engine gca knows")


def test_translation_keeps_duckdb_meaning() -> None:
    pytest.importorskip("sqlglot")
    from gpucluster_analysis.spark.translate import to_spark

    sql = to_spark("SELECT epoch_us(t) // 3600000000 AS h, CAST(x * 10 AS BIGINT) AS r, CAST(n AS BIGINT) AS n,"
                   " sum(TRY_CAST(x * 1e9 AS BIGINT)) AS s, unnest(range(1, 4)) AS k FROM v GROUP BY ALL")
    flat = " ".join(sql.split())
    assert "UNIX_MICROS(t) DIV 3600000000" in flat
    assert "CAST(RINT(x * 10) AS BIGINT)" in flat  # DuckDB rounds half to even; Spark would truncate
    assert "CAST(n AS BIGINT)" in flat  # a column is cast as it is
    assert "SUM(TRY_CAST(RINT(x * 1e9) AS DECIMAL(38, 0)))" in flat  # exact, as DuckDB's 128-bit sum
    assert "EXPLODE(SEQUENCE(1, 3))" in flat  # range's end is excluded, sequence's is not


def _java() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and Path(home, "bin", "java").exists()))


@pytest.fixture(scope="module")
def spark():  # type: ignore[no-untyped-def]
    pytest.importorskip("pyspark")
    pytest.importorskip("sqlglot")
    if not _java():
        pytest.skip("no Java runtime (Spark needs 17 or newer)")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("gca tests")
               .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.mark.spark
@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_spark_attributes_samples_as_duckdb_does(spark, example: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """attributed_util (every sample matched to its job's attempt windows, summed per job and
    binned per cohort) and jobs.csv, from Spark and from DuckDB on the same dataset."""
    from gpucluster_analysis.spark.engine import SparkEngine

    path, options = EXAMPLES[example]
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        assert all(r.status == "loaded" for r in ingest_paths(con, [path], IngestOptions(**options)))
    export_store(db, tmp_path / "d")
    results = {}
    for engine in ("duckdb", "spark"):
        with open_dataset(tmp_path / "d") as con:
            if engine == "spark":
                with SparkEngine(tmp_path / "d", read_dataset(tmp_path / "d"), session=spark) as session:
                    prepare(con, heavy=session.heavy_tables())
            else:
                prepare(con)
            rows = con.execute("SELECT * FROM attributed_util ORDER BY ALL").fetchall()
            results[engine] = (rows, format_for_csv(jobs_table(con)).rows())
    assert results["spark"][0] == results["duckdb"][0]
    assert len(results["duckdb"][0]) > 50 and any(r[3] for r in results["duckdb"][0])
    assert results["spark"][1] == results["duckdb"][1]
