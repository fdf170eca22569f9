"""`gca synth --format slurm`: the Slurm view of a synthetic trace and its truth.json.

The first tests read the written files back with plain Python (csv, zoneinfo, a small
hostlist expander) and check them against truth.json, which the generator computes from
its own knowledge. The end-to-end test at the bottom ingests the trace with gca and
compares gca's jobs.csv to truth.json.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gpucluster_analysis.errors import InputError
from gpucluster_analysis.synth.slurm import generate_slurm_trace
from gpucluster_analysis.synth.slurm_jobs import compress_hostlist, slurm_duration
from gpucluster_analysis.synth.slurm_sacct import SACCT_COLUMNS
from tests.store_helpers import prepared_store

LA = ZoneInfo("America/Los_Angeles")
STATUS_OF_STATE = {
    "COMPLETED": "passed",
    "FAILED": "failed",
    "OUT_OF_MEMORY": "failed",
    "CANCELLED": "killed",
    "NODE_FAIL": "node_fail",
}


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One day over the 2017-11-05 fall-back, so the repeated hour is in the files.
    out = tmp_path_factory.mktemp("slurm") / "trace"
    generate_slurm_trace(
        out, jobs=160, machines=6, days=1.25, seed=11, interval_s=120, start=datetime(2017, 11, 4, 12, 0)
    )
    return out


@pytest.fixture(scope="module")
def truth(trace: Path) -> dict:
    return json.loads((trace / "truth.json").read_text())


def utc(text: str) -> datetime:
    """A naive Los Angeles time from sacct/nvidia-smi, read as domain.md says (first occurrence)."""
    local = datetime.fromisoformat(text.replace("/", "-"))
    return local.replace(tzinfo=LA, fold=0).astimezone(UTC).replace(tzinfo=None)


def iso(t: datetime | None) -> str | None:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if t else None


def expand(hostlist: str) -> list[str]:
    match = re.fullmatch(r"(\w+?)\[([\d,\-]+)\]", hostlist)
    if not match:
        return [hostlist]
    hosts = []
    for part in match.group(2).split(","):
        lo, _, hi = part.partition("-")
        for n in range(int(lo), int(hi or lo) + 1):
            hosts.append(f"{match.group(1)}{n:0{len(lo)}d}")
    return hosts


def sacct_rows(trace: Path) -> list[dict[str, str]]:
    with (trace / "sacct.txt").open(newline="") as f:
        reader = csv.reader(f, delimiter="|")
        header = next(reader)
        assert tuple(header) == SACCT_COLUMNS
        rows = [dict(zip(header, r, strict=True)) for r in reader]
    return rows


def test_same_arguments_same_bytes(tmp_path: Path) -> None:
    def digest(folder: Path) -> str:
        h = hashlib.sha256()
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
        return h.hexdigest()

    generate_slurm_trace(tmp_path / "a", jobs=40, machines=3, days=0.3, seed=5, interval_s=300)
    generate_slurm_trace(tmp_path / "b", jobs=40, machines=3, days=0.3, seed=5, interval_s=300)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    # rerunning into a previous output replaces it; a folder with anything else is refused
    generate_slurm_trace(tmp_path / "a", jobs=40, machines=3, days=0.3, seed=5, interval_s=300)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="notes.txt"):
        generate_slurm_trace(tmp_path / "c", jobs=5, machines=1, days=0.1)
    with pytest.raises(InputError, match="--dcgm-interval"):
        generate_slurm_trace(tmp_path / "d", jobs=5, machines=1, days=0.1, dcgm_interval_s=0)


def test_helpers() -> None:
    assert compress_hostlist([2, 3, 6]) == "gpu[003-004,007]"
    assert compress_hostlist([0]) == "gpu001"
    assert expand("gpu[003-004,007]") == ["gpu003", "gpu004", "gpu007"]
    assert (slurm_duration(59), slurm_duration(3 * 86_400 + 3661)) == ("00:00:59", "3-01:01:01")


def test_sacct_reads_back_to_the_truth(trace: Path, truth: dict) -> None:
    rows = sacct_rows(trace)
    allocations: dict[str, list[dict[str, str]]] = defaultdict(list)
    steps: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        base, dot, step = r["JobID"].partition(".")
        if dot:
            steps[base].add(step)
        else:
            allocations[base].append(r)
    by_id = {j["job_id"]: j for j in truth["jobs"]}
    assert set(allocations) == set(by_id)
    kinds = defaultdict(int)
    for job_id, runs in allocations.items():
        want = by_id[job_id]
        started = [r for r in runs if r["NodeList"] != "None assigned"]
        kinds["requeued"] += len(runs) > 1
        kinds["array"] += "_" in job_id
        kinds["pending_cancel"] += len(started) < len(runs)
        state = runs[-1]["State"].split()[0]
        assert STATUS_OF_STATE[state] == want["status"], job_id
        assert want["attempts"] == len(started)  # a row with no node (cancelled while pending) is no attempt
        assert iso(utc(runs[0]["Submit"])) == want["submit_time"]
        assert iso(utc(runs[0]["Eligible"])) == want["eligible_time"]
        starts = [utc(r["Start"]) for r in started]
        ends = [utc(r["End"]) for r in started]
        assert iso(min(starts) if starts else None) == want["first_start_time"]
        assert iso(max(ends) if ends else None) == want["end_time"]
        if starts:
            gpus = [int(re.search(r"gres/gpu=(\d+)", r["AllocTRES"]).group(1)) for r in started]
            assert gpus[0] == want["num_gpus"] and len(expand(started[0]["NodeList"])) == want["num_servers"]
            gpu_time = sum(
                (utc(r["End"]) - utc(r["Start"])).total_seconds() * g for r, g in zip(started, gpus, strict=True)
            )
            assert gpu_time == want["gpu_time_s"]
            assert (min(starts) - utc(runs[0]["Eligible"])).total_seconds() == want["queue_delay_s"]
            assert {"extern"} <= steps[job_id]
    # every kind of row the issue lists is present
    assert kinds["requeued"] and kinds["array"] and kinds["pending_cancel"], kinds
    assert {r["State"].split()[0] for r in rows} >= {"COMPLETED", "FAILED", "OUT_OF_MEMORY", "CANCELLED", "REQUEUED"}


def test_gpu_logs_hold_exactly_the_truths_samples(trace: Path, truth: dict) -> None:
    samples: dict[tuple[str, int], list[tuple[datetime, float | None]]] = defaultdict(list)
    headers = 0
    for path in sorted((trace / "gpu").glob("*.csv")):
        with path.open() as f:
            for row in csv.reader(f, skipinitialspace=True):
                if row[0] == "timestamp":
                    headers += 1
                    assert row[4] == "utilization.gpu [%]"
                    continue
                value = None if row[4] == "[N/A]" else float(row[4].removesuffix(" %"))
                samples[(path.stem, int(row[1]))].append((utc(row[0]), value))
    assert headers >= 2 * 6  # the header again where a new day's log starts
    per_job: dict[str, list[float]] = defaultdict(list)
    for a in truth["attempts"]:
        if a["start_time"] is None:
            continue
        start, end = (datetime.fromisoformat(a[k].removesuffix("Z")) for k in ("start_time", "end_time"))
        for place in a["allocation"]:
            for g in place["gpus"]:
                per_job[a["job_id"]] += [
                    v for t, v in samples[(place["machine"], g)] if start <= t < end and v is not None
                ]
    checked = 0
    for job in truth["jobs"]:
        values = per_job.get(job["job_id"], [])
        assert job["util_samples"] == len(values), job["job_id"]
        if values:
            assert math.isclose(job["mean_gpu_util_pct"], sum(values) / len(values), rel_tol=1e-12)
            checked += 1
    assert checked > 100


PROM_SAMPLE = re.compile(
    r'(DCGM_FI_PROF_\w+)\{gpu="(\d)",UUID="(GPU-[0-9a-f-]{36})",Hostname="(\w+)"\} (NaN|[01]\.\d{3}) (\d{13})'
)
PROF_FIELDS = (
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
)


def dcgm_samples(trace: Path) -> dict[tuple[str, int], dict[int, dict[str, int | None]]]:
    """(host, GPU) -> epoch ms -> field -> value in thousandths (None for NaN), from dcgm/*.prom."""
    uuids = {}
    for path in (trace / "gpu").glob("*.csv"):
        with path.open() as f:
            for row in csv.reader(f, skipinitialspace=True):
                if row[0] != "timestamp":
                    uuids[(path.stem, int(row[1]))] = row[2]
    samples: dict[tuple[str, int], dict[int, dict[str, int | None]]] = defaultdict(lambda: defaultdict(dict))
    for path in sorted((trace / "dcgm").glob("*.prom")):
        for line in path.read_text().splitlines():
            if line.startswith("#"):
                assert re.fullmatch(r"# (HELP|TYPE) DCGM_FI_PROF_\w+ .+", line), line
                continue
            match = PROM_SAMPLE.fullmatch(line)
            assert match, line
            name, gpu, uuid, host, value, stamp = match.groups()
            assert name in PROF_FIELDS and host == path.stem and uuid == uuids[(host, int(gpu))]
            fields = samples[(host, int(gpu))][int(stamp)]
            assert name not in fields, line
            fields[name] = None if value == "NaN" else round(float(value) * 1000)
    return samples


def test_dcgm_scrapes_hold_exactly_the_truths_profiling(trace: Path, truth: dict) -> None:
    samples = dcgm_samples(trace)
    interval_ms = 1000 * truth["generator"]["dcgm_interval_s"]
    assert sorted(samples) == [(f"gpu{m:03d}", g) for m in range(1, 7) for g in range(8)]
    nan = 0
    for series in samples.values():
        stamps = sorted(series)
        # one scrape per interval (the milliseconds vary per scrape), through the repeated hour too
        assert all(abs(s - stamps[0] - k * interval_ms) < 1000 for k, s in enumerate(stamps))
        for fields in series.values():
            assert set(fields) == set(PROF_FIELDS)
            gr, sm, tensor, dram = (fields[f] for f in PROF_FIELDS)
            if sm is None:
                assert gr is None and tensor is None and dram is None  # profiling paused: every field
                nan += 1
            else:
                assert 0 <= tensor <= sm <= gr <= 1000 and 0 <= dram <= 1000
    assert nan
    per_job: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for a in truth["attempts"]:
        if a["start_time"] is None:
            continue
        start, end = (int(datetime.fromisoformat(a[k]).timestamp()) * 1000 for k in ("start_time", "end_time"))
        for place in a["allocation"]:
            for g in place["gpus"]:
                for stamp, fields in samples[(place["machine"], g)].items():
                    sm = fields["DCGM_FI_PROF_SM_ACTIVE"]
                    if start <= stamp < end and sm is not None:
                        per_job[a["job_id"]].append((sm, fields["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"]))
    checked = 0
    for job in truth["jobs"]:
        values = per_job.get(job["job_id"], [])
        n = len(values)
        assert job["sm_samples"] == n, job["job_id"]
        assert job["mean_sm_active_pct"] == (sum(v[0] for v in values) / (10 * n) if n else None), job["job_id"]
        assert job["mean_tensor_active_pct"] == (sum(v[1] for v in values) / (10 * n) if n else None), job["job_id"]
        checked += n > 0
    assert checked > 100


def test_some_jobs_look_busy_but_are_not(truth: dict) -> None:
    sampled = [j for j in truth["jobs"] if j["sm_samples"] and j["util_samples"]]
    busy_idle = [j for j in sampled if j["mean_gpu_util_pct"] >= 80 and j["mean_sm_active_pct"] <= 20]
    working = [
        j for j in sampled if j["mean_gpu_util_pct"] >= 50 and j["mean_sm_active_pct"] >= 0.5 * j["mean_gpu_util_pct"]
    ]
    assert busy_idle and len(working) > 5 * len(busy_idle), (len(busy_idle), len(working))
    assert any(j["mean_tensor_active_pct"] == 0 for j in sampled) and any(
        j["mean_tensor_active_pct"] > 20 for j in sampled
    )


def test_logs_and_scontrol_name_the_gpus_of_the_last_run(trace: Path, truth: dict) -> None:
    last_run: dict[str, dict] = {}
    for a in truth["attempts"]:
        if a["start_time"] is not None:
            last_run[a["job_id"]] = a
    logs = sorted((trace / "logs").glob("slurm-*.out"))
    assert logs
    for path in logs:
        job_id = path.name.removeprefix("slurm-").removesuffix(".out")
        run = last_run[job_id]
        visible = re.search(r"^CUDA_VISIBLE_DEVICES=([\d,]+)$", path.read_text(), re.M).group(1)
        assert [int(g) for g in visible.split(",")] == run["allocation"][0]["gpus"]
    failed = [j for j in truth["jobs"] if j["failure_reason"] and j["status"] == "failed"]  # a kill needs no log
    assert failed and all((trace / "logs" / f"slurm-{j['job_id']}.out").exists() for j in failed)
    snapshots = sorted((trace / "scontrol").glob("*.txt"))
    assert snapshots
    for path in snapshots:
        run = last_run[path.stem]
        found = re.findall(r"Nodes=(\S+) .*GRES=gpu:v100:\d+\(IDX:([\d,\-]+)\)", path.read_text())
        expected = []
        for place in run["allocation"]:
            spans = []
            for part in found[len(expected)][1].split(","):
                lo, _, hi = part.partition("-")
                spans += list(range(int(lo), int(hi or lo) + 1))
            expected.append((place["machine"], place["gpus"], found[len(expected)][0], spans))
        assert all(m == host and g == idx for m, g, host, idx in expected)


def test_logs_print_the_speed_truth_says(trace: Path, truth: dict) -> None:
    """Each slurm-<jobid>.out prints the speed of the job's last run that truth.json gives, as
    gca's extractor reads it (metric, median after the warm-up, unit: exactly)."""
    from gpucluster_analysis.speed import read_speed
    from gpucluster_analysis.synth.training_speed import FORMATS, TRAINED_REASONS

    run_speed = {a["job_id"]: a["speed"] for a in truth["attempts"] if a["log"]}
    slow = {m["machine"]: m["factor"] for m in truth["generator"]["slow_machines"]}
    assert len(slow) == 1  # 6 machines: one slow
    formats = set()
    for job in truth["jobs"]:
        path = trace / "logs" / f"slurm-{job['job_id']}.out"
        got = read_speed(path) if path.exists() else None
        assert ((got.metric, got.median, got.unit) if got else (None, None, None)) == (
            job["speed_metric"],
            job["speed_median"],
            job["speed_unit"],
        ), job["job_id"]
        if job["job_id"] in run_speed:
            want = run_speed[job["job_id"]]
            assert (want is None) == (job["speed_median"] is None)
            if want is not None:
                formats.add(want["format"])
                assert want["median"] == job["speed_median"]
    assert formats == set(FORMATS)
    for a in truth["attempts"]:
        if a["speed"]:
            assert a["outcome"] in ("pass", "killed") or a["failure_reason"] in TRAINED_REASONS
            assert a["speed"]["factor"] == min(slow.get(p["machine"], 1.0) for p in a["allocation"])
            assert 0.9 < a["speed"]["median"] / (a["speed"]["base"] * a["speed"]["factor"]) < 1.1
    # the HF Trainer's run average when the run completed, its bar's it/s (or s/it) when it did not
    assert {j["speed_metric"] for j in truth["jobs"]} == {None, "iterations_per_s", "samples_per_s"}


# --- end to end: gca ingest + jobs.csv against truth.json ------------------------------

# jobs.csv columns compared on every job. Not compared: `attribution` (how gca found the
# samples; the truth records the evidence per run as attempts[].gpu_evidence instead).
# The speed columns: metric and unit exactly, the median to a relative 1e-9 (`_same`).
COMPARED = (
    "job_id",
    "source",
    "user",
    "vc",
    "status",
    "submit_time",
    "first_start_time",
    "end_time",
    "attempts",
    "num_gpus",
    "num_servers",
    "queue_delay_s",
    "run_time_s",
    "gpu_time_s",
    "failure_reason",
    "failure_category",
    "failure_evidence",
    "eligible_time",
    "queue_basis",
    "speed_metric",
    "speed_median",
    "speed_unit",
)
# Compared where every run's GPUs can be known from the files (scontrol -d, the log's
# CUDA_VISIBLE_DEVICES when all hosts of the run have the same indices, or whole nodes).
# Elsewhere gca can only attribute node-level: a requeued job's earlier runs are not in
# slurm-<jobid>.out (Slurm truncates it on requeue), and a log prints one host's indices.
UTIL = ("mean_gpu_util_pct", "util_samples")
# DCGM's profiling means, compared on the same jobs. Stored as REAL (float32), but summed
# as integer billionths (attributed_activity.sql), which gives back the three decimals written.
PROFILING = ("mean_sm_active_pct", "mean_tensor_active_pct")


@pytest.fixture(scope="module")
def gca_jobs(trace: Path, truth: dict, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    from gpucluster_analysis.analyze.prepare import format_for_csv, jobs_table
    from gpucluster_analysis.db import open_store
    from gpucluster_analysis.ingest import IngestOptions, ingest_paths

    db = tmp_path_factory.mktemp("slurm_store") / "s.duckdb"
    with open_store(db) as con:
        reports = ingest_paths(con, [trace], IngestOptions(zone=truth["zone"]))
    formats = {r.format for r in reports}
    assert {"slurm_sacct", "slurm_scontrol", "nvsmi_csv", "dcgm_prom", "job_log"} <= formats, formats
    assert [(r.path.name, r.status, r.rejects) for r in reports if r.status != "loaded" or r.rejects] == []
    with prepared_store(db) as con:
        return {r["job_id"]: r for r in format_for_csv(jobs_table(con)).to_dicts()}


def _same(got: object, want: object, *, rel_tol: float = 1e-9, abs_tol: float = 1e-9) -> bool:
    if want is None or got is None:
        return got == want
    if isinstance(want, float) or isinstance(got, float):
        return math.isclose(float(got), float(want), rel_tol=rel_tol, abs_tol=abs_tol)
    return got == want


def _exact_runs(truth: dict) -> set[str]:
    inexact = {a["job_id"] for a in truth["attempts"] if a["gpu_evidence"] == "node_level"}
    return {j["job_id"] for j in truth["jobs"]} - inexact


def test_gca_jobs_csv_matches_truth(gca_jobs: dict, truth: dict) -> None:
    assert set(gca_jobs) == {j["job_id"] for j in truth["jobs"]}
    exact = _exact_runs(truth)
    mismatches = []
    for want in truth["jobs"]:
        got = gca_jobs[want["job_id"]]
        columns = COMPARED + (UTIL if want["job_id"] in exact else ())
        mismatches += [(want["job_id"], c, want[c], got[c]) for c in columns if not _same(got[c], want[c])]
        if want["job_id"] in exact:
            mismatches += [(want["job_id"], c, want[c], got[c]) for c in PROFILING if not _same(got[c], want[c])]
    assert mismatches == []
    # guards against a vacuous pass: most jobs have their utilization compared, and it is there
    with_util = [j for j in truth["jobs"] if j["job_id"] in exact and j["util_samples"]]
    assert len(with_util) > 0.75 * len(truth["jobs"])
    assert {j["failure_reason"] for j in truth["jobs"]} > {None}
    with_sm = [j for j in truth["jobs"] if j["job_id"] in exact and j["mean_sm_active_pct"] is not None]
    assert len(with_sm) > 0.5 * len(truth["jobs"]) and any(j["mean_tensor_active_pct"] for j in with_sm)
    assert len([j for j in truth["jobs"] if j["speed_median"] is not None]) > 0.75 * len(truth["jobs"])


def test_gca_does_not_claim_exact_attribution_without_evidence(gca_jobs: dict, truth: dict) -> None:
    exact = _exact_runs(truth)
    others = [j["job_id"] for j in truth["jobs"] if j["job_id"] not in exact]
    assert others
    claimed = [
        (job_id, gca_jobs[job_id]["attribution"])
        for job_id in others
        if gca_jobs[job_id]["attribution"] in ("scheduler", "scontrol", "cuda_visible_devices", "whole_node")
    ]
    assert claimed == []


def test_example_is_what_the_documented_command_writes(tmp_path: Path) -> None:
    import shlex

    examples = Path(__file__).resolve().parent.parent / "examples"
    commands = re.findall(
        r"^python -m gpucluster_analysis synth --format slurm .*$", (examples / "README.md").read_text(), re.M
    )
    assert len(commands) == 1
    args = shlex.split(commands[0])[6:]
    options = dict(zip(args[::2], args[1::2], strict=True))
    assert options.pop("--out") == "examples/slurm"
    out = tmp_path / "slurm"
    generate_slurm_trace(
        out,
        jobs=int(options.pop("--jobs")),
        machines=int(options.pop("--machines")),
        days=float(options.pop("--days")),
        interval_s=int(options.pop("--interval")),
        dcgm_interval_s=int(options.pop("--dcgm-interval")),
        seed=int(options.pop("--seed")),
    )
    assert not options, f"unexpected options {options}"

    def files(folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    written = files(out)
    assert written == files(examples / "slurm")
    assert sum(len(b) for b in written.values()) < 550_000, "the committed example should stay small"
    assert sum(len(b) for name, b in written.items() if name.startswith("dcgm/")) < 250_000
