"""GCA_THREADS holds gca to that many cores: DuckDB's threads on every connection it opens."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis import cores
from gpucluster_analysis.cli import app
from gpucluster_analysis.db import open_memory, open_store
from gpucluster_analysis.errors import ExitCode

REPO = Path(__file__).resolve().parent.parent


def test_duckdb_takes_the_threads_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cores.ENV, "1")
    with open_store(tmp_path / "s.duckdb") as con:
        assert con.execute("SELECT current_setting('threads')").fetchall() == [(1,)]
    with open_memory() as con:
        assert con.execute("SELECT current_setting('threads')").fetchall() == [(1,)]
    assert cores.cores() == 1
    monkeypatch.setenv(cores.ENV, "")
    assert cores.threads_asked() is None and cores.cores() >= 1


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5"])
def test_a_bad_value_is_a_one_line_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(cores.ENV, value)
    result = CliRunner().invoke(
        app,
        ["ingest", str(REPO / "examples" / "synthetic" / "cluster_machine_list"), "--db", str(tmp_path / "s.duckdb")],
    )
    assert result.exit_code == ExitCode.USAGE, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "GCA_THREADS" in lines[0] and repr(value) in lines[0], lines
