"""Killed or interrupted work leaves no traps (issue #26, 5).

Each test stops a real gca process at a known point (tests/process_helpers.py), signals it,
and checks what is left: the exit and its one line, the store, the processes it started
(through /proc), its temporary directories.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from gpucluster_analysis.errors import ExitCode
from tests.conftest import REPO
from tests.process_helpers import start_gca
from tests.store_helpers import ingest

SYNTHETIC = REPO / "examples" / "synthetic"


def dump(db: Path) -> dict[str, list[str]]:
    """Every table of the store, its rows sorted."""
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall())) for t in tables}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
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
    gca = start_gca(["ingest", SYNTHETIC / "cluster_job_log", "--db", db], tmp_path,
                    stop=("gpucluster_analysis.ingest.philly", "run_script", 1, "after"))
    gca.wait_stopped()
    code, out, err = gca.signal(sig)
    assert code == ExitCode.INTERRUPTED, err
    assert err.strip().splitlines()[-1] == f"gca: interrupted ({sig.name})" and "Traceback" not in err
    assert dump(db) == before
    # the store is not left locked or damaged: the file loads whole now
    (report,) = ingest(db, SYNTHETIC / "cluster_job_log")
    assert report.status == "loaded" and report.rows == len(dump(db)["jobs"]) > 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_stops_a_running_query_at_once(sig: signal.Signals) -> None:
    """Python runs a signal's handler in the main thread, and DuckDB lets it only between parts
    of a query; gca stops the running query from a thread that wakes on the signal.

    Reproduction:
        gca report --db big.duckdb --out r & sleep 5; kill -TERM $!   # or Ctrl-C
        # was: nothing happened until the running query ended (minutes at scale), then exit 143
    """
    program = (
        "import atexit\n"
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
    assert "Interrupt" in err and seconds < 15


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
