"""Rejects that group by kind, files that store nothing, and Git LFS pointers (issue #11, part 1)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.db import open_store
from gpucluster_analysis.db.queries import run_query
from gpucluster_analysis.errors import ExitCode, LfsPointerError
from tests.conftest import SHARED_DATA, require
from tests.store_helpers import ingest, rows

PAI_POINTER = SHARED_DATA / "public-traces" / "alibaba-pai-2020" / "pai_job_table.tar.gz"
HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"


def helios_file(path: Path, bad_rows: int) -> Path:
    """One good job and `bad_rows` jobs whose GPU count is not a number (each its own value)."""
    good = "1,uA,vc1,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0"
    bad = [
        f"{2 + i},uA,vc1,x{i}y,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0"
        for i in range(bad_rows)
    ]
    path.write_text("\n".join([HELIOS_HEADER, good, *bad]) + "\n")
    return path


def test_rejects_with_their_own_values_group_into_one_kind(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, helios_file(tmp_path / "cluster_log.csv", 300))
    assert (report.rows, report.rejects) == (1, 300)
    distinct = rows(db, "SELECT count(DISTINCT reason) FROM rejects")[0][0]
    assert distinct == 300  # every reason names its row's own value
    with open_store(db, read_only=True) as con:
        by_file = run_query(con, "rejects_by_file").to_dicts()
        examples = run_query(con, "reject_examples").to_dicts()
    (row,) = [r for r in by_file if r["rejects"]]
    # one kind, counted once, with its first line; short however many rows
    assert row["reasons"].count("(300, first at line 3)") == 1 and ";" not in row["reasons"]
    assert "…" in row["reasons"] and len(row["reasons"]) < 200
    assert [(e["line"], e["kind"] == row["reasons"].rsplit(" (", 1)[0]) for e in examples] == [
        (3, True),
        (4, True),
        (5, True),
    ]
    assert "x0y" in examples[0]["reason"] + examples[0]["text"]


def test_a_file_that_stores_nothing_fails_and_names_the_cause(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = tmp_path / "cluster_log.csv"
    path.write_text(
        helios_file(tmp_path / "x.csv", 4)
        .read_text()
        .replace("\n1,uA,vc1,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0", "")
    )
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(db)])
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "every row was rejected, nothing stored (4 rows); the likely cause, in all:" in result.output
    assert "Traceback" not in result.output
    # the store is as it was: no file, no rejects
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(0,)]
    assert rows(db, "SELECT count(*) FROM rejects") == [(0,)]


def test_a_git_lfs_pointer_is_named_with_the_command_that_fetches_it(tmp_path: Path) -> None:
    pointer = require(PAI_POINTER)
    db = tmp_path / "s.duckdb"
    with pytest.raises(
        LfsPointerError,
        match=r"pai_job_table.tar.gz: a Git LFS pointer \(133 bytes of text\), not the"
        r" data \(62,065,432 bytes\)",
    ) as caught:
        ingest(db, pointer)
    assert (
        caught.value.hint
        == "fetch it in its repository: git lfs install && git lfs pull --include 'pai_job_table.tar.gz'"
    )
    # the same pointer named like a gzip CSV or a plain CSV: never "damaged gzip" or "not a format"
    for name in ("openb_pod_list_default.csv.gz", "openb_pod_list_default.csv"):
        copy = tmp_path / name
        shutil.copyfile(pointer, copy)
        with pytest.raises(LfsPointerError, match="a Git LFS pointer"):
            ingest(db, copy)
    # in a folder: skipped with the same words, the rest ingested
    folder = tmp_path / "clone"
    folder.mkdir()
    shutil.copyfile(pointer, folder / "pai_job_table.tar.gz")
    helios_file(folder / "cluster_log.csv", 0)
    result = CliRunner().invoke(app, ["ingest", str(folder), "--db", str(tmp_path / "f.duckdb")])
    assert result.exit_code == 0, result.output
    assert "a Git LFS pointer (133 bytes of text)" in result.output and "git lfs pull" in result.output
    assert rows(tmp_path / "f.duckdb", "SELECT count(*) FROM jobs") == [(1,)]
    # a real gzip file is still read as one
    packed = tmp_path / "cluster_log.csv.gz"
    packed.write_bytes(gzip.compress(helios_file(tmp_path / "y.csv", 0).read_bytes()))
    (report,) = ingest(tmp_path / "g.duckdb", packed)
    assert report.status == "loaded" and report.rows == 1


def test_a_file_of_absurd_rows_only_fails_naming_the_bound(tmp_path: Path) -> None:
    """Issue #26: a file whose every row is absurd stores nothing and fails, as any file whose
    every row is rejected; its error names the bound as the likely cause."""
    path = tmp_path / "cluster_log.csv"
    path.write_text(
        HELIOS_HEADER
        + "\n"
        + "".join(
            f"{n},uA,vc1,{10**9 + n},1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,0,0\n"
            for n in range(3)
        )
    )
    db = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(db)])
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "every row was rejected, nothing stored (3 rows)" in result.output
    assert "over the bound of 1,024 GPUs per node (--max-gpus-per-node)" in result.output
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(0,)]
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(db), "--max-gpus-per-node", "32768"])
    assert result.exit_code == ExitCode.USAGE  # a billion GPUs are past any bound gca takes
    # nodes of 2,000 GPUs: past the default bound, within the one given
    path.write_text(path.read_text().replace(",1000000000,", ",2000,", 1))
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(db), "--max-gpus-per-node", "2000"])
    assert result.exit_code == ExitCode.OK, result.output
    assert rows(db, "SELECT job_id, requested_gpus FROM jobs") == [("0", 2000.0)]


def test_the_year_window_is_written_in_one_place() -> None:
    """The years every reader holds times to are bounds.py's, handed to the SQL as parameters:
    no script or module writes them again (they were written three times)."""
    from gpucluster_analysis.bounds import FIRST_YEAR, LAST_YEAR

    root = Path(__file__).resolve().parent.parent
    files = [*root.glob("gpucluster_analysis/**/*.py"), *root.glob("sql/**/*.sql")]
    again = [
        str(f.relative_to(root))
        for f in files
        if f.name != "bounds.py"
        and any(str(y) in f.read_text(encoding="utf-8") for y in (FIRST_YEAR, LAST_YEAR, LAST_YEAR + 1))
    ]
    assert files and again == []
