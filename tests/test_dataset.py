"""Parquet datasets (issue #11, part 3): `gca export`, `gca ingest --to` shards, `gca report --from`.

The dataset's rows are checked against the store with pyarrow (not gca's reader), and the
report on shards against the report on one store of the same files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.dataset import export_store, layout, open_dataset
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import ExitCode
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.replay.rules import load_quotas
from gpucluster_analysis.report.build import build_report
from tests.test_cli import assert_one_line_error

REPO = Path(__file__).resolve().parent.parent
SYNTHETIC = REPO / "examples" / "synthetic"
SLURM = REPO / "examples" / "slurm"
runner = CliRunner()


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def store_of(db: Path, paths: list[Path], **options: object) -> Path:
    with open_store(db) as con:
        reports = ingest_paths(con, paths, IngestOptions(**options))
    assert all(r.status == "loaded" for r in reports), [r.message for r in reports if r.status != "loaded"]
    return db


def csv_files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("synthetic")
    return store_of(base / "synthetic.duckdb", [SYNTHETIC])


# ---------------------------------------------------------------- export


def test_export_writes_every_row_of_every_table_and_the_same_bytes_twice(synthetic: Path, tmp_path: Path) -> None:
    first = export_store(synthetic, tmp_path / "a")
    export_store(synthetic, tmp_path / "b")
    assert first.shard.name == "synthetic"
    assert files_under(tmp_path / "a") == files_under(tmp_path / "b")
    root = tmp_path / "a"
    manifest = json.loads((root / "_shards" / "synthetic.json").read_text())
    assert manifest["schema_version"] == json.loads((root / "gca-dataset.json").read_text())["schema_version"]
    assert set(json.loads((root / "gca-dataset.json").read_text())["tables"]) == set(layout.canonical_tables())
    with open_store(synthetic, read_only=True) as con:
        stored = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in layout.canonical_tables()}
    for table, rows in stored.items():
        files = sorted(root.glob(layout.table_glob(table)))
        assert [str(p.relative_to(root)) for p in files] == manifest["tables"].get(table, {}).get("files", [])
        read = [tuple(r.values()) for p in files for r in pq.read_table(p).to_pylist()]
        assert sorted(read, key=repr) == rows, table
        assert manifest["tables"].get(table, {}).get("rows", 0) == len(rows)
    # samples by UTC day: every row of a day's file is of that day, and rows are in time order
    days = sorted(root.glob("gpu_samples/day=*/shard=synthetic/data.parquet"))
    assert [p.parts[-3] for p in days] == ["day=2017-11-03", "day=2017-11-04", "day=2017-11-05"]
    for p in days:
        times = pq.read_table(p).column("sample_at").to_pylist()
        assert times == sorted(times) and {t.date().isoformat() for t in times} == {p.parts[-3][4:]}


def test_a_dataset_read_back_holds_what_the_store_holds(synthetic: Path, tmp_path: Path) -> None:
    export_store(synthetic, tmp_path / "d")
    with open_store(synthetic, read_only=True) as store, open_dataset(tmp_path / "d") as dataset:
        for table in (*layout.canonical_tables(), "machine_capacity", "attempt_root_causes"):
            query = f"SELECT * FROM {table}"
            assert sorted(dataset.execute(query).fetchall(), key=repr) == sorted(
                store.execute(query).fetchall(), key=repr
            ), table


# ---------------------------------------------------------------- shards


@pytest.mark.slow  # three stores and three reports compared; the export tests above run by default
def test_two_shards_report_what_one_store_of_every_file_reports(synthetic: Path, tmp_path: Path) -> None:
    """Scheduler log, machine list and job logs in one shard, telemetry in another (named by
    host, pid and time), as two nodes would write them; the report from the shards is the
    report of one store."""
    quotas = SYNTHETIC / "quotas.toml"
    whole = build_report(synthetic, tmp_path / "whole", quotas=load_quotas(quotas))
    dataset = tmp_path / "parquet"
    first = run(
        "ingest",
        SYNTHETIC / "cluster_job_log",
        SYNTHETIC / "cluster_machine_list",
        SYNTHETIC / "logs",
        "--to",
        dataset,
        "--shard",
        "scheduler",
    )
    assert first.exit_code == 0, first.output
    second = run(
        "ingest",
        SYNTHETIC / "cluster_gpu_util",
        SYNTHETIC / "cluster_cpu_util",
        SYNTHETIC / "cluster_mem_util",
        "--to",
        dataset,
    )
    assert second.exit_code == 0, second.output
    shards = sorted(p.stem for p in (dataset / "_shards").glob("*.json"))
    assert len(shards) == 2 and "scheduler" in shards
    # the job logs' jobs are in the other shard: no warning about logs without jobs
    assert "not in the store" not in first.stderr
    result = run("report", "--from", dataset, "--out", tmp_path / "sharded", "--quotas", quotas, "--quiet")
    assert result.exit_code == 0, result.output
    assert csv_files(tmp_path / "sharded") == csv_files(whole.out_dir)
    assert len(csv_files(whole.out_dir)) > 50


@pytest.mark.slow  # two reports of examples/slurm; the Philly shards above stay in the default run
def test_slurm_shards_report_what_one_store_reports(tmp_path: Path) -> None:
    """sacct, sacctmgr, scontrol and job logs in one shard; nvidia-smi and DCGM in one per node
    (gpu_sample_details, GPU bindings, quotas: the tables Philly does not fill)."""
    store = store_of(tmp_path / "slurm.duckdb", [SLURM], zone="America/Los_Angeles")
    whole = build_report(store, tmp_path / "whole")
    dataset = tmp_path / "parquet"
    splits = {
        "scheduler": [SLURM / "sacct.txt", SLURM / "sacctmgr_assoc.txt", SLURM / "scontrol", SLURM / "logs"],
        "gpu001": [SLURM / "gpu" / "gpu001.csv", SLURM / "dcgm" / "gpu001.prom"],
        "gpu002": [SLURM / "gpu" / "gpu002.csv", SLURM / "dcgm" / "gpu002.prom"],
    }
    for shard, paths in splits.items():
        result = run("ingest", *paths, "--tz", "America/Los_Angeles", "--to", dataset, "--shard", shard)
        assert result.exit_code == 0, result.output
    with open_dataset(dataset) as con:
        assert con.execute("SELECT count(*) FROM gpu_sample_details").fetchall()[0][0] > 0
        assert con.execute("SELECT count(DISTINCT file_id) = count(*) FROM ingested_files").fetchall()[0][0]
    result = run("report", "--from", dataset, "--out", tmp_path / "sharded", "--quiet")
    assert result.exit_code == 0, result.output
    assert csv_files(tmp_path / "sharded") == csv_files(whole.out_dir)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of the synthetic trace's scheduler log and machine list (no samples)."""
    base = tmp_path_factory.mktemp("small")
    return store_of(base / "small.duckdb", [SYNTHETIC / "cluster_job_log", SYNTHETIC / "cluster_machine_list"])


def test_a_shard_without_its_manifest_is_not_read(small: Path, tmp_path: Path) -> None:
    root = tmp_path / "d"
    export_store(small, root, shard="done")
    # what a writer that died before its manifest leaves behind
    shutil.copytree(root / "jobs" / "shard=done", root / "jobs" / "shard=dead")
    with open_dataset(root) as con:
        assert con.execute("SELECT count(*) FROM jobs").fetchall() == [(120,)]


def test_export_errors_are_one_line(small: Path, tmp_path: Path) -> None:
    assert_one_line_error(
        run("export", "--db", tmp_path / "none.duckdb", "--to", tmp_path / "d"),
        ExitCode.DATA,
        "none.duckdb: no gca store here",
    )
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    assert_one_line_error(
        run("export", "--db", small, "--to", tmp_path / "other"),
        ExitCode.USAGE,
        "other: not empty and not a gca dataset",
    )
    assert run("export", "--db", small, "--to", tmp_path / "d").exit_code == 0
    assert_one_line_error(
        run("export", "--db", small, "--to", tmp_path / "d"),
        ExitCode.USAGE,
        "d: already holds shard small",
        "--overwrite",
    )
    assert_one_line_error(
        run("export", "--db", small, "--to", tmp_path / "d", "--shard", "../up"),
        ExitCode.USAGE,
        "--shard '../up': not a usable shard name",
    )
    before = files_under(tmp_path / "d")
    replaced = run("export", "--db", small, "--to", tmp_path / "d", "--overwrite")
    assert replaced.exit_code == 0 and "replaced shard small" in replaced.stderr
    assert files_under(tmp_path / "d") == before


def test_ingest_to_and_report_from_errors_are_one_line(small: Path, tmp_path: Path) -> None:
    job_log = SYNTHETIC / "cluster_job_log"
    assert_one_line_error(
        run("ingest", job_log, "--db", tmp_path / "s.duckdb", "--to", tmp_path / "d"),
        ExitCode.USAGE,
        "ingest writes one of them",
    )
    assert_one_line_error(
        run("ingest", job_log, "--shard", "x", "--db", tmp_path / "s.duckdb"), ExitCode.USAGE, "pass --to DIR"
    )
    assert not (tmp_path / "s.duckdb").exists()
    assert_one_line_error(
        run("report", "--from", tmp_path, "--out", tmp_path / "r"),
        ExitCode.USAGE,
        "not a gca dataset (no gca-dataset.json)",
    )
    # the same scheduler log in two shards, or a copy of it: its jobs would count twice
    export_store(small, tmp_path / "d", shard="one")
    assert run("ingest", job_log, "--to", tmp_path / "d", "--shard", "two").exit_code == 0
    assert_one_line_error(
        run("report", "--from", tmp_path / "d", "--out", tmp_path / "r"),
        ExitCode.USAGE,
        f"shards one and two both hold file {job_log} (120 more overlaps)",
    )
    copy = tmp_path / "copy" / "cluster_job_log"
    copy.parent.mkdir()
    shutil.copy(job_log, copy)
    assert run("ingest", copy, "--to", tmp_path / "d", "--shard", "two", "--overwrite").exit_code == 0
    assert_one_line_error(
        run("report", "--from", tmp_path / "d", "--out", tmp_path / "r"),
        ExitCode.USAGE,
        "shards one and two both hold job philly ",
        "(119 more overlaps)",
    )
    # a shard that failed to ingest is not written
    bad = tmp_path / "cluster_gpu_util"
    bad.write_text("time,serial,machine_id\nnot a time,x,y\n")
    result = run("ingest", bad, "--to", tmp_path / "d", "--shard", "three")
    assert result.exit_code != 0 and not (tmp_path / "d" / "_shards" / "three.json").exists()
