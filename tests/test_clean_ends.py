"""Killed or interrupted work leaves no traps (issue #26, 5).

Each test stops a real gca process at a known point (tests/process_helpers.py), signals it,
and checks what is left: the exit and its one line, the store, the processes it started
(through /proc), its temporary directories.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.dataset import layout
from gpucluster_analysis.dataset.write import SHARD_TEMP_PREFIX
from gpucluster_analysis.errors import ExitCode
from gpucluster_analysis.tempdirs import OwnedTempDir
from tests.conftest import REPO
from tests.marks import keep_by_default
from tests.process_helpers import needs_proc, parent_of, start_gca
from tests.store_helpers import ingest

SYNTHETIC = REPO / "examples" / "synthetic"
# the parse pool of job logs started for a few files: two workers, many chunks, several batches
POOL_FOR_A_FEW_LOGS = [
    ("gpucluster_analysis.ingest.parse_pool", "PARALLEL_PARSE_MIN_FILES", 1),
    ("gpucluster_analysis.ingest.parse_pool", "_WORKERS", 2),
    ("gpucluster_analysis.ingest.parse_pool", "_CHUNK_FILES", 3),
    ("gpucluster_analysis.ingest.plan", "PARSED_BATCH_FILES", 7),
]


def dump(db: Path) -> dict[str, list[str]]:
    """Every table of the store, its rows sorted."""
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall())) for t in tables}


@pytest.mark.parametrize("sig", keep_by_default([signal.SIGTERM, signal.SIGHUP], {signal.SIGTERM}))
def test_a_stop_signal_interrupts_an_ingest_as_ctrl_c_does(sig: signal.Signals, tmp_path: Path) -> None:
    """SIGTERM (systemd, `timeout`, a batch scheduler) and SIGHUP (a closed terminal) end
    gca as Ctrl-C does: the file being stored is rolled back, one line, exit 130.

    Reproduction:
        gca ingest examples/synthetic/cluster_job_log --db s.duckdb & sleep 2; kill -TERM $!
        # was: the process ended on the spot (exit 143) without a word, leaving its workers,
        # temporary store or report directory as they were
    """
    db = tmp_path / "s.duckdb"
    assert ingest(db, SYNTHETIC / "cluster_machine_list")[0].status == "loaded"
    before = dump(db)
    # stopped inside the job log's transaction, its jobs inserted and not committed
    gca = start_gca(
        ["ingest", SYNTHETIC / "cluster_job_log", "--db", db],
        tmp_path,
        stop=("gpucluster_analysis.ingest.traces.philly", "run_script", 1, "after"),
    )
    gca.wait_stopped()
    code, out, err = gca.signal(sig)
    assert code == ExitCode.INTERRUPTED, err
    assert err.strip().splitlines()[-1] == f"gca: interrupted ({sig.name})" and "Traceback" not in err
    assert dump(db) == before
    # the store is not left locked or damaged: the file loads whole now
    (report,) = ingest(db, SYNTHETIC / "cluster_job_log")
    assert report.status == "loaded" and report.rows == len(dump(db)["jobs"]) > 0


@pytest.mark.parametrize("sig", keep_by_default([signal.SIGTERM, signal.SIGINT], {signal.SIGINT}))
def test_a_stop_signal_stops_a_running_query_at_once(sig: signal.Signals) -> None:
    """Python runs a signal's handler in the main thread, and DuckDB lets it only between parts
    of a query; gca stops the running query from a thread that wakes on the signal.

    Reproduction:
        gca report --db big.duckdb --out r & sleep 5; kill -TERM $!   # or Ctrl-C
        # was: nothing happened until the running query ended (minutes at scale), then exit 143
    """
    program = (
        "import atexit, signal\n"
        # as a terminal starts it, whatever this test run inherited (nohup, a background job)
        "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from gpucluster_analysis.cli import _signals\n"
        "from gpucluster_analysis.db import open_memory\n"
        "_signals.install()\n"
        "atexit.register(lambda: print(_signals.interrupted_by(), flush=True))\n"
        "with open_memory() as con:\n"
        "    print('running', flush=True)\n"
        "    con.execute('SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3').fetchall()\n"  # ~10 min
        "print('finished', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "running\n"
        time.sleep(1.0)  # the query runs
        proc.send_signal(sig)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        proc.kill()
        proc.wait()
    assert out.split() == [sig.name], err  # not finished
    assert (
        "interrupt" in err.lower() and seconds < 15
    )  # DuckDB's InterruptException, or its RuntimeError("Query interrupted")


@needs_proc
# SIGKILL in the default run; SIGTERM, the same checks, in the slow run
@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_a_killed_ingest_leaves_no_process_behind(sig: signal.Signals, tmp_path: Path) -> None:
    """The parse pool of job logs (the forkserver, its workers, the resource tracker) ends
    with gca, even when gca is killed outright: nothing keeps its stdout and stderr open.

    Reproduction:
        gca ingest logs/ --db s.duckdb 2>&1 | tee log &   # 2,000+ job logs: worker processes parse them
        sleep 5; kill -KILL $(pgrep -f 'gca ingest')        # or -TERM
        # was: the forkserver, two ~126 MB workers and the resource tracker ran on under PID 1,
        # holding the pipe: tee never returned
    """
    db = tmp_path / "s.duckdb"
    gca = start_gca(
        ["ingest", SYNTHETIC / "logs", "--db", db],
        tmp_path,
        settings=POOL_FOR_A_FEW_LOGS,
        stop=("gpucluster_analysis.ingest.load", "ingest_parsed", 2, "before"),
    )
    try:
        gca.wait_stopped()
        started = gca.left()
        forkserver = [
            pid
            for pid, cmd in started.items()
            if "multiprocessing.forkserver" in cmd and parent_of(pid) == gca.proc.pid
        ]
        assert len(forkserver) == 1, started
        workers = [pid for pid in started if parent_of(pid) == forkserver[0]]
        trackers = [pid for pid, cmd in started.items() if "multiprocessing.resource_tracker" in cmd]
        assert len(workers) == 2 and len(trackers) == 1, started
        code, out, err = gca.signal(sig)  # returns once nothing holds the pipes
        assert gca.wait_all_gone() == {}
    finally:
        gca.kill_all()
    if sig == signal.SIGTERM:
        assert code == ExitCode.INTERRUPTED and err.strip().splitlines()[-1] == "gca: interrupted (SIGTERM)", err
        with duckdb.connect(str(db), read_only=True) as con:  # the first batch stored, the second not begun
            assert con.execute("SELECT count(*) FROM job_logs").fetchall()[0][0] == 7
    else:
        assert code == -signal.SIGKILL


def _shard_temps(tmp: Path) -> list[Path]:
    return sorted(tmp.glob(f"{SHARD_TEMP_PREFIX}*"))


def test_shard_temporaries_are_removed_when_ingest_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`gca ingest --to` ingests into a temporary store in TMPDIR: removed whether the
    shard is written or the ingest fails."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    runner = CliRunner()
    ok = runner.invoke(app, ["ingest", str(SYNTHETIC / "cluster_machine_list"), "--to", str(tmp_path / "ds")])
    assert ok.exit_code == 0, ok.output
    assert len(list((tmp_path / "ds" / layout.SHARDS_DIR).glob("*.json"))) == 1 and _shard_temps(tmp) == []
    (tmp_path / "bad").write_text('[{"jobid": ')
    failed = runner.invoke(
        app, ["ingest", str(tmp_path / "bad"), "--format", "philly_job_log", "--to", str(tmp_path / "ds2")]
    )
    assert failed.exit_code != 0 and "Traceback" not in failed.output
    assert _shard_temps(tmp) == []


# SIGKILL in the default run; SIGTERM, the same checks, in the slow run
@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_shard_temporaries_of_a_killed_ingest_are_gone(
    sig: signal.Signals, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted `gca ingest --to` removes its temporary store; one killed outright
    cannot, and the next `gca ingest --to` removes it (never one whose process is alive).

    Reproduction:
        gca ingest examples/synthetic --to ds & sleep 2; kill -KILL $!
        ls -d /tmp/gca-shard-*    # was: 80-110 MB left each time (a big node's day), never removed
    """
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    gca = start_gca(
        ["ingest", SYNTHETIC / "cluster_job_log", "--to", tmp_path / "ds"],
        tmp_path,
        env={"TMPDIR": str(tmp)},
        stop=("gpucluster_analysis.ingest.traces.philly", "run_script", 1, "after"),
    )
    gca.wait_stopped()
    (left,) = _shard_temps(tmp)
    assert (left / "shard.duckdb").is_file()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    alive = OwnedTempDir(SHARD_TEMP_PREFIX)  # this process's, alive throughout: it must stay
    try:
        code, _, err = gca.signal(sig)
        if sig == signal.SIGTERM:
            assert code == ExitCode.INTERRUPTED and "gca: interrupted (SIGTERM)" in err
            assert _shard_temps(tmp) == [alive.path]
            return
        assert code == -signal.SIGKILL and _shard_temps(tmp) == sorted([left, alive.path])
        again = subprocess.run(
            [
                sys.executable,
                "-m",
                "gpucluster_analysis",
                "ingest",
                str(SYNTHETIC / "cluster_machine_list"),
                "--to",
                str(tmp_path / "ds"),
            ],
            env={**os.environ, "TMPDIR": str(tmp)},
            capture_output=True,
            text=True,
        )
        assert again.returncode == 0, again.stderr
        assert _shard_temps(tmp) == [alive.path]
    finally:
        alive.remove()


def test_nohup_keeps_sighup_ignored(tmp_path: Path) -> None:
    """A signal ignored when gca started stays ignored (nohup's SIGHUP)."""
    program = (
        "import os, signal\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "from gpucluster_analysis.cli import _signals\n"
        "_signals.install()\n"
        "os.kill(os.getpid(), signal.SIGHUP)\n"
        "import time; time.sleep(0.5)\n"
        "print(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,"
        " _signals.interrupted_by())\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split() == ["True", "False", "None"], out.stderr
