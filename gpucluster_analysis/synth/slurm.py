"""The Slurm view of a synthetic trace: sacct, job logs, scontrol, nvidia-smi, truth.

`generate_slurm_trace(out, jobs=, machines=, days=, seed=, interval_s=, log=)` runs the
same simulation as `generate_trace` (same arguments, same jobs, same placements) and
writes what a Slurm site keeps (docs/synth.md, "The Slurm view"):

* `sacct.txt`: `sacct -P --duplicates` output: one allocation row per run plus its
  `.batch`, `.extern` and `.0` steps; a job retried after a failure is requeued and
  repeats its JobID; some jobs are array tasks (`4812345_2`); jobs cancelled while
  pending have `None assigned`; times are naive local time in the trace's zone;
* `logs/slurm-<jobid>.out`: the output of each job's last run (Slurm truncates the file
  when it requeues a job): CUDA_VISIBLE_DEVICES printed at the start, its training speed
  (training_speed.py; not for a run that failed before training), the failure text of a
  failed run, slurmstepd's lines for cancellations and OOM kills;
* `scontrol/<jobid>.txt`: `scontrol show job -d` snapshots of some running jobs, with
  the GPU indices per node (`GRES=gpu:v100:4(IDX:0-3)`);
* `gpu/<host>.csv`: nvidia-smi query logs (slurm_telemetry.py);
* `dcgm/<host>.prom`: dcgm-exporter scrapes of DCGM's profiling fields (slurm_dcgm.py);
* `quotas.toml`: each VC's (Account's) GPU quota, the scheduler's hard cap;
* `sacctmgr_assoc.txt`: the same quotas as `sacctmgr -P show assoc format=Account,User,GrpTRES`
  prints them (each account's GrpTRES `gres/gpu=N`), so that a store needs no quotas file;
* `truth.json`: the jobs.csv every correct reader of these files must produce, from the
  generator's own knowledge (never from the files, never from gca), plus why each job
  waited (waits.py; its first wait here is [Eligible, first Start)).

Events never fall in the second occurrence of a repeated fall-back hour (clock.py), so
every naive time written reads back to the instant it records.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from gpucluster_analysis.errors import InputError
from gpucluster_analysis.synth import clock
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE, Cluster
from gpucluster_analysis.synth.slurm_dcgm import write_dcgm_logs
from gpucluster_analysis.synth.slurm_jobs import JOB_NAMES, SlurmJob, assign_identities, has_log, host_name
from gpucluster_analysis.synth.slurm_logs import write_job_logs, write_scontrol
from gpucluster_analysis.synth.slurm_sacct import sacct_lines
from gpucluster_analysis.synth.slurm_telemetry import Runs, write_gpu_logs
from gpucluster_analysis.synth.slurm_truth import slurm_truth
from gpucluster_analysis.synth.trace import (
    GENERATOR_NAME,
    OUTPUT_DIRS,
    OUTPUT_FILES,
    SLOW_MACHINES_STREAM,
    SPEED_RULE,
    SYNTH_VERSION,
    check_arguments,
    prepare_output,
    simulate_window,
    slow_machines_truth,
    write_quotas,
)
from gpucluster_analysis.synth.training_speed import (
    TRAINED_REASONS,
    AttemptSpeed,
    draw_families,
    draw_slow_machines,
    plan_attempt,
    slowest_factor,
)
from gpucluster_analysis.synth.truth import write_truth

SLURM_FILES = ("sacct.txt", "truth.json", "quotas.toml", "sacctmgr_assoc.txt")
SLURM_DIRS = ("logs", "scontrol", "gpu", "dcgm")

# Streams beyond trace.py's 1..8, so the shared simulation draws stay identical.
_ARRAYS, _ELIGIBLE, _SLURM_LOGS, _SCONTROL, _GPU_LOGS, _LEVELS = range(21, 27)
_DCGM_LOGS, _DCGM_JOBS = 27, 28  # the DCGM scrapes' own, so adding them changed no other draw
_SPEED_FAMILIES, _SPEEDS = 29, 30  # training speed (the slow machines come from trace.py's stream: the same machines)

DCGM_INTERVAL_S = 300  # between dcgm-exporter scrapes, by default


@dataclass(frozen=True)
class SlurmResult:
    out: Path
    jobs: int
    allocation_rows: int  # runs, and cancellations while pending
    gpu_rows: int
    logs: int
    dcgm_rows: int = 0

    def __str__(self) -> str:
        return (
            f"{self.out}: {self.jobs:,} Slurm jobs, {self.allocation_rows:,} allocation rows in sacct.txt, "
            f"{self.logs:,} job logs, "
            f"{self.gpu_rows:,} nvidia-smi rows, {self.dcgm_rows:,} DCGM samples, truth.json"
        )


def prepare_slurm_output(out: Path) -> None:
    """Create `out`, or clear a previous gca synth output (either view) in it; refuse anything else."""
    prepare_output(
        out, frozenset(OUTPUT_FILES) | frozenset(OUTPUT_DIRS) | frozenset(SLURM_FILES) | frozenset(SLURM_DIRS)
    )


def plan_speeds(jobs: list[SlurmJob], machines: int, seed: int) -> tuple[dict[int, float], dict[int, AttemptSpeed]]:
    """The slow machines (trace.py's draw: the same as the Philly view's), and the training speed
    each job's log prints, by job index: the last run's, when it completed, was cancelled, or
    failed once training ran. A family is a user's jobs of one name and size."""
    slow = draw_slow_machines(machines, np.random.default_rng([seed, SLOW_MACHINES_STREAM]))
    families = draw_families(
        {(j.spec.user, JOB_NAMES.index(j.name), j.spec.gpus) for j in jobs},
        np.random.default_rng([seed, _SPEED_FAMILIES]),
    )
    rng = np.random.default_rng([seed, _SPEEDS])
    speeds = {}
    for job in jobs:
        if not has_log(job):
            continue
        run = job.runs[-1]
        if run.outcome in ("pass", "killed") or run.reason in TRAINED_REASONS:
            family = families[(job.spec.user, JOB_NAMES.index(job.name), job.spec.gpus)]
            factor = slowest_factor([m for m, _ in run.alloc], slow)
            speeds[job.spec.index] = plan_attempt(family, factor, run.end - run.start, run.outcome == "pass", rng)
    return slow, speeds


def write_sacctmgr_assoc(path: Path, cluster: Cluster) -> None:
    """The VCs' quotas as Slurm's accounting database prints them: one account row each, no user rows."""
    lines = ["Account|User|GrpTRES"]
    lines += [f"{name}||gres/gpu={quota}" for name, quota in zip(cluster.vc_names, cluster.vc_quota, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _levels(jobs: list[SlurmJob], seed: int) -> Runs:
    """Every run's GPUs with the utilization level its job keeps on them (as in trace.py:
    efficiency x sync(GPUs) x locality(servers)); one idle sentinel so lookups never fail."""
    rng = np.random.default_rng([seed, _LEVELS])
    start: list[int] = []
    end: list[int] = []
    owner_job: list[int] = []
    level: list[float] = []
    noise: list[float] = []
    memory: list[float] = []
    gpu_owner: list[int] = []
    gpu_global: list[int] = []
    for job in jobs:
        spec = job.spec
        mem = float(rng.integers(4_000, 30_000))
        for run in job.runs:
            i = len(start)
            servers = len(run.alloc)
            sync = 1.0 - 0.07 * math.log2(max(spec.gpus, 1))
            locality = {1: 1.0, 2: 0.85, 3: 0.75, 4: 0.75}.get(servers, 0.65)
            idle = run.outcome == "launch_fail"
            start.append(run.start)
            end.append(run.end)
            owner_job.append(spec.index)
            level.append(0.0 if idle else 100.0 * spec.efficiency * sync * locality)
            noise.append(0.0 if idle else spec.util_noise)
            memory.append(0.0 if idle else mem)
            for m, gpus in run.alloc:
                for g in gpus:
                    gpu_owner.append(i)
                    gpu_global.append(m * GPUS_PER_MACHINE + g)
    # the idle sentinel
    start.append(0)
    end.append(0)
    owner_job.append(0)
    level.append(0.0)
    noise.append(0.0)
    memory.append(0.0)
    return Runs(
        start=np.array(start, dtype=np.int64),
        end=np.array(end, dtype=np.int64),
        job=np.array(owner_job, dtype=np.int64),
        level=np.array(level),
        noise=np.array(noise),
        memory_mib=np.array(memory),
        gpu_owner=np.array(gpu_owner, dtype=np.int64),
        gpu_global=np.array(gpu_global, dtype=np.int64),
    )


def generate_slurm_trace(
    out: Path | str,
    *,
    jobs: int = 500,
    machines: int = 20,
    days: float = 3.0,
    seed: int = 0,
    interval_s: int = 60,
    dcgm_interval_s: int = DCGM_INTERVAL_S,
    log: Callable[[str], None] | None = None,
    start: datetime = clock.DEFAULT_START_LOCAL,
) -> SlurmResult:
    """Simulate like `generate_trace` (same arguments, same jobs) and write the Slurm view."""
    emit = log or (lambda _: None)
    check_arguments(jobs, machines, days, seed)
    if isinstance(interval_s, bool) or not isinstance(interval_s, int) or not 1 <= interval_s <= 3600:
        raise InputError(f"--interval must be a whole number of seconds between 1 and 3600, not {interval_s!r}")
    if isinstance(dcgm_interval_s, bool) or not isinstance(dcgm_interval_s, int) or not 1 <= dcgm_interval_s <= 3600:
        raise InputError(
            f"--dcgm-interval must be a whole number of seconds between 1 and 3600, not {dcgm_interval_s!r}"
        )
    out = Path(out)
    prepare_slurm_output(out)
    sim = simulate_window(jobs, machines, days, seed, start, emit)
    zone_name, t0, span, rng, blackout, cluster = sim.zone_name, sim.t0, sim.span, sim.rng, sim.blackout, sim.cluster
    slurm_jobs = assign_identities(
        cluster,
        sim.specs,
        sim.outcomes,
        blackout,
        arrays=np.random.default_rng([seed, _ARRAYS]),
        held=np.random.default_rng([seed, _ELIGIBLE]),
    )

    lines = sacct_lines(slurm_jobs, zone_name)
    (out / "sacct.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_quotas(out / "quotas.toml", cluster)
    write_sacctmgr_assoc(out / "sacctmgr_assoc.txt", cluster)
    n_allocations = sum(len(j.runs) + (j.cancel_at is not None) for j in slurm_jobs)
    slow, speeds = plan_speeds(slurm_jobs, machines, seed)
    n_logs = write_job_logs(out, slurm_jobs, rng(_SLURM_LOGS), zone_name, speeds)
    shown = write_scontrol(out, slurm_jobs, rng(_SCONTROL), zone_name, blackout)
    emit(
        f"wrote sacct.txt ({len(lines) - 1:,} rows), {n_logs:,} job logs, {len(shown):,} scontrol snapshots; writing "
        f"nvidia-smi logs"
    )

    runs = _levels(slurm_jobs, seed)
    telemetry = write_gpu_logs(
        out,
        hosts=[host_name(m) for m in range(machines)],
        t0=t0,
        span=span,
        interval_s=interval_s,
        runs=runs,
        n_jobs=jobs,
        seed=seed,
        stream=_GPU_LOGS,
        blackout=blackout,
        zone_name=zone_name,
        log=emit,
    )
    dcgm = write_dcgm_logs(
        out,
        hosts=[host_name(m) for m in range(machines)],
        t0=t0,
        span=span,
        interval_s=dcgm_interval_s,
        runs=runs,
        n_jobs=jobs,
        seed=seed,
        stream=_DCGM_LOGS,
        jobs_stream=_DCGM_JOBS,
        log=emit,
    )
    job_rows, attempt_rows = slurm_truth(
        slurm_jobs, telemetry.util_sum, telemetry.util_count, shown, sim.states, dcgm, speeds
    )
    generator = {
        "name": GENERATOR_NAME,
        "version": SYNTH_VERSION,
        "format": "slurm",
        "seed": seed,
        "jobs": jobs,
        "machines": machines,
        "days": days,
        "interval_s": interval_s,
        "dcgm_interval_s": dcgm_interval_s,
        "start_local": start.strftime("%Y-%m-%d %H:%M:%S"),
        "vcs": [{"vc": n, "quota_gpus": q} for n, q in zip(cluster.vc_names, cluster.vc_quota, strict=True)],
        "telemetry": {"gpu_rows": telemetry.rows, "dcgm_rows": dcgm.rows},
        "slow_machines": slow_machines_truth(slow, host_name),
        "speed_rule": SPEED_RULE,
        "truth_times": "sacct and nvidia-smi times are never in a repeated hour's second occurrence, so naive text "
        "read as the first occurrence is exact",
    }
    write_truth(out / "truth.json", generator, zone_name, job_rows, attempt_rows)
    return SlurmResult(
        out=out, jobs=jobs, allocation_rows=n_allocations, gpu_rows=telemetry.rows, logs=n_logs, dcgm_rows=dcgm.rows
    )
