"""jobs.csv on the real Philly sample, checked row by row against values computed
here straight from the raw files with plain Python (json, csv, zoneinfo), not
through gca's SQL."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gpucluster_analysis.db import open_store
from gpucluster_analysis.report.tables import JOBS_COLUMNS, format_for_csv, jobs_table, prepare
from tests.conftest import PHILLY_SAMPLE, require

LA = ZoneInfo("America/Los_Angeles")
SUFFIX_OFFSET = {"PDT": timedelta(hours=-7), "PST": timedelta(hours=-8)}
STATUS = {"Pass": "passed", "Failed": "failed", "Killed": "killed"}


def _utc_from_la(text: str | None) -> datetime | None:
    if text in (None, "None", ""):
        return None
    local = datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=LA, fold=0)
    return local.astimezone(UTC).replace(tzinfo=None)


def _iso(t: datetime | None) -> str | None:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if t else None


def _gpu_samples(path: Path) -> dict[tuple[str, int], list[tuple[datetime, float]]]:
    samples: dict[tuple[str, int], list[tuple[datetime, float]]] = defaultdict(list)
    with path.open() as f:
        reader = csv.reader(f)
        header = next(reader)
        for row in reader:
            stamp, zone = row[0].rsplit(" ", 1)
            t = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S") - SUFFIX_OFFSET[zone]
            for i, value in enumerate(row[2 : len(header)]):
                if value != "NA":
                    samples[(row[1], i)].append((t, float(value)))
    return samples


def expected_jobs(data: Path) -> dict[str, dict[str, object]]:
    jobs = json.loads((data / "cluster_job_log").read_text())
    samples = _gpu_samples(data / "cluster_gpu_util")
    expected = {}
    for job in jobs:
        attempts = []
        for a in job["attempts"]:
            cells = {(d["ip"], int(g.removeprefix("gpu"))) for d in a["detail"] for g in d["gpus"]}
            attempts.append((_utc_from_la(a["start_time"]), _utc_from_la(a["end_time"]), cells))
        # chronological order, attempts without a start last
        attempts.sort(key=lambda a: (a[0] is None, a[0] or datetime.min))
        starts = [a[0] for a in attempts if a[0]]
        ends = [a[1] for a in attempts if a[1]]
        first_alloc = next((a for a in attempts if a[2]), None)
        timed = [a for a in attempts if a[0] and a[1]]
        submit = _utc_from_la(job["submitted_time"])
        first_start = min(starts) if starts else None
        end = max(ends) if ends else None
        values = []
        seen = set()
        for start, stop, cells in timed:
            for cell in cells:
                for t, v in samples.get(cell, []):
                    if start <= t < stop and (cell, t) not in seen:
                        seen.add((cell, t))
                        values.append(v)
        expected[job["jobid"]] = {
            "job_id": job["jobid"],
            "source": "philly",
            "user": job["user"],
            "vc": job["vc"],
            "status": STATUS[job["status"]],
            "submit_time": _iso(submit),
            "first_start_time": _iso(first_start),
            "end_time": _iso(end),
            "attempts": len(attempts),
            "num_gpus": len(first_alloc[2]) if first_alloc else None,
            "num_servers": len({m for m, _ in first_alloc[2]}) if first_alloc else None,
            "queue_delay_s": (first_start - submit).total_seconds() if first_start and submit else None,
            "run_time_s": (end - first_start).total_seconds() if end and first_start else None,
            "gpu_time_s": sum((b - a).total_seconds() * len(c) for a, b, c in timed) if timed else None,
            "mean_gpu_util_pct": sum(values) / len(values) if values else None,
            "util_samples": len(values),
            "failure_reason": None,
            "failure_category": None,
            # Philly has no Eligible time: queueing counts from submission.
            "eligible_time": None,
            "queue_basis": "submit" if job["submitted_time"] not in (None, "None") else None,
            # The job log lists every GPU: attributed by the scheduler's own allocation.
            "attribution": ("scheduler" if any(c for a, b, c in timed if a < b)
                            else "none" if any(a < b for a, b, _ in timed) else None),
        }
    return expected


@pytest.fixture(scope="module")
def gca_jobs(sample_store: Path) -> list[dict[str, object]]:
    with open_store(sample_store, read_only=True) as con:
        prepare(con)
        return format_for_csv(jobs_table(con)).to_dicts()


def test_jobs_csv_matches_independent_computation_on_every_row(gca_jobs: list[dict[str, object]]) -> None:
    expected = expected_jobs(require(PHILLY_SAMPLE))
    assert [r["job_id"] for r in gca_jobs if r["job_id"] not in expected] == []
    assert len(gca_jobs) == len(expected) == 356
    mismatches = []
    for row in gca_jobs:
        want = expected[row["job_id"]]
        assert list(row) == JOBS_COLUMNS
        for column in JOBS_COLUMNS:
            got, exp = row[column], want[column]
            if isinstance(exp, float) and got is not None:
                ok = math.isclose(float(got), exp, rel_tol=1e-9, abs_tol=1e-9)
            else:
                ok = got == exp
            if not ok:
                mismatches.append((row["job_id"], column, exp, got))
    assert mismatches == []


def test_sample_has_utilization_for_most_jobs(gca_jobs: list[dict[str, object]]) -> None:
    # Guards against the comparison above passing vacuously (e.g. no samples attributed at all).
    with_util = [r for r in gca_jobs if r["util_samples"]]
    assert len(with_util) > 250
