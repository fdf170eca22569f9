"""`gca report --engine spark` (issue #11, part 3): the heavy queries translated to Spark SQL.

The Spark tests run PySpark in local mode (local[2]), one session for the module, and are
skipped where PySpark or Java is missing (the test extra installs PySpark; `.ci/run` installs
Java). They compare every CSV of `gca report --engine spark` with `--engine duckdb` on the
same Parquet dataset: the examples and a small `gca synth` trace; and once through
`spark-submit` to a real standalone cluster (a master and a worker on 127.0.0.1, started and
stopped by the fixture), as the README runs it on a cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode
from tests.test_cli import assert_one_line_error

REPO = Path(__file__).resolve().parent.parent
# name -> (gca ingest arguments, or None: the small gca synth trace below; gca report arguments)
TRACES = {
    "synthetic": ([str(REPO / "examples" / "synthetic")], []),
    "slurm": ([str(REPO / "examples" / "slurm"), "--tz", "America/Los_Angeles"], []),
    # a period set beside a baseline: two passes, and the period's samples (period_* views)
    "synth": (
        None,
        [
            "--baseline-since",
            "2017-11-03T07:00Z",
            "--baseline-until",
            "2017-11-03T12:00Z",
            "--since",
            "2017-11-03T12:00Z",
        ],
    ),
}
# Slurm format (nvidia-smi, DCGM profiling, scontrol, job logs), from 2017-11-03 00:00 Los
# Angeles time (07:00 UTC) for half a day; small for speed.
SYNTH = ["--format", "slurm", "--jobs", "60", "--machines", "4", "--days", "0.5", "--seed", "11"]


def test_engine_spark_without_pyspark_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now fails
    result = CliRunner().invoke(
        app, ["report", "--from", str(tmp_path), "--engine", "spark", "--out", str(tmp_path / "r")]
    )
    assert_one_line_error(
        result, ExitCode.USAGE, "--engine spark needs pyspark", 'pip install "gpucluster-analysis[spark]"'
    )


def test_engine_is_duckdb_or_spark(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "--db", str(tmp_path / "s.duckdb"), "--engine", "polars"])
    assert_one_line_error(result, ExitCode.DATA, "--engine polars: not an engine gca knows")


def test_translation_keeps_duckdb_meaning() -> None:
    pytest.importorskip("sqlglot")
    from gpucluster_analysis.spark.translate import to_spark

    sql = to_spark(
        "SELECT epoch_us(t) // 3600000000 AS h, CAST(x * 10 AS BIGINT) AS r, CAST(n AS BIGINT) AS n,"
        " sum(TRY_CAST(x * 1e9 AS BIGINT)) AS s, unnest(range(1, 4)) AS k FROM v GROUP BY ALL"
    )
    flat = " ".join(sql.split())
    assert "UNIX_MICROS(t) DIV 3600000000" in flat
    assert "CAST(RINT(x * 10) AS BIGINT)" in flat  # DuckDB rounds half to even; Spark would truncate
    assert "CAST(n AS BIGINT)" in flat  # a column is cast as it is
    assert "SUM(TRY_CAST(RINT(x * 1e9) AS DECIMAL(38, 0)))" in flat  # exact, as DuckDB's 128-bit sum
    assert "EXPLODE(SEQUENCE(1, 3))" in flat  # range's end is excluded, sequence's is not


def test_translation_divides_doubles_as_duckdb_does() -> None:
    """DuckDB's `/` is a DOUBLE whatever its operands; Spark would divide a DECIMAL as a DECIMAL."""
    pytest.importorskip("sqlglot")
    from gpucluster_analysis.spark.translate import to_spark

    flat = " ".join(to_spark("SELECT 100.0 * count(*) / nullif(count(x), 0) AS p, n // 2 AS h FROM v").split())
    assert "CAST(100.0 * COUNT(*) AS DOUBLE) / NULLIF(COUNT(x), 0) AS p" in flat
    assert "n DIV 2 AS h" in flat  # integer division stays integral


def test_translation_refuses_parameters_and_lists_what_a_query_reads() -> None:
    pytest.importorskip("sqlglot")
    from gpucluster_analysis.spark.translate import tables_read, to_spark

    with pytest.raises(ValueError, match="parameters"):
        to_spark("SELECT * FROM v WHERE x > $limit")
    assert tables_read("WITH a AS (SELECT * FROM t1) SELECT * FROM a JOIN t2 USING (k), (SELECT 1 FROM t3)") == {
        "t1",
        "t2",
        "t3",
    }


QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _java() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and Path(home, "bin", "java").exists()))


@pytest.fixture(scope="module")
def spark():
    """One local session for the module; SparkEngine takes the active session as the caller's."""
    pytest.importorskip("pyspark")
    pytest.importorskip("sqlglot")
    if not _java():
        pytest.skip("no Java runtime (Spark needs 17 or newer)")
    from pyspark.sql import SparkSession

    # Tuned for seconds-long runs over KBs: the JVM's quick compiler only, no adaptive
    # re-planning between stages, two shuffle partitions (halves the module's time).
    session = (
        SparkSession.builder.master("local[2]")
        .appName("gca tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.extraJavaOptions", QUICK_JVM)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _invoke(*args: str) -> None:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.mark.spark
@pytest.mark.parametrize("trace", sorted(TRACES))
def test_spark_report_equals_duckdb_report(spark, trace: str, tmp_path: Path) -> None:
    """Every CSV of the report (jobs.csv and each table) from `--engine spark` and from
    `--engine duckdb`, byte for byte, on the same Parquet dataset."""
    ingest, options = TRACES[trace]
    if ingest is None:
        _invoke("synth", "--out", str(tmp_path / "trace"), *SYNTH)
        ingest = [str(tmp_path / "trace"), "--tz", json.loads((tmp_path / "trace" / "truth.json").read_text())["zone"]]
    _invoke("ingest", *ingest, "--to", str(tmp_path / "d"))
    for engine in ("duckdb", "spark"):
        _invoke(
            "report",
            "--from",
            str(tmp_path / "d"),
            "--engine",
            engine,
            "--out",
            str(tmp_path / engine),
            "--quiet",
            *options,
        )
    csvs = sorted(p.name for p in (tmp_path / "duckdb").glob("*.csv"))
    assert csvs == sorted(p.name for p in (tmp_path / "spark").glob("*.csv")) and len(csvs) > 50
    assert [n for n in csvs if (tmp_path / "spark" / n).read_bytes() != (tmp_path / "duckdb" / n).read_bytes()] == []
    # what Spark computed is there to compare: samples attributed to jobs, host samples binned
    jobs = (tmp_path / "duckdb" / "jobs.csv").read_text().splitlines()
    assert len(jobs) > 30
    header = jobs[0].split(",")
    assert any(row.split(",")[header.index("util_samples")] not in ("", "0") for row in jobs[1:])
    host = (tmp_path / "duckdb" / "host_util_cdf_by_activity.csv").read_text().splitlines()
    assert len(host) > 1 or trace != "synthetic"
    assert (tmp_path / "duckdb" / "comparison.csv").exists() == bool(options)


def _spark_bin(name: str) -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    script = Path(pyspark.__file__).parent / "bin" / name
    return script if script.exists() else (Path(found) if (found := shutil.which(name)) else None)


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory: pytest.TempPathFactory):
    """A real Spark standalone cluster on 127.0.0.1: a master and one worker (its executors
    are JVMs of their own), started from PySpark's own Spark and stopped by PID."""
    spark_class = _spark_bin("spark-class")
    if spark_class is None or _spark_bin("spark-submit") is None or not _java():
        pytest.skip("PySpark's spark-class/spark-submit or Java is missing")
    from tests.test_ingest_prometheus import free_port

    work = tmp_path_factory.mktemp("spark-standalone")
    # the daemons and executors with the JVM's quick compiler only, as the session fixture
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(work),
        "SPARK_WORKER_DIR": str(work),
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
        "SPARK_DAEMON_MEMORY": "256m",
    }
    port, ui = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    processes = [
        subprocess.Popen(
            [
                str(spark_class),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
            env=env,
            stdout=(work / "master.log").open("w"),
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        processes.append(
            subprocess.Popen(
                [
                    str(spark_class),
                    "org.apache.spark.deploy.worker.Worker",
                    master_url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "2",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(work),
                ],
                env=env,
                stdout=(work / "worker.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        deadline = time.monotonic() + 120
        while True:  # the master's status page counts the workers registered with it
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as answer:
                    if json.load(answer).get("aliveworkers", 0) >= 1:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                pytest.fail(
                    "the standalone Spark did not come up: "
                    + (work / "master.log").read_text()[-2000:]
                    + (work / "worker.log").read_text()[-2000:]
                )
            time.sleep(0.5)
        yield master_url, work
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.mark.spark
def test_spark_submit_to_a_standalone_cluster_runs_the_readme_command(
    standalone_master: tuple[str, Path], tmp_path: Path
) -> None:
    """The README's cluster command, `spark-submit --master spark://... <gca's __main__.py>
    report --engine spark` (gca sets no master: spark-submit's is used), against a real
    standalone master and worker: the same CSVs as the DuckDB engine on the same dataset."""
    import gpucluster_analysis.__main__ as entry

    master, worker_dir = standalone_master
    _invoke("ingest", str(REPO / "examples" / "synthetic"), "--to", str(tmp_path / "d"))
    _invoke("report", "--from", str(tmp_path / "d"), "--out", str(tmp_path / "duckdb"), "--quiet")
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    run = subprocess.run(
        [
            str(_spark_bin("spark-submit")),
            "--master",
            master,
            "--deploy-mode",
            "client",
            "--executor-memory",
            "1g",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            "--conf",
            "spark.sql.adaptive.enabled=false",
            "--driver-java-options",
            QUICK_JVM,
            "--conf",
            f"spark.executor.extraJavaOptions={QUICK_JVM}",
            entry.__file__,
            "report",
            "--from",
            str(tmp_path / "d"),
            "--engine",
            "spark",
            "--out",
            str(tmp_path / "spark"),
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert list(worker_dir.glob("app-*/*/stderr")), "no executor ran on the standalone worker"
    csvs = sorted(p.name for p in (tmp_path / "duckdb").glob("*.csv"))
    assert len(csvs) > 50 and csvs == sorted(p.name for p in (tmp_path / "spark").glob("*.csv"))
    assert [n for n in csvs if (tmp_path / "spark" / n).read_bytes() != (tmp_path / "duckdb" / n).read_bytes()] == []
