"""gca report --since/--until/--vc/--user/--source (issue #12, part 1), on the real philly-5910
extract: the filtered jobs.csv holds exactly the jobs an independent filter of the raw job log
selects (plain json and zoneinfo), each row as the unfiltered report has it (the queueing
replay sees every job either way), and machine figures count the period's samples."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pytest
from typer.testing import CliRunner

from gpucluster_analysis.analyze.selection import Selection, parse_instant
from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode
from gpucluster_analysis.report.build import build_report
from tests.conftest import PHILLY_5910

LA = ZoneInfo("America/Los_Angeles")
SINCE, UNTIL = datetime(2017, 10, 9), datetime(2017, 10, 16)


def raw_jobs() -> list[dict]:
    return json.loads((PHILLY_5910 / "cluster_job_log").read_text())


def queue_start(job: dict) -> datetime | None:
    """Philly's submitted_time is local time in Redmond (domain.md): as UTC."""
    text = job.get("submitted_time")
    if text in (None, "None", ""):
        return None
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=LA, fold=0).astimezone(UTC).replace(tzinfo=None)


def independent(
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    vcs: set[str] = frozenset(),
    users: set[str] = frozenset(),
) -> set[str]:
    chosen = set()
    for job in raw_jobs():
        start = queue_start(job)
        if since is not None and (start is None or start < since):
            continue
        if until is not None and (start is None or start >= until):
            continue
        if vcs and job["vc"] not in vcs:
            continue
        if users and job["user"] not in users:
            continue
        chosen.add(job["jobid"])
    return chosen


@pytest.fixture(scope="module")
def whole(store_5910: Path, tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    out = tmp_path_factory.mktemp("whole")
    build_report(store_5910, out)
    return pl.read_csv(out / "jobs.csv", infer_schema_length=0)


def busiest(n: int, key: str) -> set[str]:
    counts: dict[str, int] = {}
    for job in raw_jobs():
        counts[job[key]] = counts.get(job[key], 0) + 1
    return set(sorted(counts, key=lambda k: (-counts[k], k))[:n])


@pytest.mark.slow  # reports of the real philly-5910 extract (as test_report_comparison.py); so below
@pytest.mark.parametrize("case", ["week", "vcs", "users", "week_and_vc"])
def test_filtered_jobs_are_those_the_raw_job_log_selects(
    store_5910: Path, whole: pl.DataFrame, tmp_path: Path, case: str
) -> None:
    vcs, users = busiest(2, "vc"), busiest(3, "user")
    selection, expected = {
        "week": (Selection(since=SINCE, until=UNTIL), independent(since=SINCE, until=UNTIL)),
        "vcs": (Selection(vcs=tuple(sorted(vcs))), independent(vcs=vcs)),
        "users": (Selection(users=tuple(sorted(users))), independent(users=users)),
        "week_and_vc": (
            Selection(since=SINCE, until=UNTIL, vcs=(min(vcs),)),
            independent(since=SINCE, until=UNTIL, vcs={min(vcs)}),
        ),
    }[case]
    assert 20 < len(expected) < 5910
    written = build_report(store_5910, tmp_path, selection=selection)
    jobs = pl.read_csv(tmp_path / "jobs.csv", infer_schema_length=0)
    assert set(jobs.get_column("job_id")) == expected
    # each row as the whole report has it: per-job numbers do not depend on the selection
    assert jobs.sort("job_id").equals(whole.filter(pl.col("job_id").is_in(list(expected))).sort("job_id"))
    assert written.summary["overview"]["jobs"] == len(expected)
    assert written.summary["selection"] == selection.describe() != "all jobs"
    by_status = pl.read_csv(tmp_path / "jobs_by_status.csv")
    assert by_status.get_column("jobs").sum() == len(expected)
    assert selection.describe() in written.html.read_text()


@pytest.mark.slow
def test_machine_figures_count_the_periods_samples(store_5910: Path, tmp_path: Path) -> None:
    """overview_totals.gpu_samples: the non-NA GPU cells of the raw file whose time is in the period."""
    offsets = {"PDT": timedelta(hours=-7), "PST": timedelta(hours=-8)}
    cells = 0
    with (PHILLY_5910 / "cluster_gpu_util").open() as f:
        reader = csv.reader(f)
        header = next(reader)
        for row in reader:
            stamp, zone = row[0].rsplit(" ", 1)
            at = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S") - offsets[zone]
            if SINCE <= at < UNTIL:
                cells += sum(1 for v in row[2 : len(header)] if v != "NA")
    assert cells > 1000
    build_report(store_5910, tmp_path, selection=Selection(since=SINCE, until=UNTIL))
    totals = pl.read_csv(tmp_path / "overview_totals.csv")
    assert totals.get_column("gpu_samples")[0] == cells


@pytest.mark.slow
def test_cli_selection_and_its_errors(store_5910: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    vc = min(busiest(2, "vc"))
    result = runner.invoke(
        app,
        [
            "report",
            "--db",
            str(store_5910),
            "--out",
            str(tmp_path / "r"),
            "--quiet",
            "--json",
            "--since",
            "2017-10-09",
            "--until",
            "2017-10-16T00:00:00Z",
            "--vc",
            vc,
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["overview"]["jobs"] == len(independent(since=SINCE, until=UNTIL, vcs={vc}))
    assert summary["selection"].startswith("jobs queued from 2017-10-09 to 2017-10-16")
    # --quiet: progress lines (a step over a second is timed) depend on the machine's load
    empty = runner.invoke(
        app, ["report", "--db", str(store_5910), "--out", str(tmp_path / "e"), "--vc", "no-such-vc", "--quiet"]
    )
    assert empty.exit_code == ExitCode.DATA
    assert "no job in the selection" in empty.output and len(empty.output.strip().splitlines()) == 1
    assert not (tmp_path / "e" / "jobs.csv").exists()
    for bad in (["--since", "last week"], ["--since", "2017-10-16", "--until", "2017-10-09"]):
        wrong = runner.invoke(app, ["report", "--db", str(store_5910), "--out", str(tmp_path / "b"), *bad])
        assert wrong.exit_code == ExitCode.USAGE and len(wrong.output.strip().splitlines()) == 1, wrong.output


def test_parse_instant_reads_dates_times_and_zones() -> None:
    assert parse_instant("2024-05-01", "--since") == datetime(2024, 5, 1)
    assert parse_instant("2024-05-01T08:00", "--since") == datetime(2024, 5, 1, 8)
    assert parse_instant("2024-05-01 08:00:30", "--since") == datetime(2024, 5, 1, 8, 0, 30)
    assert parse_instant("2024-05-01T08:00+02:00", "--since") == datetime(2024, 5, 1, 6)
    assert parse_instant("2024-05-01T08:00Z", "--since") == datetime(2024, 5, 1, 8)
