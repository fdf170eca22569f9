"""What a folder given to `gca ingest` may hold that is no input: nothing at all, files gca
does not read, symbolic links to nothing (issue #26, item 8). Never a silent success, never
one bad entry failing the rest."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode, NothingToIngestError
from gpucluster_analysis.ingest.plan import DANGLING_LINK
from tests.store_helpers import ingest, rows, write
from tests.test_cli import assert_one_line_error
from tests.test_ingest_philly import JOB_LOG


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_an_empty_folder_is_exit_1_naming_it(tmp_path: Path) -> None:
    """mkdir /tmp/empty; gca ingest /tmp/empty exited 0 with "nothing to ingest": a cron job
    over a path whose disk was not mounted never noticed."""
    empty = tmp_path / "mnt" / "cluster"
    empty.mkdir(parents=True)
    (empty / ".keep").write_text("")  # hidden files are never read: the folder still holds nothing
    db = tmp_path / "s.duckdb"
    log = write(tmp_path / "first" / "cluster_job_log", JOB_LOG)
    assert run("ingest", log, "--db", db).exit_code == 0
    before = rows(db, "SELECT count(*) FROM ingested_files")
    result = run("ingest", empty, "--db", db)
    assert_one_line_error(result, ExitCode.DATA, f"{empty}: nothing to ingest, an empty folder", "mounted")
    assert rows(db, "SELECT count(*) FROM ingested_files") == before


def test_folders_of_files_gca_does_not_read_are_exit_1_with_the_files_listed(tmp_path: Path) -> None:
    notes = write(tmp_path / "a" / "notes.txt", "hello\n")
    write(tmp_path / "a" / "sub" / "readme.md", "# hi\n")
    (tmp_path / "b").mkdir()
    result = run("ingest", tmp_path / "a", tmp_path / "b", "--db", tmp_path / "s.duckdb")
    assert_one_line_error(
        result,
        ExitCode.DATA,
        f"{tmp_path / 'a'}, {tmp_path / 'b'}: nothing to ingest, none of their 2 files is one gca reads",
        "--format",
    )
    assert f"skipped 2 files, each not a format gca reads: {notes}" in result.stderr


def test_an_empty_folder_beside_files_gca_reads_is_no_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    log = write(tmp_path / "trace" / "cluster_job_log", JOB_LOG)
    result = run("ingest", tmp_path / "empty", log, "--db", tmp_path / "s.duckdb")
    assert result.exit_code == 0, result.output
    # JOB_LOG stores three jobs (job_a, job_b, job_e: test_ingest_philly reads it row by row)
    assert rows(tmp_path / "s.duckdb", "SELECT count(*) FROM jobs") == [(3,)]


def test_the_library_raises_for_a_folder_holding_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    with pytest.raises(NothingToIngestError, match="an empty folder"):
        ingest(tmp_path / "s.duckdb", empty)


def test_a_link_to_nothing_inside_a_folder_is_skipped_and_listed(tmp_path: Path) -> None:
    """A dangling symlink in a folder aborted the whole ingest. Both links here would be read
    if they led somewhere: one by its name (a Philly file), one by its path (a Slurm job log)."""
    trace = tmp_path / "trace"
    write(trace / "cluster_job_log", JOB_LOG)
    (trace / "cluster_gpu_util").symlink_to(tmp_path / "gone" / "cluster_gpu_util")
    (trace / "slurm-42.out").symlink_to("slurm-42.out.moved")
    db = tmp_path / "s.duckdb"
    result = run("ingest", trace, "--db", db)
    assert result.exit_code == 0, result.output
    assert (
        f"skipped 2 files, each {DANGLING_LINK}: {trace / 'cluster_gpu_util'}, {trace / 'slurm-42.out'}"
        in result.stderr
    )
    assert rows(db, "SELECT format FROM ingested_files") == [("philly_job_log",)]
    assert rows(db, "SELECT count(*) FROM jobs") == [(3,)]
    # named explicitly, a link to nothing is a missing file, as before
    assert_one_line_error(
        run("ingest", trace / "cluster_gpu_util", "--db", db), ExitCode.USAGE, "no such file or directory"
    )


def test_a_folder_of_only_links_to_nothing_is_exit_1(tmp_path: Path) -> None:
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "cluster_job_log").symlink_to(tmp_path / "gone")
    result = run("ingest", tmp_path / "trace", "--db", tmp_path / "s.duckdb")
    assert_one_line_error(result, ExitCode.DATA, "nothing to ingest, its only file is not one gca reads")
    assert DANGLING_LINK in result.stderr
