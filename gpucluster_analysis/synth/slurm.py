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
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from gpucluster_analysis.errors import InputError
from gpucluster_analysis.synth import clock
from gpucluster_analysis.synth.failure_logs import LogContext, render
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE, REASON_CATEGORY, Cluster, JobOutcome, JobSpec, RealAttempt
from gpucluster_analysis.synth.slurm_dcgm import DcgmResult, write_dcgm_logs
from gpucluster_analysis.synth.slurm_telemetry import Runs, write_gpu_logs
from gpucluster_analysis.synth.trace import (
    GENERATOR_NAME,
    OUTPUT_DIRS,
    OUTPUT_FILES,
    SLOW_MACHINES_STREAM,
    SPEED_RULE,
    SYNTH_VERSION,
    _check_arguments,
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
from gpucluster_analysis.synth.training_speed import render as render_speed
from gpucluster_analysis.synth.truth import speed_columns, write_truth
from gpucluster_analysis.synth.waits import StateLog, cause_columns, retry_wait

SLURM_FILES = ("sacct.txt", "truth.json", "quotas.toml", "sacctmgr_assoc.txt")
SLURM_DIRS = ("logs", "scontrol", "gpu", "dcgm")
SACCT_COLUMNS = (
    "JobID",
    "JobName",
    "User",
    "Account",
    "Partition",
    "State",
    "ExitCode",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Elapsed",
    "Timelimit",
    "AllocTRES",
    "NodeList",
)
FIRST_JOB_ID = 4_812_000
PARTITION = "gpu"
GPU_TYPE = "v100"
CPUS_PER_GPU = 6
MEM_GB_PER_GPU = 60
FIRST_UID = 20_000

# Streams beyond trace.py's 1..8, so the shared simulation draws stay identical.
_ARRAYS, _ELIGIBLE, _SLURM_LOGS, _SCONTROL, _GPU_LOGS, _LEVELS = range(21, 27)
_DCGM_LOGS, _DCGM_JOBS = 27, 28  # the DCGM scrapes' own, so adding them changed no other draw
_SPEED_FAMILIES, _SPEEDS = 29, 30  # training speed (the slow machines come from trace.py's stream: the same machines)

ARRAY_LEADER_PROB = 0.1  # a job starts an array that later jobs of the same user and size join
ARRAY_WINDOW_S = 4 * 3600
ARRAY_MAX_TASKS = 4
HELD_FRACTION = 0.1  # of jobs that waited: part of the wait was a dependency/hold (Eligible > Submit)
SCONTROL_FRACTION = 0.15  # of single-run jobs that ran
DCGM_INTERVAL_S = 300  # between dcgm-exporter scrapes, by default
_JOB_NAMES = ("train_resnet50", "bert_pretrain", "llama_sft", "eval_ckpt", "seq2seq_mt", "vit_finetune", "ddp_bench")


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


def _local(t: int | None, zone_name: str) -> str:
    return "Unknown" if t is None else clock.naive_local(t, zone_name).replace(" ", "T")


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
            f"{self.out}: {self.jobs:,} Slurm jobs, {self.allocation_rows:,} allocation rows in sacct.txt, {self.logs:,} job logs, "
            f"{self.gpu_rows:,} nvidia-smi rows, {self.dcgm_rows:,} DCGM samples, truth.json"
        )


def prepare_slurm_output(out: Path) -> None:
    """Create `out`, or clear a previous gca synth output (either view) in it; refuse anything else."""
    prepare_output(
        out, frozenset(OUTPUT_FILES) | frozenset(OUTPUT_DIRS) | frozenset(SLURM_FILES) | frozenset(SLURM_DIRS)
    )


# --- identities ------------------------------------------------------------------------


def _slurm_jobs(
    cluster: Cluster, specs: list[JobSpec], outcomes: list[JobOutcome], blackout: clock.Blackout, seed: int
) -> list[SlurmJob]:
    arrays = np.random.default_rng([seed, _ARRAYS])
    held = np.random.default_rng([seed, _ELIGIBLE])
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
            job_id, name = f"{FIRST_JOB_ID + leader}_{task}", _JOB_NAMES[leader % len(_JOB_NAMES)]
        else:
            job_id, name = str(FIRST_JOB_ID + spec.index), _JOB_NAMES[spec.index % len(_JOB_NAMES)]
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


def _sort_key(job: SlurmJob) -> tuple[int, int]:
    base, _, task = job.job_id.partition("_")
    return int(base), int(task or -1)


# --- sacct -----------------------------------------------------------------------------


def _run_state(job: SlurmJob, run: RealAttempt, last: bool) -> tuple[str, str, str, str]:
    """(allocation state, its ExitCode, the state of .batch/.0, their ExitCode)."""
    if run.outcome == "launch_fail":
        return "NODE_FAIL", "0:0", "NODE_FAIL", "0:0"
    if run.outcome == "pass":
        return "COMPLETED", "0:0", "COMPLETED", "0:0"
    if run.outcome == "killed":
        return f"CANCELLED by {job.uid}", "0:0", "CANCELLED", "0:15"
    # A failed run: OOM kills are Slurm's own state; a run that is retried was requeued.
    if run.reason == "host_oom":
        state, code = "OUT_OF_MEMORY", "0:125"
        return (state if last else "REQUEUED"), (code if last else "0:0"), state, code
    return ("FAILED" if last else "REQUEUED"), ("1:0" if last else "0:0"), "FAILED", "1:0"


def _tres(gpus: int, nodes: int, *, billing: bool = True) -> str:
    cpus = CPUS_PER_GPU * gpus
    parts = ([f"billing={cpus}"] if billing else []) + [
        f"cpu={cpus}",
        f"gres/gpu:{GPU_TYPE}={gpus}",
        f"gres/gpu={gpus}",
        f"mem={MEM_GB_PER_GPU * gpus}G",
        f"node={nodes}",
    ]
    return ",".join(parts)


def _sacct_row(
    job: SlurmJob,
    job_id: str,
    name: str,
    state: str,
    code: str,
    eligible: int | None,
    start: int | None,
    end: int | None,
    tres: str,
    nodes: str,
    zone_name: str,
    *,
    step: bool,
) -> str:
    """One sacct -P line; steps leave User, Partition and Timelimit empty, as sacct prints them."""
    elapsed = slurm_duration((end or 0) - start) if start is not None else "00:00:00"
    return "|".join(
        (
            job_id,
            name,
            "" if step else job.user,
            job.account,
            "" if step else PARTITION,
            state,
            code,
            _local(job.spec.submit, zone_name),
            _local(eligible, zone_name),
            _local(start, zone_name),
            _local(end, zone_name),
            elapsed,
            "" if step else slurm_duration(job.time_limit_s),
            tres,
            nodes,
        )
    )


def sacct_lines(jobs: list[SlurmJob], zone_name: str) -> list[str]:
    lines = ["|".join(SACCT_COLUMNS)]
    for job in sorted(jobs, key=_sort_key):
        spec = job.spec

        def row(
            job_id: str,
            name: str,
            state: str,
            code: str,
            eligible: int | None,
            start: int | None,
            end: int | None,
            tres: str,
            nodes: str,
            *,
            step: bool,
            job: SlurmJob = job,
        ) -> str:
            return _sacct_row(job, job_id, name, state, code, eligible, start, end, tres, nodes, zone_name, step=step)

        for k, run in enumerate(job.runs):
            last = k == len(job.runs) - 1 and job.cancel_at is None
            state, code, step_state, step_code = _run_state(job, run, last)
            hosts = [m for m, _ in run.alloc]
            nodes = compress_hostlist(hosts)
            eligible = job.eligible if k == 0 else job.runs[k - 1].end
            n = len(hosts)
            lines.append(
                row(
                    job.job_id,
                    job.name,
                    state,
                    code,
                    eligible,
                    run.start,
                    run.end,
                    _tres(spec.gpus, n),
                    nodes,
                    step=False,
                )
            )
            first_host = host_name(hosts[0])
            extern_state = "NODE_FAIL" if run.outcome == "launch_fail" else "COMPLETED"
            if run.outcome != "launch_fail":
                lines.append(
                    row(
                        f"{job.job_id}.batch",
                        "batch",
                        step_state,
                        step_code,
                        eligible,
                        run.start,
                        run.end,
                        _tres(len(run.alloc[0][1]), 1, billing=False),
                        first_host,
                        step=True,
                    )
                )
            lines.append(
                row(
                    f"{job.job_id}.extern",
                    "extern",
                    extern_state,
                    "0:0",
                    eligible,
                    run.start,
                    run.end,
                    _tres(spec.gpus, n),
                    nodes,
                    step=True,
                )
            )
            if run.outcome != "launch_fail":
                step_start = min(run.start + 2, run.end)
                lines.append(
                    row(
                        f"{job.job_id}.0",
                        "python",
                        step_state,
                        step_code,
                        eligible,
                        step_start,
                        run.end,
                        _tres(spec.gpus, n, billing=False),
                        nodes,
                        step=True,
                    )
                )
        if job.cancel_at is not None:
            # Cancelled while pending: Slurm stamps Start = End and assigns no node.
            eligible = job.runs[-1].end if job.runs else job.eligible
            lines.append(
                row(
                    job.job_id,
                    job.name,
                    f"CANCELLED by {job.uid}",
                    "0:0",
                    eligible,
                    job.cancel_at,
                    job.cancel_at,
                    "",
                    "None assigned",
                    step=False,
                )
            )
    return lines


# --- job logs and scontrol -------------------------------------------------------------


def _visible(run: RealAttempt) -> str:
    return ",".join(str(g) for g in run.alloc[0][1])


def _has_log(job: SlurmJob) -> bool:
    """Whether slurm-<jobid>.out is written: the job ran, and its last placement started the batch script."""
    return bool(job.runs) and job.runs[-1].outcome != "launch_fail"


def plan_speeds(jobs: list[SlurmJob], machines: int, seed: int) -> tuple[dict[int, float], dict[int, AttemptSpeed]]:
    """The slow machines (trace.py's draw: the same as the Philly view's), and the training speed
    each job's log prints, by job index: the last run's, when it completed, was cancelled, or
    failed once training ran. A family is a user's jobs of one name and size."""
    slow = draw_slow_machines(machines, np.random.default_rng([seed, SLOW_MACHINES_STREAM]))
    families = draw_families(
        {(j.spec.user, _JOB_NAMES.index(j.name), j.spec.gpus) for j in jobs},
        np.random.default_rng([seed, _SPEED_FAMILIES]),
    )
    rng = np.random.default_rng([seed, _SPEEDS])
    speeds = {}
    for job in jobs:
        if not _has_log(job):
            continue
        run = job.runs[-1]
        if run.outcome in ("pass", "killed") or run.reason in TRAINED_REASONS:
            family = families[(job.spec.user, _JOB_NAMES.index(job.name), job.spec.gpus)]
            factor = slowest_factor([m for m, _ in run.alloc], slow)
            speeds[job.spec.index] = plan_attempt(family, factor, run.end - run.start, run.outcome == "pass", rng)
    return slow, speeds


def write_sacctmgr_assoc(path: Path, cluster: Cluster) -> None:
    """The VCs' quotas as Slurm's accounting database prints them: one account row each, no user rows."""
    lines = ["Account|User|GrpTRES"]
    lines += [f"{name}||gres/gpu={quota}" for name, quota in zip(cluster.vc_names, cluster.vc_quota, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_job_logs(
    out: Path,
    jobs: list[SlurmJob],
    rng: np.random.Generator,
    zone_name: str,
    speeds: dict[int, AttemptSpeed] | None = None,
) -> int:
    """slurm-<jobid>.out for the last run of every job that ran; returns how many. `speeds`: the
    training speed the run prints, by job index (none where missing)."""
    speeds = speeds or {}
    folder = out / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for job in jobs:
        if not _has_log(job):
            continue  # never ran, or its last placement never started the batch script
        run = job.runs[-1]
        host = host_name(run.alloc[0][0])
        raw_id = FIRST_JOB_ID + job.spec.index  # an array task's own id (JobIDRaw)
        lines = [
            f"SLURM_JOB_ID={raw_id} SLURM_JOB_NODELIST={compress_hostlist([m for m, _ in run.alloc])} on {host}",
            f"CUDA_VISIBLE_DEVICES={_visible(run)}",
        ]
        text = "\n".join(lines) + "\n"
        stamp = _local(run.end, zone_name)
        speed = speeds.get(job.spec.index)
        if speed is not None and run.outcome != "fail":
            text += render_speed(speed, rng)
        if run.outcome == "fail" and run.reason is not None:
            ctx = LogContext(
                job_id=job.job_id,
                attempt=len(job.runs) - 1,
                gpus=job.spec.gpus,
                hosts=tuple(host_name(m) for m, _ in run.alloc),
                user=job.user,
                elapsed_s=run.end - run.start,
                speed=speed,
            )
            stdout, stderr = render(run.reason, ctx, rng)
            text += stdout + stderr
            if run.reason == "host_oom":
                text += (
                    f"slurmstepd: error: Detected 1 oom-kill event(s) in StepId={job.job_id}.batch. "
                    "Some of your processes may have been killed by the cgroup out-of-memory handler.\n"
                )
        elif run.outcome == "killed":
            text += (
                f"epoch {int(rng.integers(1, 40))} step {int(rng.integers(100, 9000))} loss {rng.uniform(0.2, 3):.4f}\n"
            )
            text += f"slurmstepd: error: *** JOB {raw_id} ON {host} CANCELLED AT {stamp} ***\n"
        else:
            text += f"epoch {int(rng.integers(1, 90))} done, val_acc {rng.uniform(0.5, 0.95):.4f}\nTraining finished.\n"
        (folder / f"slurm-{job.job_id}.out").write_text(text, encoding="utf-8")
        written += 1
    return written


def _index_ranges(gpus: tuple[int, ...]) -> str:
    ranges: list[tuple[int, int]] = []
    for g in sorted(gpus):
        if ranges and ranges[-1][1] == g - 1:
            ranges[-1] = (ranges[-1][0], g)
        else:
            ranges.append((g, g))
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def scontrol_text(job: SlurmJob, run: RealAttempt, at: int, zone_name: str) -> str:
    """`scontrol show job -d` of a running job at instant `at` (start < at < end)."""
    spec = job.spec
    hosts = [m for m, _ in run.alloc]
    nodes = compress_hostlist(hosts)
    cpus = CPUS_PER_GPU * spec.gpus
    user = job.user
    lines = [
        f"JobId={job.job_id} JobName={job.name}",
        f"   UserId={user}({job.uid}) GroupId={user}({job.uid}) MCS_label=N/A",
        f"   Priority=4294901{spec.index % 1000:03d} Nice=0 Account={job.account} QOS=normal",
        "   JobState=RUNNING Reason=None Dependency=(null)",
        "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0",
        "   DerivedExitCode=0:0",
        f"   RunTime={slurm_duration(at - run.start)} TimeLimit={slurm_duration(job.time_limit_s)} TimeMin=N/A",
        f"   SubmitTime={_local(spec.submit, zone_name)} EligibleTime={_local(job.eligible, zone_name)}",
        f"   AccrueTime={_local(job.eligible, zone_name)}",
        f"   StartTime={_local(run.start, zone_name)} EndTime={_local(run.start + job.time_limit_s, zone_name)} Deadline=N/A",
        f"   Partition={PARTITION} AllocNode:Sid=login01:{20000 + spec.index % 9000}",
        "   ReqNodeList=(null) ExcNodeList=(null)",
        f"   NodeList={nodes}",
        f"   BatchHost={host_name(hosts[0])}",
        f"   NumNodes={len(hosts)} NumCPUs={cpus} NumTasks={len(hosts)} CPUs/Task={cpus // len(hosts)} ReqB:S:C:T=0:0:*:*",
        f"   TRES=cpu={cpus},mem={MEM_GB_PER_GPU * spec.gpus}G,node={len(hosts)},billing={cpus},gres/gpu={spec.gpus}",
        "   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*",
    ]
    for m, gpus in run.alloc:
        lines.append(
            f"     Nodes={host_name(m)} CPU_IDs=0-{CPUS_PER_GPU * len(gpus) - 1} Mem={MEM_GB_PER_GPU * 1024 * len(gpus)} "
            f"GRES=gpu:{GPU_TYPE}:{len(gpus)}(IDX:{_index_ranges(gpus)})"
        )
    lines += [
        f"   MinCPUsNode={cpus // len(hosts)} MinMemoryNode={MEM_GB_PER_GPU * spec.gpus // len(hosts)}G MinTmpDiskNode=0",
        "   Features=(null) DelayBoot=00:00:00",
        "   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)",
        f"   Command=/home/{user}/{job.name}.sh",
        f"   WorkDir=/home/{user}",
        f"   StdErr=/home/{user}/slurm-{job.job_id}.out",
        "   StdIn=/dev/null",
        f"   StdOut=/home/{user}/slurm-{job.job_id}.out",
        f"   TresPerNode=gres:gpu:{spec.gpus // len(hosts)}"
        if spec.gpus % len(hosts) == 0
        else f"   TresPerJob=gres:gpu:{spec.gpus}",
        "",
    ]
    return "\n".join(lines) + "\n"


def write_scontrol(
    out: Path, jobs: list[SlurmJob], rng: np.random.Generator, zone_name: str, blackout: clock.Blackout
) -> set[str]:
    """Snapshots of some single-run jobs (a snapshot shows only the run going on); their ids."""
    folder = out / "scontrol"
    folder.mkdir(parents=True, exist_ok=True)
    shown = set()
    for job in jobs:
        if len(job.runs) != 1 or job.cancel_at is not None or "_" in job.job_id or rng.random() >= SCONTROL_FRACTION:
            continue
        run = job.runs[0]
        if run.outcome == "launch_fail" or run.end - run.start < 2:
            continue
        at = blackout.defer(run.start + int(rng.integers(1, run.end - run.start)))
        if at >= run.end:
            continue
        (folder / f"{job.job_id}.txt").write_text(scontrol_text(job, run, at, zone_name), encoding="utf-8")
        shown.add(job.job_id)
    return shown


# --- truth ------------------------------------------------------------------------------


def _evidence(job: SlurmJob, k: int, scontrol: set[str], logged: bool) -> str:
    """How exactly the written files tell which GPUs run k held (the most precise source)."""
    run = job.runs[k]
    last = k == len(job.runs) - 1 and job.cancel_at is None
    if last and job.job_id in scontrol:
        return "scontrol"
    if last and logged and len(run.alloc) == 1:
        return "cuda_visible_devices"  # the batch script prints its own host's indices: exact on one host only
    if all(len(g) == GPUS_PER_MACHINE for _, g in run.alloc):
        return "whole_node"
    return "node_level"


def slurm_truth(
    jobs: list[SlurmJob],
    util_sum: np.ndarray,
    util_count: np.ndarray,
    scontrol: set[str],
    states: StateLog,
    dcgm: DcgmResult,
    speeds: dict[int, AttemptSpeed] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    speeds = speeds or {}
    iso = clock.iso_utc
    job_rows: list[dict[str, Any]] = []
    attempt_rows: list[dict[str, Any]] = []
    # The first wait as sacct records it: [Eligible, first Start), or [Eligible, the cancel) for a job
    # cancelled before any run. Every run (a launch failure too) has its Start, so none falls inside.
    spans = [
        (job.eligible, job.runs[0].start)
        if job.runs
        else (job.eligible, job.cancel_at)
        if job.cancel_at is not None
        else None
        for job in jobs
    ]
    causes = cause_columns(states, [job.spec for job in jobs], spans, [job.runs for job in jobs])
    for job, waited in zip(jobs, causes, strict=True):
        spec, runs = job.spec, job.runs
        first_start = runs[0].start if runs else None
        # The row of a cancellation while pending (Start = End, no node) is no placement, so
        # no attempt: end_time and attempts are the runs' (domain.md); the cancel ends the wait.
        end = max(r.end for r in runs) if runs else None
        final_failed = job.outcome.status == "failed"
        reason = runs[-1].reason if final_failed else None
        count = int(util_count[spec.index])
        sm_count = int(dcgm.count[spec.index])
        logged = bool(runs) and runs[-1].outcome != "launch_fail" and job.cancel_at is None
        job_rows.append(
            {
                "job_id": job.job_id,
                "source": "slurm",
                "user": job.user,
                "vc": job.account,
                "status": job.outcome.status,
                "submit_time": iso(spec.submit),
                "first_start_time": iso(first_start),
                "end_time": iso(end),
                # each run; the row of a cancellation while pending was never placed
                "attempts": len(runs),
                "num_gpus": spec.gpus if runs else None,
                "num_servers": len(runs[0].alloc) if runs else None,
                "queue_delay_s": first_start - job.eligible if first_start is not None else None,
                "run_time_s": end - first_start if first_start is not None and end is not None else None,
                "gpu_time_s": sum((r.end - r.start) * spec.gpus for r in runs) if runs else None,
                "mean_gpu_util_pct": float(util_sum[spec.index]) / count if count else None,
                "util_samples": count,
                "failure_reason": reason,
                "failure_category": REASON_CATEGORY[reason] if reason else None,
                "eligible_time": iso(job.eligible),
                "queue_basis": "eligible",
                **waited,
                "wait_retry_s": retry_wait([(r.start, r.end) for r in runs]) if runs else None,
                # DCGM profiling, by mean_gpu_util_pct's rule: x 100 the mean of the SM_ACTIVE
                # (PIPE_TENSOR_ACTIVE) values written; sums are exact thousandths
                "mean_sm_active_pct": int(dcgm.sm_sum[spec.index]) / (10 * sm_count) if sm_count else None,
                "mean_tensor_active_pct": int(dcgm.tensor_sum[spec.index]) / (10 * sm_count) if sm_count else None,
                "sm_samples": sm_count,
                # the training speed slurm-<jobid>.out prints (its last run's), as gca must read it
                **speed_columns(speeds.get(spec.index)),
            }
        )
        for k, run in enumerate(runs):
            attempt_rows.append(
                {
                    "job_id": job.job_id,
                    "source_index": k,
                    "start_time": iso(run.start),
                    "end_time": iso(run.end),
                    "allocation": [{"machine": host_name(m), "gpus": list(g)} for m, g in run.alloc],
                    "outcome": run.outcome,
                    "failure_reason": run.reason if run.outcome in ("fail", "launch_fail") else None,
                    "gpu_evidence": _evidence(job, k, scontrol, logged and k == len(runs) - 1),
                    "log": f"logs/slurm-{job.job_id}.out" if logged and k == len(runs) - 1 else None,
                    "speed": speed.truth() if k == len(runs) - 1 and (speed := speeds.get(spec.index)) else None,
                }
            )
        if job.cancel_at is not None:
            attempt_rows.append(
                {
                    "job_id": job.job_id,
                    "source_index": len(runs),
                    "start_time": None,
                    "end_time": None,
                    "allocation": [],
                    "outcome": "cancelled_pending",
                    "failure_reason": None,
                    "gpu_evidence": None,
                    "log": None,
                    "speed": None,
                    "cancelled_at": iso(job.cancel_at),
                }
            )
    return job_rows, attempt_rows


# --- the whole trace --------------------------------------------------------------------


def _levels(jobs: list[SlurmJob], seed: int) -> Runs:
    """Every run's GPUs with the utilization level its job keeps on them (as in trace.py:
    efficiency x sync(GPUs) x locality(servers)); one idle sentinel so lookups never fail."""
    rng = np.random.default_rng([seed, _LEVELS])
    start, end, owner_job, level, noise, memory, gpu_owner, gpu_global = [], [], [], [], [], [], [], []
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
    start.append(0), end.append(0), owner_job.append(0), level.append(0.0), noise.append(0.0), memory.append(0.0)
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
    _check_arguments(jobs, machines, days, seed)
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
    slurm_jobs = _slurm_jobs(cluster, sim.specs, sim.outcomes, blackout, seed)

    lines = sacct_lines(slurm_jobs, zone_name)
    (out / "sacct.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_quotas(out / "quotas.toml", cluster)
    write_sacctmgr_assoc(out / "sacctmgr_assoc.txt", cluster)
    n_allocations = sum(len(j.runs) + (j.cancel_at is not None) for j in slurm_jobs)
    slow, speeds = plan_speeds(slurm_jobs, machines, seed)
    n_logs = write_job_logs(out, slurm_jobs, rng(_SLURM_LOGS), zone_name, speeds)
    shown = write_scontrol(out, slurm_jobs, rng(_SCONTROL), zone_name, blackout)
    emit(
        f"wrote sacct.txt ({len(lines) - 1:,} rows), {n_logs:,} job logs, {len(shown):,} scontrol snapshots; writing nvidia-smi logs"
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
        "truth_times": "sacct and nvidia-smi times are never in a repeated hour's second occurrence, so naive text read as the first occurrence is exact",
    }
    write_truth(out / "truth.json", generator, zone_name, job_rows, attempt_rows)
    return SlurmResult(
        out=out, jobs=jobs, allocation_rows=n_allocations, gpu_rows=telemetry.rows, logs=n_logs, dcgm_rows=dcgm.rows
    )
