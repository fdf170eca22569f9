"""`gca report`: the CSV tables and the HTML page, checked against independent computations.

Three stores: the real philly-sample (numbers recomputed here from the raw JSON and from
jobs.csv with numpy), a hand-made store whose every answer is known (retries, killed jobs,
sharing, host memory, missing times, sample boundaries), and stores that are missing,
empty or hold only a job log.
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from gpucluster_analysis.analyze import statistics
from gpucluster_analysis.analyze.catalog import result_queries
from gpucluster_analysis.analyze.prepare import JOBS_COLUMNS, prepare, prepare_report, run_query
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import QueryError, ReportError, StoreError
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.report.build import Written, build_report
from gpucluster_analysis.report.directory import MARKER
from gpucluster_analysis.sqlfiles import list_sql, load_sql, parameter_names
from tests.conftest import PHILLY_SAMPLE, require

STATUS = {"Pass": "passed", "Failed": "failed", "Killed": "killed"}


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def header(path: Path) -> list[str]:
    with path.open(newline="") as f:
        return next(csv.reader(f))


def figure_ids(page: str) -> list[str]:
    return re.findall(r'Plotly\.newPlot\(\s*"([^"]+)"', page)


# ---------------------------------------------------------------- philly-sample


def test_writes_index_and_one_csv_per_table(sample_report: Written) -> None:
    out = sample_report.out_dir
    assert sample_report.html == out / "index.html" and sample_report.html.is_file()
    names = {p.name for p in sample_report.tables}
    replay = {"quotas.csv", "wait_clusters.csv", "wait_timeline.csv", "pending_reasons_vs_replay.csv"}
    speed = {
        "speed_summary.csv",
        "machine_speed.csv",
        "gpu_speed.csv",
        "speed_locality.csv",
        "slow_machine_telemetry.csv",
    }
    assert names == {"jobs.csv", "gpu_util_locality_tests.csv"} | replay | speed | {
        f"{q}.csv" for q in result_queries()
    }
    assert all(p.is_file() and p.parent == out for p in sample_report.tables)
    # written through a new directory, nothing left behind but the marker listing the files
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [MARKER]
    assert json.loads((out / MARKER).read_text())["files"] == [*(p.name for p in sample_report.tables), "index.html"]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


def test_jobs_csv_has_exactly_the_domain_columns(sample_report: Written) -> None:
    assert header(sample_report.out_dir / "jobs.csv") == JOBS_COLUMNS
    rows = read_csv(sample_report.out_dir / "jobs.csv")
    assert len(rows) == 356
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["submit_time"]) for r in rows)


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("jobs_by_status", ["status", "jobs", "jobs_pct", "gpu_hours", "gpu_time_pct"]),
        ("jobs_by_size", ["size_bucket", "jobs", "jobs_pct", "gpu_hours", "gpu_time_pct"]),
        (
            "queue_delay_summary_by_size",
            ["size_bucket", "jobs", "jobs_with_delay", "p50_s", "p90_s", "p99_s", "mean_s", "max_s"],
        ),
        ("queue_delay_cdf_by_size", ["size_bucket", "queue_delay_s", "cum_share"]),
        ("retry_gap_by_order", ["retry_no", "gaps", "p50_s", "p90_s", "p99_s", "mean_s", "overlapping"]),
        (
            "gpu_util_by_gpus_servers",
            ["num_gpus", "num_servers", "jobs", "samples", "mean_util_pct", "job_mean_util_pct"],
        ),
        ("gpu_util_cdf_by_placement", ["placement", "util_bin", "samples", "cum_share"]),
        (
            "gpu_util_locality_tests",
            [
                "comparison",
                "groups",
                "n",
                "means",
                "test",
                "statistic",
                "p_value",
                "effect_measure",
                "effect_size",
                "note",
            ],
        ),
        ("machine_capacity_mismatch", ["machine_id", "listed_gpus", "observed_gpus", "issue"]),
        ("jobs_missing_times", ["check", "items", "count", "total"]),
    ],
)
def test_table_columns(sample_report: Written, name: str, columns: list[str]) -> None:
    assert header(sample_report.out_dir / f"{name}.csv") == columns


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_numbers_are_plain_decimals(sample_report: Written) -> None:
    for path in sample_report.tables:
        rows = read_csv(path)
        for column in header(path):
            values = [r[column] for r in rows if r[column] != ""]
            if values and all(_is_number(v) for v in values) and column not in ("user", "vc", "job_id"):
                assert not [v for v in values if "e" in v.lower() or "," in v], (path.name, column)


def test_jobs_by_status_matches_the_raw_job_log(sample_report: Written) -> None:
    raw = json.loads((require(PHILLY_SAMPLE) / "cluster_job_log").read_text())
    expected = Counter(STATUS[j["status"]] for j in raw)
    rows = read_csv(sample_report.out_dir / "jobs_by_status.csv")
    assert {r["status"]: int(r["jobs"]) for r in rows} == expected
    assert math.isclose(sum(float(r["jobs_pct"]) for r in rows), 100.0, abs_tol=1e-3)


def test_queue_delay_percentiles_match_numpy_on_jobs_csv(sample_report: Written) -> None:
    jobs = read_csv(sample_report.out_dir / "jobs.csv")
    delays = np.array([float(j["queue_delay_s"]) for j in jobs if j["queue_delay_s"]])
    summary = {r["size_bucket"]: r for r in read_csv(sample_report.out_dir / "queue_delay_summary_by_size.csv")}
    for q, col in ((50, "p50_s"), (90, "p90_s"), (99, "p99_s")):
        assert float(summary["all"][col]) == pytest.approx(np.percentile(delays, q), abs=1e-3)
    four = np.array([float(j["queue_delay_s"]) for j in jobs if j["queue_delay_s"] and 2 <= int(j["num_gpus"]) <= 4])
    assert float(summary["2-4"]["p50_s"]) == pytest.approx(np.median(four), abs=1e-3)
    assert int(summary["2-4"]["jobs_with_delay"]) == four.size


def test_gpu_time_and_utilization_tables_agree_with_jobs_csv(sample_report: Written) -> None:
    jobs = read_csv(sample_report.out_dir / "jobs.csv")
    by_size = {r["size_bucket"]: float(r["gpu_hours"]) for r in read_csv(sample_report.out_dir / "jobs_by_size.csv")}
    eight = sum(float(j["gpu_time_s"]) for j in jobs if 5 <= int(j["num_gpus"]) <= 8) / 3600
    assert by_size["5-8"] == pytest.approx(eight, rel=1e-6)
    cells = {
        (int(r["num_gpus"]), int(r["num_servers"])): r
        for r in read_csv(sample_report.out_dir / "gpu_util_by_gpus_servers.csv")
    }
    mine = [j for j in jobs if j["num_gpus"] == "8" and j["num_servers"] == "1" and int(j["util_samples"])]
    weighted = sum(float(j["mean_gpu_util_pct"]) * int(j["util_samples"]) for j in mine)
    samples = sum(int(j["util_samples"]) for j in mine)
    assert int(cells[(8, 1)]["jobs"]) == len(mine)
    assert float(cells[(8, 1)]["mean_util_pct"]) == pytest.approx(weighted / samples, rel=1e-6)


def test_placement_cdf_counts_the_same_samples_as_jobs_csv(sample_report: Written) -> None:
    jobs = read_csv(sample_report.out_dir / "jobs.csv")
    cdf = read_csv(sample_report.out_dir / "gpu_util_cdf_by_placement.csv")
    for placement, servers in (("packed", lambda s: s == 1), ("spread", lambda s: s > 1)):
        expected = sum(int(j["util_samples"]) for j in jobs if j["num_servers"] and servers(int(j["num_servers"])))
        assert sum(int(r["samples"]) for r in cdf if r["placement"] == placement) == expected
        last = [r for r in cdf if r["placement"] == placement][-1]
        assert float(last["cum_share"]) == pytest.approx(1.0)


def test_locality_test_matches_scipy_on_jobs_csv(sample_report: Written) -> None:
    from scipy.stats import mannwhitneyu

    jobs = [j for j in read_csv(sample_report.out_dir / "jobs.csv") if int(j["util_samples"])]
    spread = [float(j["mean_gpu_util_pct"]) for j in jobs if int(j["num_servers"]) > 1]
    packed = [float(j["mean_gpu_util_pct"]) for j in jobs if int(j["num_servers"]) == 1]
    res = mannwhitneyu(spread, packed, alternative="two-sided")
    row = next(
        r
        for r in read_csv(sample_report.out_dir / "gpu_util_locality_tests.csv")
        if r["comparison"] == "placement, all sizes"
    )
    assert row["n"] == f"{len(spread)}/{len(packed)}"
    assert float(row["p_value"]) == pytest.approx(res.pvalue, rel=1e-4)
    assert float(row["effect_size"]) == pytest.approx(2 * res.statistic / (len(spread) * len(packed)) - 1, abs=1e-6)


def test_capacity_mismatch_lists_the_known_wrong_machines(sample_report: Written) -> None:
    # The upstream machine list under-counts these (philly-traces issue #8; sample README).
    rows = {r["machine_id"]: r for r in read_csv(sample_report.out_dir / "machine_capacity_mismatch.csv")}
    known = [m for m in ("m29", "m47", "m51", "m412") if m in rows]
    assert all(rows[m]["listed_gpus"] == "2" and int(rows[m]["observed_gpus"]) > 2 for m in known)
    assert rows and all(int(r["observed_gpus"]) > int(r["listed_gpus"]) for r in rows.values())
    # independently: GPU indices of the raw job log's allocations vs the raw machine list
    listed = {}
    for line in (require(PHILLY_SAMPLE) / "cluster_machine_list").read_text().splitlines()[1:]:
        machine, gpus, _ = (x.strip() for x in line.split(","))
        listed[machine] = int(gpus)
    observed: dict[str, int] = {}
    for job in json.loads((PHILLY_SAMPLE / "cluster_job_log").read_text()):
        for attempt in job["attempts"]:
            for d in attempt["detail"]:
                for g in d["gpus"]:
                    observed[d["ip"]] = max(observed.get(d["ip"], 0), int(g.removeprefix("gpu")) + 1)
    from_allocations = {m for m, n in observed.items() if m in listed and n > listed[m]}
    assert from_allocations <= set(rows)


def test_html_is_one_offline_page_with_every_section(sample_report: Written) -> None:
    page = sample_report.html.read_text()
    assert page.count("plotly.js v") == 1  # the bundle's banner: embedded exactly once
    assert "</script" not in _plotly_bundle().lower()  # safe to inline as is
    outside = page.replace(_plotly_bundle(), "")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", outside)
    assert "cdn." not in outside
    for section in ("overview", "queueing", "locality", "failures", "data-quality", "failure-reasons"):
        assert f'id="{section}"' in page
    ids = figure_ids(page)
    assert len(ids) == len(set(ids)) >= 12
    assert all(f'id="{i}"' in page for i in ids)
    assert "Mann-Whitney U" in page and "submit -&gt; first start" in page


def _plotly_bundle() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def test_rebuild_overwrites_in_place(sample_store: Path, sample_report: Written, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(sample_report.out_dir, out)  # a report built before, one of its tables gone stale
    (out / "jobs.csv").write_text("stale\n")
    again = build_report(sample_store, out)
    assert header(out / "jobs.csv") == JOBS_COLUMNS
    assert [p.name for p in again.tables] == [p.name for p in sample_report.tables]


# ---------------------------------------------------------------- missing, empty, partial stores


def test_missing_store_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="gca ingest"):
        build_report(tmp_path / "nope.duckdb", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_store_without_jobs_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    with open_store(db):
        pass  # schema only
    with pytest.raises(StoreError, match="no jobs") as err:
        build_report(db, tmp_path / "out")
    assert "gca ingest" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_duckdb_file_that_is_not_a_store_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "other.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    with pytest.raises(StoreError, match="not a gca store"):
        build_report(db, tmp_path / "out")


def test_store_missing_a_table_is_a_query_error_naming_the_query(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    with open_store(db) as con:
        con.execute(
            "INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id) "
            "VALUES ('philly', 'A', 'u', 'v', 'passed', 'Pass', '2017-10-10 10:00:00', 1)"
        )
        con.execute("DROP TABLE host_samples")
    with pytest.raises(QueryError, match=r"query \w+ failed: .*host_samples"):
        build_report(db, tmp_path / "out")


def test_out_path_that_is_a_file_is_a_report_error(sample_store: Path, tmp_path: Path) -> None:
    (tmp_path / "out").write_text("x")
    with pytest.raises(ReportError):
        build_report(sample_store, tmp_path / "out")


def test_job_log_only_store_still_gets_a_report(tmp_path: Path) -> None:
    db = tmp_path / "jobs-only.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [require(PHILLY_SAMPLE) / "cluster_job_log"], IngestOptions())
    written = build_report(db, tmp_path / "out")
    jobs = read_csv(written.out_dir / "jobs.csv")
    assert len(jobs) == 356
    assert all(j["mean_gpu_util_pct"] == "" and j["util_samples"] == "0" for j in jobs)
    page = written.html.read_text()
    assert "No GPU utilization sample" in page and "No host samples" in page
    assert read_csv(written.out_dir / "gpu_util_cdf_by_placement.csv") == []
    assert header(written.out_dir / "gpu_util_cdf_by_placement.csv") == [
        "placement",
        "util_bin",
        "samples",
        "cum_share",
    ]
    assert len(figure_ids(page)) >= 6


# ---------------------------------------------------------------- a store with known answers


HANDMADE = """
INSERT INTO ingested_files VALUES
  (1, 'jobs.json', 1, 'a', 'philly_job_log', NULL, 6, 1, 0, now()),
  (2, 'gpu.csv', 1, 'b', 'philly_gpu_util', NULL, 12, 0, 0, now()),
  (3, 'host.csv', 1, 'c', 'philly_cpu_util', NULL, 2, 0, 0, now()),
  (4, 'machines.csv', 1, 'd', 'philly_machine_list', NULL, 3, 0, 0, now());
INSERT INTO rejects VALUES (1, 3, 'bad json', '{');
INSERT INTO machines (machine_id, listed_gpus, gpu_memory_gb, file_id) VALUES
  ('m1', 2, 12, 4), ('m2', 8, 24, 4), ('m4', 8, 24, 4);
INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id) VALUES
  ('philly', 'A', 'u1', 'vc1', 'passed', 'Pass', '2017-10-10 09:50:00', 1),
  ('philly', 'B', 'u1', 'vc1', 'failed', 'Failed', '2017-10-10 11:00:00', 1),
  ('philly', 'C', 'u2', 'vc2', 'killed', 'Killed', '2017-10-10 10:29:00', 1),
  ('philly', 'D', 'u2', 'vc2', 'passed', 'Pass', '2017-10-10 08:00:00', 1),
  ('philly', 'E', 'u3', 'vc2', 'failed', 'Failed', '2017-10-10 08:00:00', 1),
  ('philly', 'F', 'u3', 'vc1', 'passed', 'Pass', '2017-10-10 09:00:00', 1);
INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id) VALUES
  ('philly', 'A', 0, 0, '2017-10-10 10:00:00', '2017-10-10 11:00:00', 1),
  ('philly', 'B', 0, 0, '2017-10-10 12:00:00', '2017-10-10 12:30:00', 1),
  ('philly', 'B', 1, 1, '2017-10-10 13:00:00', '2017-10-10 13:10:00', 1),
  ('philly', 'C', 0, 0, '2017-10-10 10:30:00', '2017-10-10 10:45:00', 1),
  ('philly', 'E', 0, 0, NULL, '2017-10-10 09:00:00', 1),
  ('philly', 'F', 0, 0, '2017-10-10 10:00:00', '2017-10-10 10:10:00', 1);
INSERT INTO allocations VALUES
  ('philly', 'A', 0, 'm1', 0, 1), ('philly', 'A', 0, 'm1', 1, 1),
  ('philly', 'B', 0, 'm2', 0, 1), ('philly', 'B', 1, 'm2', 0, 1),
  ('philly', 'C', 0, 'm1', 2, 1),
  ('philly', 'E', 0, 'm3', 0, 1),
  ('philly', 'F', 0, 'm3', 1, 1), ('philly', 'F', 0, 'm3', 2, 1),
  ('philly', 'F', 0, 'm4', 0, 1), ('philly', 'F', 0, 'm4', 1, 1);
INSERT INTO gpu_samples (sample_at, machine_id, gpu_index, util_pct, file_id) VALUES
  ('2017-10-10 10:00:00', 'm1', 0, 50, 2),    -- A, at its start: counted
  ('2017-10-10 10:59:00', 'm1', 0, 70, 2),    -- A
  ('2017-10-10 11:00:00', 'm1', 0, 100, 2),   -- at A's end: not counted
  ('2017-10-10 10:30:00', 'm1', 1, NULL, 2),  -- A's GPU, no value
  ('2017-10-10 10:30:00', 'm1', 5, 10, 2),    -- nobody's GPU
  ('2017-10-10 10:30:00', 'm1', 2, 20, 2),    -- C
  ('2017-10-10 10:44:00', 'm1', 2, 30, 2),    -- C
  ('2017-10-10 12:15:00', 'm2', 0, 40, 2),    -- B, 1st attempt
  ('2017-10-10 12:45:00', 'm2', 0, 99, 2),    -- between B's attempts: nobody's
  ('2017-10-10 13:05:00', 'm2', 0, 60, 2),    -- B, 2nd attempt
  ('2017-10-10 10:05:00', 'm3', 1, 0, 2),     -- F
  ('2017-10-10 10:05:00', 'm4', 0, 5, 2);     -- F
INSERT INTO host_samples VALUES
  ('2017-10-10 10:30:00', 'm1', 50, 100, 25, 3),
  ('2017-10-10 10:30:00', 'm9', 5, 100, 90, 3);
"""


@pytest.fixture(scope="module")
def handmade(tmp_path_factory: pytest.TempPathFactory) -> Written:
    base = tmp_path_factory.mktemp("handmade")
    db = base / "handmade.duckdb"
    with open_store(db) as con:
        for statement in HANDMADE.split(";\n"):
            if statement.strip():
                con.execute(statement)
    return build_report(db, base / "out")


def rows_by(written: Written, name: str, *keys: str) -> dict:
    return {
        tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in read_csv(written.out_dir / f"{name}.csv")
    }


def test_handmade_jobs_and_attribution(handmade: Written) -> None:
    jobs = rows_by(handmade, "jobs", "job_id")
    assert (jobs["A"]["mean_gpu_util_pct"], jobs["A"]["util_samples"]) == ("60", "2")
    assert (jobs["B"]["mean_gpu_util_pct"], jobs["B"]["util_samples"]) == ("50", "2")
    assert (jobs["C"]["mean_gpu_util_pct"], jobs["C"]["util_samples"]) == ("25", "2")
    assert jobs["D"]["attempts"] == "0" and jobs["D"]["gpu_time_s"] == ""
    status = rows_by(handmade, "jobs_by_status", "status")
    assert {k: int(v["jobs"]) for k, v in status.items()} == {"passed": 3, "failed": 2, "killed": 1}
    # GPU time: A 2 x 3600, B 1800 + 600, C 900, F 4 x 600
    assert float(status["passed"]["gpu_hours"]) == pytest.approx((7200 + 2400) / 3600)
    assert float(status["killed"]["gpu_time_pct"]) == pytest.approx(100 * 900 / 12900, abs=1e-4)


def test_handmade_queueing_and_retries(handmade: Written) -> None:
    summary = rows_by(handmade, "queue_delay_summary_by_size", "size_bucket")
    # delays A 600, B 3600, C 60, F 3600 (D and E never started)
    assert float(summary["all"]["p50_s"]) == pytest.approx(np.percentile([600, 3600, 60, 3600], 50))
    assert summary["all"]["jobs"] == "6" and summary["all"]["jobs_with_delay"] == "4"
    gaps = read_csv(handmade.out_dir / "retry_gap_by_order.csv")
    assert [(g["retry_no"], g["gaps"], float(g["p50_s"]), g["overlapping"]) for g in gaps] == [("1", "1", 1800.0, "0")]
    attempts = rows_by(handmade, "job_attempts_by_status", "attempts", "status")
    assert attempts[("2", "failed")]["jobs"] == "1" and attempts[("0", "passed")]["jobs"] == "1"


def test_handmade_sharing_host_and_capacity(handmade: Written) -> None:
    co = rows_by(handmade, "gpu_util_by_colocation", "size_bucket", "colocation")
    assert co[("2-4", "shared")]["jobs"] == "1"  # A (2 GPUs) overlaps C on m1
    assert co[("1", "shared")]["jobs"] == "1"  # C
    assert co[("1", "alone")]["jobs"] == "1"  # B: its two attempts on m2 are its own
    assert co[("2-4", "alone")]["jobs"] == "1"  # F
    host = read_csv(handmade.out_dir / "host_util_cdf_by_activity.csv")
    got = {(h["metric"], h["job_running"]): (h["util_bin"], float(h["value_sum"])) for h in host}
    assert got == {
        ("cpu_util_pct", "true"): ("50", 50.0),
        ("cpu_util_pct", "false"): ("5", 5.0),
        ("mem_used_pct", "true"): ("75", 75.0),
        ("mem_used_pct", "false"): ("10", 10.0),
    }
    mm = rows_by(handmade, "machine_capacity_mismatch", "machine_id")
    assert mm["m1"]["observed_gpus"] == "6" and mm["m1"]["issue"] == "more GPUs observed than listed"
    assert mm["m3"]["issue"] == "not in the machine list"
    assert set(mm) == {"m1", "m3"}


def test_handmade_data_quality(handmade: Written) -> None:
    missing = rows_by(handmade, "jobs_missing_times", "check", "items")
    assert missing[("no attempts", "jobs")]["count"] == "1"  # D
    assert missing[("attempts but no start time", "jobs")]["count"] == "1"  # E
    assert missing[("no start time", "attempts")]["count"] == "1"
    assert missing[("no GPU allocation", "attempts")]["count"] == "0"
    rejects = rows_by(handmade, "rejects_by_file", "path")
    assert rejects["jobs.json"]["rejects"] == "1" and "bad json (1, first at line 3)" in rejects["jobs.json"]["reasons"]
    cov = read_csv(handmade.out_dir / "gpu_time_coverage.csv")[0]
    # 8 attributed samples of the 11 non-null ones
    assert cov["attributed_samples"] == "8"
    assert float(cov["attributed_share_pct"]) == pytest.approx(100 * 8 / 11, abs=1e-4)
    page = handmade.html.read_text()
    assert "Not classified yet" in page


# ---------------------------------------------------------------- queries and analysis


def test_every_query_runs_on_an_empty_schema(tmp_path: Path) -> None:
    """Meta-test: each sql/queries file parses and binds against the empty canonical schema."""
    with open_store(tmp_path / "empty.duckdb") as con:
        prepare(con)
        prepare_report(con)
        names = list_sql("queries")
        assert len(names) >= 30
        for name in names:
            params = {p: None for p in parameter_names(load_sql("queries", name))}
            df = run_query(con, name, **params)
            assert isinstance(df, pl.DataFrame), name


def test_capacity_snapshot_equals_the_schema_view(sample_store: Path) -> None:
    """machine_capacity_snapshot re-derives the view from a shared scan; both must agree."""
    with open_store(sample_store, read_only=True) as con:
        prepare(con)
        prepare_report(con)
        view = con.sql("SELECT * FROM machine_capacity ORDER BY machine_id").fetchall()
        snapshot = con.sql("SELECT * FROM machine_capacity_snapshot ORDER BY machine_id").fetchall()
    assert view == snapshot and len(view) > 500


def test_job_keys_sizes_follow_jobs_csv(sample_store: Path) -> None:
    """job_keys (fixed before the sample pass) must size and place jobs exactly as jobs.sql does."""
    with open_store(sample_store, read_only=True) as con:
        prepare(con)
        prepare_report(con)
        mismatched = con.sql(
            "SELECT count(*) FROM job_facts r JOIN job_keys k USING (source, job_id)"
            " WHERE r.num_gpus IS DISTINCT FROM k.num_gpus OR r.num_servers IS DISTINCT FROM k.num_servers"
            " OR r.status IS DISTINCT FROM k.status"
        ).fetchall()[0][0]
        counts = con.sql("SELECT (SELECT count(*) FROM job_facts), (SELECT count(*) FROM job_keys)").fetchall()[0]
    assert mismatched == 0 and counts[0] == counts[1]


def test_every_query_file_has_a_header_comment() -> None:
    for name in list_sql("queries"):
        first = load_sql("queries", name).lstrip().splitlines()[0]
        assert first.startswith(f"-- {name}:"), name
        assert "Output" in load_sql("queries", name) or name == "jobs", name


def test_too_few_samples_are_said_not_tested() -> None:
    res = statistics.mann_whitney("x", [1.0, 2.0], [3.0] * 10, "a", "b")
    assert not res.ran and "too few" in res.note and res.n == "2/10"
    same = statistics.mann_whitney("x", [5.0] * 6, [5.0] * 6, "a", "b")
    assert not same.ran and "equal" in same.note
    kw = statistics.kruskal_wallis("x", {"a": [1.0] * 3, "b": [2.0] * 3})
    assert not kw.ran and "too few" in kw.note


def test_mann_whitney_effect_size_sign() -> None:
    high, low = [float(v) for v in range(50, 60)], [float(v) for v in range(10)]
    res = statistics.mann_whitney("x", high, low, "high", "low")
    assert res.significant and res.effect_size == pytest.approx(1.0)


def test_hist_quantile_interpolates_inside_bins() -> None:
    hist = pl.DataFrame({"util_bin": [0, 50], "samples": [1, 3]})
    assert statistics.hist_quantile(hist, 0.25) == pytest.approx(1.0)
    assert statistics.hist_quantile(hist, 1.0) == pytest.approx(51.0)
    assert statistics.hist_quantile(hist.clear(), 0.5) is None


def test_figures_accept_empty_tables_and_are_deterministic() -> None:
    from gpucluster_analysis.report import figures as fg

    empty_cdf = pl.DataFrame(schema={"g": pl.String, "x": pl.Float64, "cum_share": pl.Float64})
    assert fg.cdf_lines(empty_cdf, "g", "x", "t", "x").data == ()
    empty_hist = pl.DataFrame(
        schema={"g": pl.String, "util_bin": pl.Int16, "samples": pl.Int64, "cum_share": pl.Float64}
    )
    assert fg.hist_cdf(empty_hist, "g", "t").data == ()
    grid = pl.DataFrame(
        {"num_gpus": [8, 8], "num_servers": [1, 2], "jobs": [3, 4], "samples": [30, 40], "mean_util_pct": [50.0, 30.0]}
    )
    assert fg.util_heatmap(grid, "t").to_dict() == fg.util_heatmap(grid, "t").to_dict()
    gaps = pl.DataFrame(
        {"retry_no": [1], "gaps": [2], "p50_s": [0.0], "p90_s": [None]}, schema_overrides={"p90_s": pl.Float64}
    )
    fig = fg.quantile_bars(gaps, "retry_no", "t", "x", [("p50_s", "median"), ("p90_s", "p90")], count="gaps")
    assert fig.data[0].y == (1.0,)  # a zero wait drawn at the 1 s floor of the log axis


def test_counts_print_as_integers_and_fractions_stay() -> None:
    import polars as pl

    from gpucluster_analysis.analyze.compute import whole_counts

    df = pl.DataFrame(
        {
            "num_gpus": [1.0, 8.0, None],
            "num_servers": [1.0, 2.0, 1.0],
            "gpus": [0.5, 1.0, 2.0],
            "mean_util_pct": [50.0, 40.0, 30.0],
            "jobs": [3.0, float("nan"), 4.0],
        }
    )
    out = whole_counts(df)
    assert out.schema["num_gpus"] == pl.Int64 and out.get_column("num_gpus").to_list() == [1, 8, None]
    assert out.schema["num_servers"] == pl.Int64
    assert out.schema["gpus"] == pl.Float64  # a fractional GPU share stays a fraction
    assert out.schema["mean_util_pct"] == pl.Float64  # not a count
    assert out.schema["jobs"] == pl.Float64  # NaN is not a whole number of jobs


def test_the_page_opens_with_key_findings_linked_to_their_sections(sample_report: Written) -> None:
    import html as html_lib
    import re

    page = sample_report.html.read_text()
    block = re.search(r'<section id="key-findings">.*?</section>', page, re.S)
    assert block is not None and page.index('id="key-findings"') < page.index('id="overview"')
    items = re.findall(r'<li><a href="#([\w-]+)">([^<]+)</a>: ([^<]+)</li>', block.group(0))
    assert 5 <= len(items) <= 8
    for section_id, title, sentence in items:
        assert f'<section id="{section_id}"><h2>{html_lib.escape(title)}</h2>' in page
        assert re.search(r"\d", sentence) and sentence.endswith(".")
        # the sentence is the one the section leads with
        lead = re.search(rf'<section id="{section_id}"><h2>[^<]*</h2>\s*<p class="finding">([^<]+)</p>', page)
        assert lead is not None and lead.group(1).startswith(sentence.rstrip("."))
