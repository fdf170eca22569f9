"""The report's three tables of why jobs waited (wait_causes_by_size, wait_causes_by_vc,
wait_abandoned) against jobs.csv, summed here in Python, on the real Slurm capture kept
under tests/data/slurm/live (per-user caps, three accounts, jobs cancelled while pending).

jobs.csv holds each job's split (wait_<cause>_s, the five causes summing to its wait) and
its GPUs; the tables must be those numbers summed: per size bucket (docs/domain.md's buckets
of num_gpus, and 'all'), per VC (the busiest by waiting GPU-time, the rest as one row) for
the jobs that started, and per final status for those that never did.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest
from store_helpers import ingest

from gpucluster_analysis.analyze import parameters
from gpucluster_analysis.report.build import build_report

LIVE = Path(__file__).parent / "data" / "slurm" / "live"
CAUSES = ("user_limit", "fair_share", "capacity", "fragmentation", "other")


def size_bucket(gpus: str) -> str:
    """docs/domain.md's size buckets of a job's GPUs."""
    if gpus == "":
        return "unknown"
    g = float(gpus)
    if g == 0:
        return "0"
    if g < 1:
        return "<1"
    return "1" if g <= 1 else "2-4" if g <= 4 else "5-8" if g <= 8 else ">8"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("waits")
    db = d / "live.duckdb"
    ingest(db, *(LIVE / name for name in ("sacct.txt", "nodes.txt", "assoc.txt", "qos.txt", "squeue.log")))
    # two VCs drawn by name, so that the third is folded into '(other VCs)'
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parameters, "TOP_VCS", 2)
        build_report(db, d / "report")
    return d / "report"


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def sums(jobs: list[dict[str, str]], key) -> dict[tuple[str, str], tuple[int, float, float]]:
    """(group, cause) -> (jobs, waiting seconds, waiting GPU-seconds), from jobs.csv."""
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for job in jobs:
        for cause in CAUSES:
            seconds = float(job[f"wait_{cause}_s"])
            for group in key(job):
                s = out[(group, cause)]
                s[0] += 1
                s[1] += seconds
                s[2] += seconds * float(job["num_gpus"])
    return {k: (int(v[0]), v[1], v[2]) for k, v in out.items()}


def assert_table(
    table: list[dict[str, str]], group_col: str, expected: dict[tuple[str, str], tuple[int, float, float]]
) -> None:
    got = {(r[group_col], r["cause"]): r for r in table}
    assert set(got) == set(expected)
    for (group, cause), (n, seconds, gpu_seconds) in expected.items():
        r = got[(group, cause)]
        assert int(r["jobs"]) == n, (group, cause)
        assert float(r["wait_hours"]) == pytest.approx(seconds / 3600, rel=1e-9, abs=1e-12), (group, cause)
        assert float(r["wait_gpu_hours"]) == pytest.approx(gpu_seconds / 3600, rel=1e-9, abs=1e-12), (group, cause)
        total = sum(v[2] for (g, _), v in expected.items() if g == group)
        if total:
            assert float(r["share_pct"]) == pytest.approx(100 * gpu_seconds / total, rel=1e-9, abs=1e-9), (group, cause)


def test_the_wait_tables_are_jobs_csv_summed(report: Path) -> None:
    jobs = [j for j in rows(report / "jobs.csv") if j["wait_other_s"] != ""]  # the jobs with a split
    started = [j for j in jobs if j["first_start_time"]]
    abandoned = [j for j in jobs if not j["first_start_time"]]
    assert started and abandoned and sum(float(j["wait_user_limit_s"]) for j in jobs) > 0  # every path is taken

    assert_table(
        rows(report / "wait_causes_by_size.csv"),
        "size_bucket",
        sums(started, lambda j: ("all", size_bucket(j["num_gpus"]))),
    )

    gpu_wait: dict[str, float] = defaultdict(float)
    for j in started:
        gpu_wait[j["vc"] or "(none)"] += sum(float(j[f"wait_{c}_s"]) for c in CAUSES) * float(j["num_gpus"])
    top = sorted(gpu_wait, key=lambda vc: (-gpu_wait[vc], vc))[:2]
    assert len(gpu_wait) > 2  # a VC is folded
    assert_table(
        rows(report / "wait_causes_by_vc.csv"),
        "vc",
        sums(started, lambda j: ((j["vc"] or "(none)") if (j["vc"] or "(none)") in top else "(other VCs)",)),
    )

    assert_table(rows(report / "wait_abandoned.csv"), "status", sums(abandoned, lambda j: (j["status"],)))
