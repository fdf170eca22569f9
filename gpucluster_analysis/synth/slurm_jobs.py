"""A simulated job under its Slurm identity, and the way Slurm's tools print it.

`assign_identities` gives each simulated job its JobID (array tasks `4812340_2` among them),
name, user, account, Eligible time and runs; `host_name`, `compress_hostlist`,
`slurm_duration` and `local_time` are the spellings sacct, scontrol and the job logs share
(slurm.py writes the files).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpucluster_analysis.synth import clock
from gpucluster_analysis.synth.model import Cluster, JobOutcome, JobSpec, RealAttempt

FIRST_JOB_ID = 4_812_000
PARTITION = "gpu"
GPU_TYPE = "v100"
CPUS_PER_GPU = 6
MEM_GB_PER_GPU = 60
FIRST_UID = 20_000

ARRAY_LEADER_PROB = 0.1  # a job starts an array that later jobs of the same user and size join
ARRAY_WINDOW_S = 4 * 3600
ARRAY_MAX_TASKS = 4
HELD_FRACTION = 0.1  # of jobs that waited: part of the wait was a dependency/hold (Eligible > Submit)
JOB_NAMES = ("train_resnet50", "bert_pretrain", "llama_sft", "eval_ckpt", "seq2seq_mt", "vit_finetune", "ddp_bench")


@dataclass
class SlurmJob:
    """A simulated job under its Slurm identity."""

    spec: JobSpec
    outcome: JobOutcome
    job_id: str  # as sacct prints it: 4812345 or 4812340_2 for an array task
    name: str
    eligible: int
    user: str
    account: str  # the VC
    uid: int
    time_limit_s: int
    runs: list[RealAttempt] = field(default_factory=list)  # chronological
    cancel_at: int | None = None  # killed while pending (after its last run, or without any)


def host_name(machine: int) -> str:
    return f"gpu{machine + 1:03d}"


def compress_hostlist(machines: list[int]) -> str:
    """`gpu[003-004,007]` for machines 2, 3, 6; a single host stays bare."""
    numbers = sorted(m + 1 for m in set(machines))
    if len(numbers) == 1:
        return f"gpu{numbers[0]:03d}"
    ranges: list[tuple[int, int]] = []
    for n in numbers:
        if ranges and ranges[-1][1] == n - 1:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    parts = [f"{a:03d}" if a == b else f"{a:03d}-{b:03d}" for a, b in ranges]
    return "gpu[" + ",".join(parts) + "]"


def slurm_duration(seconds: int) -> str:
    days, rest = divmod(int(seconds), 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock_text = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock_text}" if days else clock_text


def local_time(t: int | None, zone_name: str) -> str:
    return "Unknown" if t is None else clock.naive_local(t, zone_name).replace(" ", "T")


def assign_identities(
    cluster: Cluster,
    specs: list[JobSpec],
    outcomes: list[JobOutcome],
    blackout: clock.Blackout,
    arrays: np.random.Generator,
    held: np.random.Generator,
) -> list[SlurmJob]:
    """The jobs under their Slurm identities; `arrays` draws which jobs start an array, `held`
    which waits were partly a dependency or hold (Eligible after Submit)."""
    array_of: dict[int, tuple[int, int]] = {}  # job index -> (leader index, task)
    for spec in specs:
        if spec.index in array_of or arrays.random() >= ARRAY_LEADER_PROB:
            continue
        members = [spec.index]
        for other in specs[spec.index + 1 :]:
            if other.submit - spec.submit > ARRAY_WINDOW_S or len(members) == ARRAY_MAX_TASKS:
                break
            if other.user == spec.user and other.gpus == spec.gpus and other.index not in array_of:
                members.append(other.index)
        if len(members) > 1:
            for task, j in enumerate(members):
                array_of[j] = (spec.index, task)

    jobs = []
    for spec, outcome in zip(specs, outcomes, strict=True):
        if spec.index in array_of:
            leader, task = array_of[spec.index]
            job_id, name = f"{FIRST_JOB_ID + leader}_{task}", JOB_NAMES[leader % len(JOB_NAMES)]
        else:
            job_id, name = str(FIRST_JOB_ID + spec.index), JOB_NAMES[spec.index % len(JOB_NAMES)]
        runs = sorted(outcome.attempts, key=lambda a: a.start)
        eligible = spec.submit
        if runs and runs[0].start - spec.submit >= 120 and held.random() < HELD_FRACTION:
            candidate = spec.submit + int(held.uniform(0.3, 0.8) * (runs[0].start - spec.submit))
            if blackout.defer(candidate) == candidate:  # a naive time must read back exactly
                eligible = candidate
        cancel_at = None
        if outcome.status == "killed" and (not runs or runs[-1].outcome != "killed"):
            # Killed while pending (the scheduler's kill event, as it was pushed): "cancel" and
            # "patience" count from submission, "running" from the first run that started.
            started = [a.start for a in runs if a.outcome != "launch_fail"]
            base = started[0] if spec.kill_kind == "running" and started else spec.submit
            cancel_at = blackout.defer(base + spec.kill_delay)
            assert cancel_at == outcome.killed_at, (spec.job_id, cancel_at, outcome.killed_at)
        longest = max((a.end - a.start for a in runs), default=0)
        jobs.append(
            SlurmJob(
                spec=spec,
                outcome=outcome,
                job_id=job_id,
                name=name,
                eligible=eligible,
                user=cluster.user_names[spec.user],
                account=cluster.vc_names[spec.vc],
                uid=FIRST_UID + spec.user,
                time_limit_s=2 * 86_400 if longest < 86_400 else 7 * 86_400,
                runs=runs,
                cancel_at=cancel_at,
            )
        )
    return jobs


def job_sort_key(job: SlurmJob) -> tuple[int, int]:
    base, _, task = job.job_id.partition("_")
    return int(base), int(task or -1)


def has_log(job: SlurmJob) -> bool:
    """Whether slurm-<jobid>.out is written: the job ran, and its last placement started the batch script."""
    return bool(job.runs) and job.runs[-1].outcome != "launch_fail"
