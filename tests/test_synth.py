"""`gca synth`: determinism, the trace's invariants, and its truth against gca itself.

The truth is checked twice: once by recomputing it here from the written
files with plain Python (so the generator is tested without gca's SQL), and
once by ingesting the trace with gca and comparing jobs.csv to truth.json.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shlex
import subprocess
import sys
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.analyze.prepare import format_for_csv, jobs_table, prepare
from gpucluster_analysis.cli import app
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import ExitCode, InputError
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.speed import read_speed
from gpucluster_analysis.synth import generate_trace
from gpucluster_analysis.synth.training_speed import FORMATS, TRAINED_REASONS

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
LA = ZoneInfo("America/Los_Angeles")
SMALL = {"jobs": 90, "machines": 6, "days": 3.0, "seed": 3}
TAXONOMY = {
    "gpu_hw": "infrastructure",
    "node_fail": "infrastructure",
    "nccl_error": "infrastructure",
    "mpi_failure": "infrastructure",
    "cuda_oom": "framework",
    "host_oom": "framework",
    "import_error": "user",
    "key_error": "user",
    "file_not_found": "user",
    "nan_loss": "user",
}
# gca's jobs.sql does not classify failure logs yet (it writes NULL); see test_failure_columns_match_gca.
UNCLASSIFIED = {"failure_reason", "failure_category"}
# truth.json's wait columns (why each job waited) are not jobs.csv columns: checked by the replay tests
# (and against the simulator's own state in tests/test_synth_waits.py).
WAIT_COLUMNS = ("wait_fair_share_s", "wait_capacity_s", "wait_fragmentation_s", "wait_other_s", "wait_retry_s")
# jobs.csv's speed columns, last in truth.json's rows. They are compared with gca's like every other
# column (mismatches_with_gca): metric and unit exactly, the median to a relative 1e-9 (`same`).
SPEED_COLUMNS = ("speed_metric", "speed_median", "speed_unit")


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def naive_to_utc(text: str) -> datetime | None:
    """domain.md's rule: naive Los Angeles wall-clock time, first occurrence when repeated."""
    if text == "None":
        return None
    local = datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=LA, fold=0)
    return local.astimezone(UTC).replace(tzinfo=None)


def iso(t: datetime | None) -> str | None:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if t else None


def suffixed_to_utc(text: str) -> datetime:
    offset = {"PDT": 7, "PST": 8}[text[20:]]
    return datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S") + timedelta(hours=offset)


def same(expected: Any, got: Any) -> bool:
    if isinstance(expected, float) or isinstance(got, float):
        return expected is not None and got is not None and math.isclose(expected, got, rel_tol=1e-9, abs_tol=1e-6)
    return expected == got


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "trace"
    generate_trace(out, **SMALL)
    return out


@pytest.fixture(scope="module")
def truth(trace: Path) -> dict[str, Any]:
    return json.loads((trace / "truth.json").read_text())


@pytest.fixture(scope="module")
def job_log(trace: Path) -> list[dict[str, Any]]:
    return json.loads((trace / "cluster_job_log").read_text())


def ingest_with_gca(trace: Path, db: Path) -> dict[str, dict[str, Any]]:
    """jobs.csv rows (as the report writes them) from gca's own ingest and queries."""
    with open_store(db) as con:
        reports = ingest_paths(con, [trace], IngestOptions())
        assert {r.path.name: r.status for r in reports if r.path.name.startswith("cluster_")} == {
            name: "loaded"
            for name in (
                "cluster_cpu_util",
                "cluster_gpu_util",
                "cluster_job_log",
                "cluster_machine_list",
                "cluster_mem_util",
            )
        }
        assert all(r.rejects == 0 for r in reports), [(r.path.name, r.reject_samples) for r in reports if r.rejects]
        prepare(con)
        rows = format_for_csv(jobs_table(con)).to_dicts()
    return {row["job_id"]: row for row in rows}


@pytest.fixture(scope="module")
def gca_jobs(trace: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return ingest_with_gca(trace, tmp_path_factory.mktemp("synth-db") / "synth.duckdb")


def mismatches_with_gca(truth_jobs: list[dict[str, Any]], gca_jobs: dict[str, dict[str, Any]]) -> list[tuple[Any, ...]]:
    assert set(gca_jobs) == {row["job_id"] for row in truth_jobs}
    return [
        (row["job_id"], column, value, gca_jobs[row["job_id"]][column])
        for row in truth_jobs
        for column, value in row.items()
        if column not in UNCLASSIFIED
        and column not in WAIT_COLUMNS
        and not same(value, gca_jobs[row["job_id"]][column])
    ]


# --- determinism -------------------------------------------------------------


def test_same_seed_gives_identical_bytes(trace: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    generate_trace(again, **SMALL)
    assert files_of(again) == files_of(trace)


def test_bytes_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    tiny = {"jobs": 40, "machines": 2, "days": 0.5, "seed": 9}
    generate_trace(tmp_path / "here", **tiny)
    code = (
        f"from gpucluster_analysis.synth import generate_trace; generate_trace({str(tmp_path / 'there')!r}, **{tiny!r})"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=REPO)
    assert files_of(tmp_path / "there") == files_of(tmp_path / "here")


def test_another_seed_gives_another_trace(trace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    generate_trace(other, **{**SMALL, "seed": SMALL["seed"] + 1})
    for name in ("cluster_job_log", "cluster_gpu_util", "truth.json"):
        assert (other / name).read_bytes() != (trace / name).read_bytes()


def test_examples_are_what_the_documented_command_writes(tmp_path: Path) -> None:
    readme = (EXAMPLES / "README.md").read_text()
    commands = re.findall(r"^gca synth .*$", readme, flags=re.MULTILINE)
    assert len(commands) == 1, "examples/README.md should give exactly one `gca synth` command line"
    args = shlex.split(commands[0])[2:]
    options = dict(zip(args[::2], args[1::2], strict=True))
    assert options.pop("--out") == "examples/synthetic"
    out = tmp_path / "synthetic"
    generate_trace(
        out,
        jobs=int(options.pop("--jobs")),
        machines=int(options.pop("--machines")),
        days=float(options.pop("--days")),
        seed=int(options.pop("--seed")),
    )
    assert not options, f"unexpected options {options}"
    assert files_of(out) == files_of(EXAMPLES / "synthetic")
    size = sum(len(b) for b in files_of(out).values())
    assert size < 3.2e6, f"the committed example should stay small ({size:,} bytes)"


# --- formats and quirks --------------------------------------------------------


def test_files_have_the_philly_layout(trace: Path) -> None:
    gpu = (trace / "cluster_gpu_util").read_text().splitlines()
    assert gpu[0] == "time,machineId," + ",".join(f"gpu{i}_util" for i in range(8))
    assert all(line.endswith(",") and line.count(",") == 10 for line in gpu[1:])
    assert any(",NA," in line for line in gpu[1:])
    assert (trace / "cluster_cpu_util").read_text().startswith("time,machine_id,cpu_util\n")
    assert (trace / "cluster_mem_util").read_text().startswith("time,machine_id,mem_total,mem_free\n")
    machines = (trace / "cluster_machine_list").read_text().splitlines()
    assert machines[0] == "machineId, number of GPUs, single GPU mem"
    listed = {line.split(",")[0]: line.split(",")[1] for line in machines[1:]}
    assert len(listed) == SMALL["machines"] and "2" in listed.values() and "8" in listed.values()
    log_text = (trace / "cluster_job_log").read_text()
    assert log_text.startswith('[\n    {\n        "status": ')


def test_job_log_has_the_upstream_quirks(job_log: list[dict[str, Any]]) -> None:
    attempts = [a for job in job_log for a in job["attempts"]]
    assert {job["status"] for job in job_log} == {"Pass", "Failed", "Killed"}
    assert any(not job["attempts"] for job in job_log), "a job that never got an attempt"
    assert any(a["end_time"] == "None" and a["start_time"] != "None" for a in attempts)
    assert any(a["start_time"] == "None" and not a["detail"] for a in attempts)
    assert any(a["start_time"] != "None" and a["end_time"] != "None" and not a["detail"] for a in attempts)

    def out_of_order(job: dict[str, Any]) -> bool:
        starts = [naive_to_utc(a["start_time"]) for a in job["attempts"] if a["start_time"] != "None"]
        return starts != sorted(starts)

    assert any(out_of_order(job) for job in job_log)
    assert all(re.fullmatch(r"application_\d+_\d+", job["jobid"]) for job in job_log)


def test_no_gpu_is_double_booked(job_log: list[dict[str, Any]]) -> None:
    windows: dict[tuple[str, str], list[tuple[datetime, datetime, str]]] = defaultdict(list)
    for job in job_log:
        for a in job["attempts"]:
            start, end = naive_to_utc(a["start_time"]), naive_to_utc(a["end_time"])
            if start is None or end is None:
                continue
            assert start < end
            for d in a["detail"]:
                for gpu in d["gpus"]:
                    windows[(d["ip"], gpu)].append((start, end, job["jobid"]))
    assert windows
    for key, spans in windows.items():
        spans.sort()
        for (_, end, who), (start, _, other) in zip(spans, spans[1:], strict=False):
            assert end <= start, f"{key} held by {who} until {end} and by {other} from {start}"


def test_trace_crosses_the_fall_back_with_correct_suffixes(
    trace: Path, job_log: list[dict[str, Any]], truth: dict[str, Any]
) -> None:
    times = list(
        dict.fromkeys(line.split(",", 1)[0] for line in (trace / "cluster_gpu_util").read_text().splitlines()[1:])
    )
    assert "2017-11-05 01:30:00 PDT" in times and "2017-11-05 01:30:00 PST" in times
    instants = [suffixed_to_utc(t) for t in times]
    assert all(b - a == timedelta(minutes=1) for a, b in zip(instants, instants[1:], strict=False)), (
        "one row set per minute, in order"
    )
    for text, instant in zip(times, instants, strict=True):
        assert instant.replace(tzinfo=UTC).astimezone(LA).tzname() == text[20:]
    # The job log has naive times in the repeated hour; truth reads them as the first occurrence.
    truth_jobs = {j["job_id"]: j for j in truth["jobs"]}
    repeated = [j for j in job_log if j["submitted_time"].startswith("2017-11-05 01:")]
    assert repeated
    for job in repeated:
        assert truth_jobs[job["jobid"]]["submit_time"] == iso(naive_to_utc(job["submitted_time"]))
        assert truth_jobs[job["jobid"]]["submit_time"].startswith("2017-11-05T08:")


def test_failed_attempts_have_logs(trace: Path, truth: dict[str, Any]) -> None:
    failed = [a for a in truth["attempts"] if a["failure_reason"]]
    assert failed and {a["failure_reason"] for a in failed} <= set(TAXONOMY)
    expected = {f"{a['log_dir']}/{name}" for a in failed for name in ("stdout.log", "stderr.log")}
    written = {str(p.relative_to(trace)) for p in (trace / "logs").rglob("*.log")}
    assert written == expected
    for a in failed:
        assert a["log_dir"] == f"logs/{a['job_id']}/attempt_{a['source_index']}"
        assert a["failure_category"] == TAXONOMY[a["failure_reason"]]
    stderr = {a["failure_reason"]: (trace / a["log_dir"] / "stderr.log").read_text() for a in failed}
    if "cuda_oom" in stderr:
        assert "CUDA out of memory" in stderr["cuda_oom"] or "OOM when allocating" in stderr["cuda_oom"]
    if "import_error" in stderr:
        assert "Error: " in stderr["import_error"]


# --- the truth ------------------------------------------------------------------


def recomputed_truth(trace: Path, job_log: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """jobs.csv recomputed from the written files alone, with domain.md's definitions."""
    samples: dict[tuple[str, int, datetime], float] = {}
    with open(trace / "cluster_gpu_util", newline="") as f:
        reader = csv.reader(f)
        next(reader)
        for row in reader:
            t = suffixed_to_utc(row[0])
            for gpu, cell in enumerate(row[2:10]):
                if cell != "NA":
                    samples[(row[1], gpu, t)] = float(cell)
    status = {"Pass": "passed", "Failed": "failed", "Killed": "killed"}
    out = {}
    for job in job_log:
        attempts = []
        for index, a in enumerate(job["attempts"]):
            alloc = [(d["ip"], int(g[3:])) for d in a["detail"] for g in d["gpus"]]
            attempts.append((naive_to_utc(a["start_time"]), naive_to_utc(a["end_time"]), index, alloc))
        ordered = sorted(attempts, key=lambda x: (x[0] is None, x[0] or datetime.min, x[2]))
        starts = [a[0] for a in attempts if a[0]]
        ends = [a[1] for a in attempts if a[1]]
        first, last = (min(starts) if starts else None), (max(ends) if ends else None)
        sized = next((a for a in ordered if a[3]), None)
        timed = [a for a in attempts if a[0] and a[1]]
        cells: dict[tuple[str, int, datetime], float] = {}
        for start, end, _, alloc in timed:
            t = start.replace(second=0) + (timedelta(minutes=1) if start.second else timedelta())
            while t < end:
                for machine, gpu in alloc:
                    if (machine, gpu, t) in samples:
                        cells[(machine, gpu, t)] = samples[(machine, gpu, t)]
                t += timedelta(minutes=1)
        submit = naive_to_utc(job["submitted_time"])
        out[job["jobid"]] = {
            "job_id": job["jobid"],
            "source": "philly",
            "user": job["user"],
            "vc": job["vc"],
            "status": status[job["status"]],
            "submit_time": iso(submit),
            "first_start_time": iso(first),
            "end_time": iso(last),
            "attempts": len(attempts),
            "num_gpus": len(sized[3]) if sized else None,
            "num_servers": len({m for m, _ in sized[3]}) if sized else None,
            "queue_delay_s": (first - submit).total_seconds() if first and submit else None,
            "run_time_s": (last - first).total_seconds() if first and last else None,
            "gpu_time_s": sum((e - s).total_seconds() * len(al) for s, e, _, al in timed) if timed else None,
            "mean_gpu_util_pct": sum(cells.values()) / len(cells) if cells else None,
            "util_samples": len(cells),
        }
    return out


def test_truth_follows_from_the_written_files(
    trace: Path, job_log: list[dict[str, Any]], truth: dict[str, Any]
) -> None:
    expected = recomputed_truth(trace, job_log)
    assert [j["job_id"] for j in truth["jobs"]] == list(expected)
    for row in truth["jobs"]:
        assert list(row) == [
            *expected[row["job_id"]],
            "failure_reason",
            "failure_category",
            *WAIT_COLUMNS,
            *SPEED_COLUMNS,
        ]
        for column, value in expected[row["job_id"]].items():
            assert same(value, row[column]), (row["job_id"], column, value, row[column])
        failed = row["status"] == "failed"
        assert (row["failure_reason"] is not None) == failed
        assert row["failure_category"] == (TAXONOMY[row["failure_reason"]] if failed else None)
    assert any(row["util_samples"] > 0 for row in truth["jobs"])
    assert any(row["attempts"] == 0 and row["util_samples"] == 0 for row in truth["jobs"])


def test_truth_matches_gca_jobs_csv(truth: dict[str, Any], gca_jobs: dict[str, dict[str, Any]]) -> None:
    mismatches = mismatches_with_gca(truth["jobs"], gca_jobs)
    assert not mismatches, mismatches[:10]
    assert any(row["speed_median"] is not None for row in truth["jobs"]), "the speed columns are compared on some job"


# --- training speed -------------------------------------------------------------------


def test_failure_logs_print_the_speed_truth_says(trace: Path, truth: dict[str, Any]) -> None:
    """Each failed attempt's stdout prints the speed its truth row gives, as gca's extractor
    reads it (median after the warm-up, exactly); stderr prints none; attempts that failed
    before training (import and key errors, launch failures) print none."""
    logged = [a for a in truth["attempts"] if a["log_dir"]]
    for a in logged:
        got = read_speed(trace / a["log_dir"] / "stdout.log")
        assert read_speed(trace / a["log_dir"] / "stderr.log") is None, a["log_dir"]
        want = a["speed"]
        assert (want is not None) == (a["failure_reason"] in TRAINED_REASONS), a["log_dir"]
        if want is None:
            assert got is None, a["log_dir"]
        else:
            assert got is not None and (got.metric, got.median, got.unit) == (
                want["metric"],
                want["median"],
                want["unit"],
            )
            assert got.samples_seen == want["samples"] and got.warmup_dropped == 1, a["log_dir"]
    assert sum(a["speed"] is not None for a in logged) > 10
    assert {a["speed"]["format"] for a in logged if a["speed"]} >= set(FORMATS) - {"hf_trainer"}


def test_truth_names_the_slow_machines_and_each_attempts_factor(truth: dict[str, Any]) -> None:
    slow = {m["machine"]: m["factor"] for m in truth["generator"]["slow_machines"]}
    assert len(slow) == 1 and all(0.70 <= f <= 0.85 for f in slow.values())  # 6 machines: one slow
    speeds = [a for a in truth["attempts"] if a["speed"]]
    for a in speeds:
        machines = [p["machine"] for p in a["real_allocation"]]
        # a gang runs at the pace of its slowest machine; its speed is the family's base x that, +- noise
        assert a["speed"]["factor"] == min(slow.get(m, 1.0) for m in machines)
        assert 0.9 < a["speed"]["median"] / (a["speed"]["base"] * a["speed"]["factor"]) < 1.1
    assert any(a["speed"]["factor"] < 1 for a in speeds) and any(a["speed"]["factor"] == 1 for a in speeds)


def test_example_truth_matches_gca_jobs_csv(tmp_path: Path) -> None:
    example = EXAMPLES / "synthetic"
    truth_jobs = json.loads((example / "truth.json").read_text())["jobs"]
    mismatches = mismatches_with_gca(truth_jobs, ingest_with_gca(example, tmp_path / "example.duckdb"))
    assert not mismatches, mismatches[:10]


def test_failure_columns_match_gca(truth: dict[str, Any], gca_jobs: dict[str, dict[str, Any]]) -> None:
    mismatches = [
        (row["job_id"], c, row[c], gca_jobs[row["job_id"]][c])
        for row in truth["jobs"]
        for c in sorted(UNCLASSIFIED)
        if row[c] != gca_jobs[row["job_id"]][c]
    ]
    assert not mismatches, mismatches[:10]


# --- arguments, output directory, command line ------------------------------------


@pytest.mark.parametrize("bad", [{"jobs": 0}, {"machines": 0}, {"days": 0.0}, {"seed": -1}])
def test_bad_arguments_are_input_errors(tmp_path: Path, bad: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        generate_trace(tmp_path / "out", **{**SMALL, **bad})


def test_refuses_a_directory_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "cluster_job_log").write_text("[]")
    with pytest.raises(InputError, match="not a previous gca synth output"):
        generate_trace(tmp_path, jobs=5, machines=1, days=0.1, seed=0)
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="notes.txt"):
        generate_trace(tmp_path, jobs=5, machines=1, days=0.1, seed=0)
    with pytest.raises(InputError, match="not a directory"):
        generate_trace(tmp_path / "notes.txt", jobs=5, machines=1, days=0.1, seed=0)


def test_overwrites_its_own_output(tmp_path: Path) -> None:
    generate_trace(tmp_path / "t", jobs=40, machines=2, days=0.5, seed=1)
    first = files_of(tmp_path / "t")
    generate_trace(tmp_path / "t", jobs=30, machines=2, days=0.5, seed=2)
    generate_trace(tmp_path / "t", jobs=40, machines=2, days=0.5, seed=1)
    assert files_of(tmp_path / "t") == first


def test_cli_writes_a_trace(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "cli"
    args = ["synth", "--out", str(out), "--jobs", "30", "--machines", "2", "--days", "0.5", "--seed", "4"]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == ExitCode.OK, result.output
    assert result.stdout == ""
    assert "gca: wrote" in result.stderr and "30 jobs" in result.stderr
    assert json.loads((out / "truth.json").read_text())["generator"]["seed"] == 4
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "data.csv").write_text("x")
    result = runner.invoke(app, ["synth", "--out", str(tmp_path / "other")])
    assert result.exit_code == ExitCode.USAGE
    assert "gca: error:" in result.stderr and "Traceback" not in result.output
