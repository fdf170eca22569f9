"""The report's directory (issue #26, 5 and 8): locked while a report writes it, replaced whole.

A report killed midway, or one that fills the disk, must leave the previous report byte for
byte; a second report into the same --out is refused in one line; a directory that holds
more than a report keeps what is not the report's (report/directory.py).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode
from gpucluster_analysis.report import build
from gpucluster_analysis.report.build import build_report
from gpucluster_analysis.report.directory import MARKER, ReportDirectory
from tests.process_helpers import start_gca
from tests.store_helpers import ingest, write
from tests.test_cli import assert_one_line_error
from tests.test_ingest_philly import JOB_LOG

runner = CliRunner()


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two small stores whose reports differ: the same three jobs, their times read in the
    Philly zone and in UTC."""
    base = tmp_path_factory.mktemp("stores")
    log = write(base / "three" / "cluster_job_log", JOB_LOG)
    small, other = base / "small.duckdb", base / "other.duckdb"
    assert ingest(small, log)[0].status == "loaded"
    assert ingest(other, log, zone="UTC")[0].status == "loaded"
    return {"small": small, "other": other}


@pytest.fixture(scope="module")
def other_report(stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of the other store, written into a new directory."""
    out = tmp_path_factory.mktemp("other") / "report"
    build_report(stores["other"], out)
    return out


@pytest.fixture(scope="module")
def previous(stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of the small store: what a test's --out holds before."""
    out = tmp_path_factory.mktemp("previous") / "report"
    build_report(stores["small"], out)
    return out


@pytest.fixture
def out(previous: Path, tmp_path: Path) -> Path:
    target = tmp_path / "report"
    shutil.copytree(previous, target)
    return target


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def beside(out: Path) -> list[str]:
    """What gca keeps beside the directory while a report writes (lock, new and old directories)."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.gca-"))


def csv_bytes(directory: Path) -> dict[str, bytes]:
    """The CSV tables and the marker (index.html says when it was generated)."""
    return {name: data for name, data in files(directory).items() if name != "index.html"}


# SIGKILL in the default run; SIGTERM, the same checks, in the slow run
@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_a_killed_report_leaves_the_previous_one_byte_identical(
    sig: signal.Signals, stores: dict[str, Path], other_report: Path, out: Path, tmp_path: Path
) -> None:
    """Reproduction:
    gca report --db a.duckdb --out r
    gca report --db b.duckdb --out r & sleep 20; kill -KILL $!   # while it writes its CSVs
    # was: r held b's first CSVs beside a's index.html and other CSVs: a directory that
    # looks complete and mixes two stores
    """
    before = files(out)
    gca = start_gca(
        ["report", "--db", stores["other"], "--out", out, "--quiet"],
        tmp_path,
        stop=("gpucluster_analysis.report.build", "csv_text", 5, "before"),
    )
    try:
        gca.wait_stopped()
        assert files(out) == before
        (new,) = [out.parent / name for name in beside(out) if ".gca-new-" in name]
        assert len(list(new.glob("*.csv"))) == 4  # midway through writing the new report
        assert (new / "jobs.csv").read_bytes() != before["jobs.csv"]  # another store's
        assert out.with_name(f".{out.name}.gca-lock").is_file()
        code, _, err = gca.signal(sig)
    finally:
        gca.kill_all()
    assert files(out) == before
    if sig == signal.SIGTERM:
        assert code == ExitCode.INTERRUPTED and err.strip().splitlines()[-1] == "gca: interrupted (SIGTERM)"
        assert beside(out) == []
    else:  # the new directory and the lock file stay, the lock with its process gone
        assert code == -signal.SIGKILL and beside(out) == sorted([new.name, f".{out.name}.gca-lock"])
    # the next report is not blocked by the lock file, and removes what the killed one left
    build_report(stores["other"], out)
    assert beside(out) == [] and csv_bytes(out) == csv_bytes(other_report)


def test_a_report_that_fills_the_disk_leaves_the_previous_one(
    stores: dict[str, Path], out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reproduction:
    gca report --db big.duckdb --out r    # the disk fills while it writes jobs.csv and the rest
    # was: r held the new CSVs written before the disk filled, beside the old ones and index.html
    """
    before = files(out)
    written = []
    real = build.csv_text

    def filling(df, **options):
        if len(written) == 4:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(1)
        return real(df, **options)

    monkeypatch.setattr(build, "csv_text", filling)
    result = runner.invoke(app, ["report", "--db", str(stores["other"]), "--out", str(out), "--quiet"])
    assert_one_line_error(
        result, ExitCode.DATA, f"{out}: cannot write the report: No space left on device", "the disk is not full"
    )
    assert files(out) == before and beside(out) == []


def test_a_second_report_into_the_same_out_is_refused_naming_the_lock(stores: dict[str, Path], out: Path) -> None:
    """Reproduction:
    gca report --db a.duckdb --out r & gca report --db b.duckdb --out r
    # was: both wrote r at once, each file from whichever finished it last
    """
    before = files(out)
    lock = out.with_name(f".{out.name}.gca-lock")
    with ReportDirectory(out):
        result = runner.invoke(app, ["report", "--db", str(stores["other"]), "--out", str(out), "--quiet"])
        assert_one_line_error(
            result,
            ExitCode.DATA,
            f"{out}: another gca report is writing there",
            f"process {os.getpid()} on",
            f"lock file {lock}",
            "pass another --out",
            "the lock ends with its process",
        )
        assert files(out) == before
    assert not lock.exists()
    again = runner.invoke(app, ["report", "--db", str(stores["other"]), "--out", str(out), "--quiet"])
    assert again.exit_code == 0, again.output
    assert files(out) != before and beside(out) == []


def test_a_report_directory_is_replaced_whole(stores: dict[str, Path], out: Path) -> None:
    """A file of the previous report that this one does not write (comparison.csv of a report
    with a baseline) goes with it; the directory's permissions stay."""
    (out / "comparison.csv").write_text("metric,baseline\njobs,3\n")
    marker = json.loads((out / MARKER).read_text())
    (out / MARKER).write_text(json.dumps({**marker, "files": [*marker["files"], "comparison.csv"]}))
    out.chmod(0o750)
    inode = out.stat().st_ino
    written = build_report(stores["other"], out)
    assert not (out / "comparison.csv").exists()
    names = sorted(files(out))
    assert names == sorted([MARKER, "index.html", *(p.name for p in written.tables)])
    assert json.loads((out / MARKER).read_text())["files"] == [*(p.name for p in written.tables), "index.html"]
    assert out.stat().st_ino != inode and out.stat().st_mode & 0o777 == 0o750
    assert beside(out) == []


def test_a_directory_with_other_files_keeps_them(stores: dict[str, Path], out: Path) -> None:
    """A directory that holds more than a report (the user's notes, a CSV of their own) is not
    replaced: the report's files are moved into it, the previous report's other files removed."""
    (out / "notes.txt").write_text("mine\n")
    (out / "my_table.csv").write_text("vc,gpus\n")
    (out / "comparison.csv").write_text("metric,baseline\njobs,3\n")
    marker = json.loads((out / MARKER).read_text())
    (out / MARKER).write_text(json.dumps({**marker, "files": [*marker["files"], "comparison.csv"]}))
    inode = out.stat().st_ino
    written = build_report(stores["other"], out)
    assert out.stat().st_ino == inode
    assert (out / "notes.txt").read_text() == "mine\n" and (out / "my_table.csv").read_text() == "vc,gpus\n"
    assert not (out / "comparison.csv").exists()
    assert sorted(files(out)) == sorted(
        [MARKER, "index.html", "notes.txt", "my_table.csv", *(p.name for p in written.tables)]
    )
    assert [p.name for p in out.iterdir() if p.is_dir()] == [] and beside(out) == []


def test_the_working_directory_is_written_in_place(
    stores: dict[str, Path], other_report: Path, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--out .`: renaming the directory the user works in would move them with it."""
    monkeypatch.chdir(out)
    inode = out.stat().st_ino
    result = runner.invoke(app, ["report", "--db", str(stores["other"]), "--out", ".", "--quiet"])
    assert result.exit_code == 0, result.output
    assert out.stat().st_ino == inode and Path.cwd().resolve() == out.resolve()
    assert csv_bytes(out) == csv_bytes(other_report)


def test_a_report_killed_between_the_swaps_two_renames_is_put_back(previous: Path, tmp_path: Path) -> None:
    """Killed after the old directory was renamed away and before the new one took its name:
    the next report into it finds no directory, and puts the previous report back first."""
    out = tmp_path / "report"
    shutil.copytree(previous, tmp_path / f".report.gca-old-{os.getpid() + 1}")
    (tmp_path / f".report.gca-new-{os.getpid() + 1}").mkdir()
    with ReportDirectory(out):
        assert files(out) == files(previous)
        assert beside(out) == [".report.gca-lock"]
    assert beside(out) == []


def test_where_gca_cannot_write_beside_the_directory_it_locks_and_writes_inside(
    stores: dict[str, Path], other_report: Path, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A web server's folder that the user may write but not its parent: the lock goes
    inside it, and the report is moved in file by file (no directory can be made beside it)."""
    real = ReportDirectory._open_locked
    taken = []

    def refused_beside(self: ReportDirectory, path: Path) -> int:
        if path.parent == out.parent:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        taken.append(path)
        return real(self, path)

    monkeypatch.setattr(ReportDirectory, "_open_locked", refused_beside)
    inode = out.stat().st_ino
    build_report(stores["other"], out)
    assert taken == [out / ".gca-lock"] and not taken[0].exists()
    assert out.stat().st_ino == inode and csv_bytes(out) == csv_bytes(other_report) and beside(out) == []
