"""The command line: help, exit codes, one-line errors on stderr, no tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode
from tests.test_ingest_philly import GPU_UTIL, JOB_LOG

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def assert_one_line_error(result, code: ExitCode, *fragments: str) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("gca: error:")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0]


@pytest.mark.parametrize("command", [[], ["ingest"], ["report"], ["export"], ["synth"], ["classify"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0
    assert "Exit codes" in result.stdout
    assert "Example:" in result.stdout or not command


def test_help_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys; from gpucluster_analysis.cli import app; "
        "print(sorted(m for m in ('duckdb', 'polars', 'plotly', 'scipy', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_entry_point_runs_as_a_module() -> None:
    out = subprocess.run([sys.executable, "-m", "gpucluster_analysis", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("gca ")


def test_gca_as_a_process_exits_with_its_code_and_every_output_whole(tmp_path: Path) -> None:
    """`gca` ends its process without Python's teardown (cli.main): what it stored, wrote
    and printed is whole, and the exit codes are the commands' own."""
    import json

    import duckdb

    gca = [sys.executable, "-m", "gpucluster_analysis"]
    log = tmp_path / "cluster_job_log"
    log.write_text(JOB_LOG)
    db, out = tmp_path / "s.duckdb", tmp_path / "report"
    ingest = subprocess.run([*gca, "ingest", str(log), "--db", str(db)], capture_output=True, text=True)
    assert ingest.returncode == ExitCode.OK and "philly_job_log" in ingest.stderr
    report = subprocess.run(
        [*gca, "report", "--db", str(db), "--out", str(out), "--json"], capture_output=True, text=True
    )
    assert report.returncode == ExitCode.OK, report.stderr
    headline = json.loads(report.stdout)  # the whole JSON reached the pipe
    with duckdb.connect(str(db), read_only=True) as con:  # the store is whole and closed
        stored = con.execute("SELECT count(*) FROM jobs").fetchall()[0][0]
    # JOB_LOG stores three jobs (job_a, job_b, job_e: test_ingest_philly reads it row by row)
    assert headline["overview"]["jobs"] == stored == 3
    assert (out / "index.html").read_text().rstrip().endswith("</html>")
    assert sum(1 for _ in (out / "jobs.csv").open()) == 3 + 1
    bad = subprocess.run(
        [*gca, "ingest", str(tmp_path / "missing.txt"), "--db", str(db)], capture_output=True, text=True
    )
    assert bad.returncode == ExitCode.USAGE and bad.stderr.count("gca: error:") == 1
    usage = subprocess.run([*gca, "ingest", "--no-such-option"], capture_output=True, text=True)
    assert usage.returncode == 2 and "No such option" in usage.stderr


def test_main_ends_the_process_at_once_unless_work_still_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading

    from gpucluster_analysis import cli

    class Ended(Exception):
        pass

    def exit_now(code: int) -> None:
        raise Ended(code)

    ran: list[str] = []
    monkeypatch.setattr(cli.os, "_exit", exit_now)
    monkeypatch.setattr(cli.atexit, "_run_exitfuncs", lambda: ran.append("atexit"))
    for argv, code in ((["gca", "--version"], 0), (["gca", "ingest", "--no-such-option"], 2)):
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(Ended) as ended:
            cli.main()
        assert ended.value.args == (code,) and ran.pop() == "atexit"
    assert capsys.readouterr().out.startswith("gca ")
    # a thread that still works: the ordinary exit, which waits for it
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        monkeypatch.setattr(sys, "argv", ["gca", "--version"])
        with pytest.raises(SystemExit) as exited:
            cli.main()
        assert exited.value.code == 0 and not ran
    finally:
        release.set()
        worker.join()


def test_ingest_then_summary_on_stderr_and_nothing_on_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster_analysis.analyze import kept

    monkeypatch.setattr(kept, "KEEP_MIN_SAMPLES", 0)  # keep the report's heaviest results even of this store
    log = tmp_path / "cluster_job_log"
    log.write_text(JOB_LOG)
    result = run("ingest", str(log), "--db", str(tmp_path / "s.duckdb"))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "philly_job_log" in result.stderr
    assert "rejected cluster_job_log:17" in result.stderr.replace(str(tmp_path) + "/", "")
    assert "kept the report's sample attribution" in result.stderr
    again = run("ingest", str(log), "--db", str(tmp_path / "s.duckdb"))
    assert again.exit_code == 0 and "unchanged" in again.stderr
    assert "kept" not in again.stderr  # the store did not change: what it kept still holds


def test_unknown_file_exits_2_and_stores_nothing(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    result = run("ingest", str(notes), "--db", str(tmp_path / "s.duckdb"))
    assert_one_line_error(result, ExitCode.USAGE, str(notes), "not a format gca recognizes")


def test_missing_path_exits_2(tmp_path: Path) -> None:
    result = run("ingest", str(tmp_path / "nope"), "--db", str(tmp_path / "s.duckdb"))
    assert_one_line_error(result, ExitCode.USAGE, "nope: no such file or directory")


def test_bad_zone_and_bad_format_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "cluster_job_log"
    log.write_text(JOB_LOG)
    assert_one_line_error(
        run("ingest", str(log), "--tz", "Mars/Olympus", "--db", str(tmp_path / "s.duckdb")),
        ExitCode.USAGE,
        "Mars/Olympus",
    )
    assert_one_line_error(
        run("ingest", str(log), "--format", "excel", "--db", str(tmp_path / "s.duckdb")),
        ExitCode.USAGE,
        "unknown format 'excel'",
    )


def test_malformed_file_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    log = tmp_path / "cluster_job_log"
    log.write_text('[\n {"jobid": "a",\n  "attempts": [}\n]\n')
    result = run("ingest", str(log), "--db", str(tmp_path / "s.duckdb"))
    assert_one_line_error(result, ExitCode.USAGE, f"{log}:3: not a readable Philly job log")


def test_strict_with_rejects_exits_3(tmp_path: Path) -> None:
    util = tmp_path / "cluster_gpu_util"
    util.write_text(GPU_UTIL)
    result = run("ingest", str(util), "--strict", "--db", str(tmp_path / "s.duckdb"))
    assert_one_line_error(result, ExitCode.PARTIAL, f"{util}:4: too many fields")


def test_report_without_a_store_exits_1_with_a_hint(tmp_path: Path) -> None:
    result = run("report", "--db", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "out"))
    assert_one_line_error(result, ExitCode.DATA, "none.duckdb", "gca ingest")
    assert not (tmp_path / "out" / "index.html").exists()


def test_archive_gets_a_hint_to_extract_it(tmp_path: Path) -> None:
    import tarfile

    log = tmp_path / "cluster_job_log"
    log.write_text(JOB_LOG)
    archive = tmp_path / "trace-data.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(log, arcname="trace-data/cluster_job_log")
    result = run("ingest", str(archive), "--db", str(tmp_path / "s.duckdb"))
    assert_one_line_error(result, ExitCode.USAGE, "an archive", "tar xzf trace-data.tar.gz")


def test_a_cut_gzip_file_is_one_line_naming_it(tmp_path: Path) -> None:
    import gzip
    import os

    whole = gzip.compress(b"index, utilization.gpu [%]\n" + os.urandom(20000))
    cut = tmp_path / "node01.csv.gz"
    cut.write_bytes(whole[:40])  # small: found while its head is read to detect the format
    log = tmp_path / "logs" / "j" / "attempt_0" / "stderr.log.gz"
    log.parent.mkdir(parents=True)
    log.write_bytes(gzip.compress(os.urandom(300000))[:100000])  # found only when read to its end
    for path in (cut, log):
        result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(tmp_path / "s.duckdb")])
        assert result.exit_code == 2, result.output
        assert f"{path.name}: a damaged gzip file" in result.output
        assert "Traceback" not in result.output and "internal error" not in result.output


def test_report_quotas_and_locality_errors_are_one_line(tmp_path: Path) -> None:
    log = tmp_path / "cluster_job_log"
    log.write_text(JOB_LOG)
    db = tmp_path / "s.duckdb"
    assert run("ingest", str(log), "--db", str(db)).exit_code == 0
    bad = tmp_path / "quotas.toml"
    bad.write_text('[quotas]\n"vc1" = "lots"\n')
    assert_one_line_error(
        run("report", "--db", str(db), "--out", str(tmp_path / "r"), "--quotas", str(bad)),
        ExitCode.USAGE,
        "quotas.toml",
        "vc1",
    )
    assert_one_line_error(
        run("report", "--db", str(db), "--out", str(tmp_path / "r"), "--quotas", str(tmp_path / "none.toml")),
        ExitCode.USAGE,
        "none.toml",
        "no such quotas file",
    )
    assert_one_line_error(
        run("report", "--db", str(db), "--out", str(tmp_path / "r"), "--locality", "0"), ExitCode.USAGE, "--locality"
    )
    good = tmp_path / "good.toml"
    good.write_text('[quotas]\n"vc1" = 16\n')
    ok = run("report", "--db", str(db), "--out", str(tmp_path / "r"), "--quotas", str(good), "--locality", "relaxed")
    assert ok.exit_code == 0, ok.output
    assert "file " + str(good) in (tmp_path / "r" / "wait_clusters.csv").read_text()
