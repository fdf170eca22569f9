"""The wheel ships the SQL: an installed, non-editable gca finds its queries."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("gpucluster_analysis-*.whl")
    return built


def test_wheel_contains_every_sql_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sql_files = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "sql").rglob("*.sql"))
    assert sql_files, "no SQL files found in the checkout"
    missing = [f for f in sql_files if f"gpucluster_analysis/{f}" not in names]
    assert missing == []


def test_installed_wheel_finds_its_queries_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    code = (
        "import gpucluster_analysis.sqlfiles as s; "
        "print(s.sql_root()); print(len(s.list_sql('queries')), len(s.list_sql('schema')))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    root, counts = out.stdout.splitlines()
    assert root.startswith(str(site))
    queries, schema = map(int, counts.split())
    assert queries == len(list((REPO / "sql" / "queries").glob("*.sql")))
    assert schema == len(list((REPO / "sql" / "schema").glob("*.sql")))
