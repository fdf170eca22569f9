"""`generate_trace`: simulate a cluster and write its Philly-format trace with truth.json.

Contract: the same arguments give byte-identical files. Every random draw
comes from a numpy Generator seeded with `[seed, stream]` (one stream per
stage, one per telemetry day), so stages do not disturb each other and
nothing depends on the clock, the hash seed or the chunk size in memory.
`out` must be missing, empty, or a previous `gca synth` output (recognized by
its truth.json); anything else is refused with an InputError so that real
data is never overwritten.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from gpucluster_analysis.errors import InputError
from gpucluster_analysis.synth import clock
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE, Cluster, JobOutcome, JobSpec, RecordedAttempt
from gpucluster_analysis.synth.record import record_attempts
from gpucluster_analysis.synth.scheduler import simulate
from gpucluster_analysis.synth.telemetry import Occupancy, write_telemetry
from gpucluster_analysis.synth.training_speed import (
    TRAINED_REASONS,
    AttemptSpeed,
    draw_families,
    draw_slow_machines,
    plan_attempt,
    slowest_factor,
)
from gpucluster_analysis.synth.truth import job_truth, write_truth
from gpucluster_analysis.synth.waits import StateLog
from gpucluster_analysis.synth.workload import draw_cluster, draw_jobs
from gpucluster_analysis.synth.writers import job_log_records, write_failure_logs, write_job_log, write_machine_list

# Bump when the same arguments start producing different files.
# 2: failure logs print the training speed; a few machines are slow (training_speed.py).
SYNTH_VERSION = 2
GENERATOR_NAME = "gca synth"

OUTPUT_FILES = (
    "cluster_machine_list",
    "cluster_job_log",
    "cluster_gpu_util",
    "cluster_cpu_util",
    "cluster_mem_util",
    "truth.json",
    "quotas.toml",
)
OUTPUT_DIRS = ("logs",)

# Random streams, one per stage (the telemetry takes [seed, TELEMETRY, day]).
_CLUSTER, _JOBS, _SCHEDULER, _RECORD, _MACHINES, _TELEMETRY, _LOGS, _HOSTS = range(1, 9)
# Training speed: the slow machines (both views draw the same), the families, each attempt's values.
SLOW_MACHINES_STREAM, _FAMILIES, _SPEEDS = 9, 10, 11

# Utilization of one job on one server, scaled down when it spans more servers
# (network instead of NVLink/PCIe) and, more mildly, with more GPUs to synchronize.
_LOCALITY = {1: 1.0, 2: 0.85, 3: 0.75, 4: 0.75}
_LOCALITY_WIDE = 0.65


def _base_util(efficiency: float, gpus: int, servers: int) -> float:
    sync = 1.0 - 0.07 * math.log2(max(gpus, 1))
    return 100.0 * efficiency * sync * _LOCALITY.get(servers, _LOCALITY_WIDE)


@dataclass(frozen=True)
class SynthResult:
    """What `generate_trace` wrote; `str()` is the one-line summary the CLI prints."""

    out: Path
    jobs: int
    attempts: int
    gpu_rows: int
    failed_attempt_logs: int

    def __str__(self) -> str:
        return (
            f"{self.out}: {self.jobs:,} jobs, {self.attempts:,} attempts, {self.gpu_rows:,} GPU util rows, "
            f"logs of {self.failed_attempt_logs:,} failed attempts, truth.json"
        )


def _is_previous_output(out: Path) -> bool:
    truth = out / "truth.json"
    if not truth.is_file():
        return False
    with open(truth, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    try:
        head = json.loads(first.rstrip().rstrip(",") + "}")
    except json.JSONDecodeError:
        return False
    return isinstance(head, dict) and head.get("generator", {}).get("name") == GENERATOR_NAME


def prepare_output(out: Path, ours: frozenset[str] = frozenset(OUTPUT_FILES) | frozenset(OUTPUT_DIRS)) -> None:
    """Create `out`, or clear a previous synth output in it (entries all named in `ours`);
    refuse anything else."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a directory", hint="pass --out a new or empty directory")
    if out.is_dir():
        entries = sorted(p.name for p in out.iterdir())
        if entries:
            foreign = [e for e in entries if e not in ours]
            if foreign or not _is_previous_output(out):
                what = (
                    f"it holds {foreign[0]!r}"
                    if foreign
                    else "it is not a previous gca synth output (no truth.json from gca synth)"
                )
                raise InputError(
                    f"{out}: directory is not empty and {what}",
                    hint="pass --out a new or empty directory, or one that gca synth wrote before",
                )
            for name in entries:
                path = out / name
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    out.mkdir(parents=True, exist_ok=True)


def check_arguments(jobs: int, machines: int, days: float, seed: int) -> None:
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"--jobs must be a whole number of at least 1, not {jobs!r}")
    if isinstance(machines, bool) or not isinstance(machines, int) or machines < 1:
        raise InputError(f"--machines must be a whole number of at least 1, not {machines!r}")
    if not isinstance(days, int | float) or not days * 1440 >= 1 or days > 3650:
        raise InputError(f"--days must be between one minute (0.0007) and 3650, not {days!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"--seed must be a whole number of at least 0, not {seed!r}")


def _occupancy(specs: list[JobSpec], records: list[list[RecordedAttempt]]) -> Occupancy:
    """Every attempt that really ran on GPUs, plus one idle sentinel so lookups never fail."""
    start: list[int] = []
    end: list[int] = []
    job: list[int] = []
    base: list[float] = []
    noise: list[float] = []
    counted: list[bool] = []
    owner: list[int] = []
    gpu: list[int] = []
    for spec, recs in zip(specs, records, strict=True):
        for r in recs:
            a = r.real
            if not a.occupies_gpus:
                continue
            i = len(start)
            start.append(a.start)
            end.append(a.end)
            job.append(spec.index)
            base.append(_base_util(spec.efficiency, sum(len(g) for _, g in a.alloc), len(a.alloc)))
            noise.append(spec.util_noise)
            counted.append(r.attributable)
            for m, gpus in a.alloc:
                for g in gpus:
                    owner.append(i)
                    gpu.append(m * GPUS_PER_MACHINE + g)
    # the idle sentinel
    start.append(0)
    end.append(0)
    job.append(0)
    base.append(0.0)
    noise.append(0.0)
    counted.append(False)
    return Occupancy(
        start=np.array(start, dtype=np.int64),
        end=np.array(end, dtype=np.int64),
        job=np.array(job, dtype=np.int64),
        base=np.array(base),
        noise=np.array(noise),
        counted=np.array(counted, dtype=bool),
        gpu_owner=np.array(owner, dtype=np.int64),
        gpu_global=np.array(gpu, dtype=np.int64),
    )


def _logged_times(specs: list[JobSpec], records: list[list[RecordedAttempt]]) -> list[int]:
    times = [s.submit for s in specs]
    for recs in records:
        for r in recs:
            times.extend(t for t in (r.start, r.end) if t is not None)
    return times


@dataclass(frozen=True)
class Simulation:
    """The simulated cluster and jobs that every view of a trace (Philly, Slurm) writes out."""

    seed: int
    zone_name: str
    t0: int  # start of the window, epoch seconds UTC
    span: int  # seconds
    blackout: clock.Blackout
    cluster: Cluster
    specs: list[JobSpec]
    outcomes: list[JobOutcome]
    states: StateLog  # the cluster after each scheduling instant (waits.py)

    def rng(self, stream: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, stream])


def simulate_window(
    jobs: int, machines: int, days: float, seed: int, start: datetime, emit: Callable[[str], None]
) -> Simulation:
    """Draw the cluster and the jobs and run the scheduler; the same arguments give the same jobs."""
    zone_name = clock.ZONE_NAME
    t0 = clock.local_to_utc(start, zone_name)
    if t0 % 60:
        raise InputError(f"start {start} is not on a whole minute")
    span = round(days * 86_400)

    def rng(stream: int) -> np.random.Generator:
        return np.random.default_rng([seed, stream])

    emit(f"simulating {jobs:,} jobs on {machines:,} machines over {days:g} days (seed {seed})")
    # The simulation runs past the window while the queue drains; cover that too.
    hours = clock.repeated_hours(t0, t0 + span + 60 * 86_400, zone_name)
    blackout = clock.Blackout(tuple((h.second, h.end) for h in hours))
    cluster = draw_cluster(rng(_CLUSTER), machines, jobs)
    specs = draw_jobs(
        rng(_JOBS), cluster, jobs, t0, span, [h for h in hours if h.first >= t0 and h.second <= t0 + span], blackout
    )
    states = StateLog()
    outcomes: list[JobOutcome] = simulate(cluster, specs, rng(_SCHEDULER), blackout, emit, states)
    return Simulation(seed, zone_name, t0, span, blackout, cluster, specs, outcomes, states)


SPEED_RULE = (
    "an attempt prints its family's base speed x the smallest factor among the machines it ran on"
    " (1.0 unless slow_machines lists it) x noise; a family is one user's jobs of one size (Philly),"
    " or of one name and size (Slurm)"
)


def slow_machines_truth(slow: dict[int, float], name: Callable[[int], str]) -> list[dict[str, object]]:
    """truth.json's list of the slow machines, by machine number: name and speed factor."""
    return [{"machine": name(m), "factor": f} for m, f in sorted(slow.items())]


def _plan_speeds(
    sim: Simulation, records: list[list[RecordedAttempt]]
) -> tuple[dict[int, float], dict[tuple[int, int], AttemptSpeed]]:
    """The slow machines, and the speed each failed attempt that trained prints, by (job index,
    position in its attempts list). A family here is a user's jobs of one size (Philly has no job names)."""
    slow = draw_slow_machines(sim.cluster.machines, sim.rng(SLOW_MACHINES_STREAM))
    families = draw_families({(s.user, s.gpus) for s in sim.specs}, sim.rng(_FAMILIES))
    rng = sim.rng(_SPEEDS)
    speeds = {}
    for spec, recs in zip(sim.specs, records, strict=True):
        for r in recs:
            a = r.real
            if a.outcome == "fail" and a.reason in TRAINED_REASONS:
                factor = slowest_factor([m for m, _ in a.alloc], slow)
                speeds[(spec.index, r.source_index)] = plan_attempt(
                    families[(spec.user, spec.gpus)], factor, a.end - a.start, False, rng
                )
    return slow, speeds


def write_quotas(path: Path, cluster: Cluster) -> None:
    """quotas.toml: each VC's GPU quota (the scheduler's hard cap), in the shape `gca report --quotas` reads."""
    lines = ["# GPU quota of each virtual cluster: the most GPUs its jobs may hold at once (gca synth).", "[quotas]"]
    lines += [f"{json.dumps(name)} = {quota}" for name, quota in zip(cluster.vc_names, cluster.vc_quota, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def generate_trace(
    out: Path | str,
    *,
    jobs: int = 500,
    machines: int = 20,
    days: float = 3.0,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
    start: datetime = clock.DEFAULT_START_LOCAL,
) -> SynthResult:
    """Simulate `machines` 8-GPU servers running `jobs` jobs submitted over `days` and write the trace.

    `start` is the naive local (America/Los_Angeles) start of the window; the
    default makes a three-day window cross the 2017-11-05 fall-back.
    """
    emit = log or (lambda _: None)
    check_arguments(jobs, machines, days, seed)
    out = Path(out)
    prepare_output(out)
    sim = simulate_window(jobs, machines, days, seed, start, emit)
    zone_name, t0, span, rng = sim.zone_name, sim.t0, sim.span, sim.rng
    cluster, specs, outcomes = sim.cluster, sim.specs, sim.outcomes
    records = record_attempts(outcomes, rng(_RECORD))
    clock.check_round_trip(_logged_times(specs, records), zone_name)
    n_attempts = sum(len(r) for r in records)
    emit(f"simulated {n_attempts:,} attempts; writing the job log")

    machine_rng = rng(_MACHINES)
    write_machine_list(out / "cluster_machine_list", machines, machine_rng)
    write_quotas(out / "quotas.toml", cluster)
    mem_total = machine_rng.choice(np.array([528_272_672, 264_136_336]), size=machines, p=[0.8, 0.2])
    write_job_log(out / "cluster_job_log", job_log_records(cluster, specs, outcomes, records, zone_name))
    slow, speeds = _plan_speeds(sim, records)
    n_logs = write_failure_logs(out, cluster, specs, records, rng(_LOGS), speeds)
    emit(f"wrote logs of {n_logs:,} failed attempts; writing telemetry")

    telemetry = write_telemetry(
        out,
        machines=machines,
        t0=t0,
        span=span,
        occupancy=_occupancy(specs, records),
        n_jobs=jobs,
        seed=seed,
        stream=_TELEMETRY,
        mem_total_kib=mem_total,
        log=emit,
        zone_name=zone_name,
    )
    job_rows, attempt_rows = job_truth(
        cluster, specs, outcomes, records, telemetry.util_sum, telemetry.util_count, sim.states, speeds
    )
    generator = {
        "name": GENERATOR_NAME,
        "version": SYNTH_VERSION,
        "seed": seed,
        "jobs": jobs,
        "machines": machines,
        "days": days,
        "start_local": start.strftime("%Y-%m-%d %H:%M:%S"),
        "vcs": [{"vc": n, "quota_gpus": q} for n, q in zip(cluster.vc_names, cluster.vc_quota, strict=True)],
        "telemetry": {"gpu_rows": telemetry.gpu_rows, "cpu_rows": telemetry.cpu_rows, "mem_rows": telemetry.mem_rows},
        "slow_machines": slow_machines_truth(slow, lambda m: f"m{m}"),
        "speed_rule": SPEED_RULE,
        "truth_times": "job-log times are never in a repeated hour's second occurrence, "
        "so naive text read as the first occurrence is exact",
    }
    write_truth(out / "truth.json", generator, zone_name, job_rows, attempt_rows)
    return SynthResult(out=out, jobs=jobs, attempts=n_attempts, gpu_rows=telemetry.gpu_rows, failed_attempt_logs=n_logs)
