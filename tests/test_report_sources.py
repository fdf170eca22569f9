"""A store holding several traces: the Overview sets the sources side by side."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpucluster_analysis.db import open_store
from gpucluster_analysis.report.build import build_report
from tests.test_attribution import STORE


def test_sources_are_compared_side_by_side(tmp_path: Path) -> None:
    db = tmp_path / "mixed.duckdb"
    with open_store(db) as con:
        con.execute(STORE)
    written = build_report(db, tmp_path / "out")
    with open(written.out_dir / "sources_compared.csv", newline="") as f:
        rows = {r["source"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"slurm", "helios", "alibaba"}
    slurm = rows["slurm"]
    assert int(slurm["jobs"]) == 5
    assert float(slurm["passed_pct"]) == pytest.approx(80)  # S3 failed
    assert float(slurm["failed_pct"]) == pytest.approx(20)
    # GPU-hours: S1 4 x 1 h, S2 2 x 1 h, S3 2 x 1 h, S4 1 x 1 h, S5 1 x 0.25 h
    assert float(slurm["gpu_hours"]) == pytest.approx(9.25)
    # queueing: S1 1800 (from Eligible), S2 3600, S3 5400, S4 3600, S5 5400 -> median 3600
    assert float(slurm["queue_delay_p50_s"]) == pytest.approx(3600)
    # samples: S1 40, 80; S2 50, 70; S3 30; S4 20, 60; S5 20 -> 370 / 8
    assert float(slurm["mean_gpu_util_pct"]) == pytest.approx(370 / 8)
    assert rows["helios"]["mean_gpu_util_pct"] == ""
    assert float(rows["alibaba"]["gpu_hours"]) == pytest.approx(0.5)
    assert "sets them side by side" in written.html.read_text()
