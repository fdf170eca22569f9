"""`gca report`'s summary on stdout: text when piped, --json for scripts, --quiet for nothing.

The --json numbers are checked against numbers computed here from the jobs.csv (and for
failures and speed, the CSVs) that the same run wrote.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.cli._output import print_rows
from gpucluster_analysis.report import summary
from gpucluster_analysis.report.sections.text import fmt_dur, fmt_int, fmt_pct
from tests.conftest import REPO

SYNTHETIC = REPO / "examples" / "synthetic"
ANSI = re.compile(r"\x1b\[")
TOP_KEYS = [
    "summary_version",
    "store",
    "report",
    "selection",
    "overview",
    "utilization",
    "queueing",
    "failures",
    "speed",
]


@pytest.fixture(scope="module")
def synthetic_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("summary") / "syn.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(SYNTHETIC), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db


def report(db: Path, out: Path, *options: str):
    return CliRunner().invoke(
        app,
        ["report", "--db", str(db), "--out", str(out), "--quotas", str(SYNTHETIC / "quotas.toml"), *options],
        catch_exceptions=False,
    )


@pytest.fixture(scope="module")
def json_run(synthetic_store: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("summary-json")
    result = report(synthetic_store, out, "--json")
    assert result.exit_code == 0, result.output
    assert "gca: wrote" in result.stderr  # progress stays on stderr
    return json.loads(result.stdout), out


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def floats(rows: list[dict[str, str]], col: str) -> np.ndarray:
    return np.array([float(r[col]) for r in rows if r[col] != ""])


def test_json_keys_are_stable_and_documented(json_run: tuple[dict, Path]) -> None:
    h, out = json_run
    assert list(h) == TOP_KEYS
    assert h["report"] == str(out / "index.html") and h["store"] == "syn.duckdb" and h["selection"] == "all jobs"
    assert list(h["queueing"]["cause_pct"]) == list(summary.CAUSES)
    doc = (REPO / "docs" / "summary.md").read_text()
    keys = set()

    def walk(d: dict) -> None:
        for k, v in d.items():
            if k not in h["overview"]["jobs_by_status"] and k not in h["failures"]["gpu_time_lost_pct_by_category"]:
                keys.add(k)
            if isinstance(v, dict):
                walk(v)
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                walk(v[0])

    walk(h)
    # a key is documented when it is in the first column of the keys table, or named in backticks there
    table = [line.split("|") for line in doc.splitlines() if line.startswith("| `")]
    documented = set(re.findall(r"[a-z_0-9]+", " ".join(cells[1] for cells in table)))
    documented |= set(re.findall(r"`([a-z_0-9]+)`", " ".join(cells[2] for cells in table)))
    missing = sorted(keys - documented)
    assert not missing, f"keys not in docs/summary.md: {missing}"


def test_json_numbers_equal_jobs_csv(json_run: tuple[dict, Path]) -> None:
    h, out = json_run
    jobs = read_csv(out / "jobs.csv")
    o, u, q = h["overview"], h["utilization"], h["queueing"]
    assert o["jobs"] == len(jobs) == 120
    assert o["gpu_hours"] == pytest.approx(floats(jobs, "gpu_time_s").sum() / 3600, rel=1e-9)
    assert o["users"] == len({r["user"] for r in jobs})
    statuses = [r["status"] for r in jobs]
    assert o["jobs_by_status"] == {s: statuses.count(s) for s in o["jobs_by_status"]}
    assert sum(o["jobs_by_status"].values()) == len(jobs)
    # the report's percentiles are DuckDB's quantile_cont: linear interpolation, numpy's default
    delays = floats(jobs, "queue_delay_s")
    assert q["jobs_with_delay"] == len(delays)
    assert q["median_s"] == pytest.approx(float(np.percentile(delays, 50)), rel=1e-9)
    assert q["p90_s"] == pytest.approx(float(np.percentile(delays, 90)), rel=1e-9)
    sampled = [r for r in jobs if r["util_samples"] not in ("", "0")]
    n = sum(int(r["util_samples"]) for r in sampled)
    assert u["samples"] == n and u["jobs_with_samples"] == len(sampled)
    assert u["mean_gpu_util_pct"] == pytest.approx(
        sum(float(r["mean_gpu_util_pct"]) * int(r["util_samples"]) for r in sampled) / n, rel=1e-9
    )
    # the wait split: waiting GPU-time of the started jobs (seconds x GPUs) by cause
    started = [r for r in jobs if r["first_start_time"] and r["wait_other_s"] != ""]
    by_cause = {c: sum(float(r[f"wait_{c}_s"] or 0) * float(r["num_gpus"]) for r in started) for c in summary.CAUSES}
    total = sum(by_cause.values())
    assert q["wait_gpu_hours"] == pytest.approx(total / 3600, rel=1e-6)
    for cause, seconds in by_cause.items():
        assert q["cause_pct"][cause] == pytest.approx(100 * seconds / total, abs=1e-6)
    assert q["main_cause"] == max(by_cause, key=by_cause.__getitem__) == "fair_share"
    assert q["main_cause_pct"] == q["cause_pct"]["fair_share"]


def test_json_failures_and_speed_equal_the_csvs(json_run: tuple[dict, Path]) -> None:
    h, out = json_run
    f, s = h["failures"], h["speed"]
    reasons = read_csv(out / "failure_reasons.csv")
    assert f["failed_attempts"] == sum(int(r["trials"]) for r in reasons) > 0
    assert f["gpu_hours_lost"] == pytest.approx(floats(reasons, "gpu_hours_lost").sum(), rel=1e-9)
    ranked = sorted(
        (r for r in reasons if r["reason"] not in summary.NOT_A_REASON), key=lambda r: -float(r["gpu_hours_lost"])
    )
    assert [x["reason"] for x in f["top_reasons"]] == [r["reason"] for r in ranked[: summary.TOP_REASONS]]
    assert f["top_reasons"][0]["reason"] == "gpu_hw"
    assert f["top_reasons"][0]["gpu_hours_lost"] == pytest.approx(float(ranked[0]["gpu_hours_lost"]), rel=1e-9)
    assert set(f["gpu_time_lost_pct_by_category"]) == {r["category"] for r in read_csv(out / "failure_categories.csv")}
    assert s["attempts_with_speed"] == int(read_csv(out / "speed_summary.csv")[0]["attempts"]) > 0
    slow = [r["machine_id"] for r in read_csv(out / "machine_speed.csv") if r["flag"] == "slow"]
    assert [x["machine_id"] for x in s["slow_machines"]] == slow


def test_json_is_the_same_on_a_rebuild(json_run: tuple[dict, Path], synthetic_store: Path) -> None:
    h, out = json_run
    again = report(synthetic_store, out, "--json", "--quiet")
    assert again.exit_code == 0 and again.stderr == ""
    assert json.loads(again.stdout) == h
    assert again.stdout.index('"overview"') < again.stdout.index('"utilization"')


def test_text_summary_holds_the_headline_numbers(
    json_run: tuple[dict, Path], synthetic_store: Path, tmp_path: Path
) -> None:
    h, _ = json_run
    result = report(synthetic_store, tmp_path / "r")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert not ANSI.search(text)
    assert text.startswith(f"gca report: {tmp_path / 'r' / 'index.html'}\n")
    q = h["queueing"]
    for fragment in (
        "120 jobs",
        f"{fmt_int(h['overview']['gpu_hours'])} GPU-hours",
        f"mean GPU utilization {fmt_pct(h['utilization']['mean_gpu_util_pct'])}",
        f"median delay {fmt_dur(q['median_s'])}, p90 {fmt_dur(q['p90_s'])}",
        f"main cause fair share ({fmt_pct(q['main_cause_pct'])}",
        f"{h['failures']['failed_attempts']} failed attempts",
        "gpu_hw (infrastructure)",
        f"{h['speed']['attempts_with_speed']} attempts printed a speed",
    ):
        assert fragment in text, fragment
    for section in ("Overview", "Utilization", "Queueing", "Failures", "Speed"):
        assert re.search(rf"^{section} ", text, re.MULTILINE), section
    assert "gca: wrote" in result.stderr and "gca: wrote" not in text


def test_quiet_prints_nothing(synthetic_store: Path, tmp_path: Path) -> None:
    result = report(synthetic_store, tmp_path / "r", "--quiet")
    assert result.exit_code == 0
    assert result.stdout == "" and result.stderr == ""
    assert (tmp_path / "r" / "index.html").exists()


def test_quiet_still_prints_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["report", "--db", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "r"), "--quiet", "--json"]
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("gca: error:") and len(result.stderr.splitlines()) == 1


def test_piped_output_has_no_ansi_codes_even_when_colour_is_forced(synthetic_store: Path, tmp_path: Path) -> None:
    env = {**os.environ, "FORCE_COLOR": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpucluster_analysis",
            "report",
            "--db",
            str(synthetic_store),
            "--out",
            str(tmp_path / "r"),
        ],
        check=False,
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert not ANSI.search(out.stdout)
    assert "Queueing" in out.stdout and "median delay" in out.stdout


def test_a_terminal_gets_a_table(json_run: tuple[dict, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    h, _ = json_run

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    print_rows("gca report: x", summary.text_rows(h), summary.text(h))
    shown = ANSI.sub("", re.sub(r"\x1b\[[0-9;]*m", "", tty.getvalue()))
    assert "gca report: x" in shown
    assert shown.count("Queueing") == 1  # a section's name once, on its first row
    assert "median delay" in shown


def test_missing_sections_are_null_not_errors() -> None:
    h = summary.headline({}, "empty.duckdb")
    assert list(h) == TOP_KEYS
    assert h["overview"]["jobs"] is None and h["queueing"]["median_s"] is None
    assert h["queueing"]["main_cause"] is None and h["speed"]["slow_machines"] == []
    json.dumps(h, allow_nan=False)
    assert "no failed attempts" in summary.text(h)


def test_philly_sample_summary_equals_its_jobs_csv(sample_report) -> None:
    h, jobs = sample_report.summary, read_csv(sample_report.out_dir / "jobs.csv")
    assert h["overview"]["jobs"] == len(jobs)
    assert h["overview"]["gpu_hours"] == pytest.approx(floats(jobs, "gpu_time_s").sum() / 3600, rel=1e-9)
    delays = floats(jobs, "queue_delay_s")
    assert h["queueing"]["median_s"] == pytest.approx(float(np.percentile(delays, 50)), rel=1e-9)
    assert h["queueing"]["p90_s"] == pytest.approx(float(np.percentile(delays, 90)), rel=1e-9)
    sampled = [r for r in jobs if r["util_samples"] not in ("", "0")]
    n = sum(int(r["util_samples"]) for r in sampled)
    assert h["utilization"]["mean_gpu_util_pct"] == pytest.approx(
        sum(float(r["mean_gpu_util_pct"]) * int(r["util_samples"]) for r in sampled) / n, rel=1e-9
    )
    # Philly's sample has no job logs: its failed attempts are all 'no log', which is no root cause
    f = h["failures"]
    assert f["attempts_without_log"] == f["failed_attempts"]
    assert f["top_reasons"] == []
    assert "without a log" in summary.text(h)
    json.dumps(h, allow_nan=False)
