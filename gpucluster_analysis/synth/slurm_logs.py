"""What a Slurm job leaves beside sacct: its slurm-<jobid>.out and scontrol snapshots.

`logs/slurm-<jobid>.out` is the output of each job's last run (Slurm truncates the file when
it requeues a job); `scontrol/<jobid>.txt` is `scontrol show job -d` of some running jobs,
with the GPU indices per node (`GRES=gpu:v100:4(IDX:0-3)`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpucluster_analysis.synth import clock
from gpucluster_analysis.synth.failure_logs import LogContext, render
from gpucluster_analysis.synth.model import RealAttempt
from gpucluster_analysis.synth.slurm_jobs import (
    CPUS_PER_GPU,
    FIRST_JOB_ID,
    GPU_TYPE,
    MEM_GB_PER_GPU,
    PARTITION,
    SlurmJob,
    compress_hostlist,
    has_log,
    host_name,
    local_time,
    slurm_duration,
)
from gpucluster_analysis.synth.training_speed import AttemptSpeed
from gpucluster_analysis.synth.training_speed import render as render_speed

SCONTROL_FRACTION = 0.15  # of single-run jobs that ran


def _visible(run: RealAttempt) -> str:
    return ",".join(str(g) for g in run.alloc[0][1])


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
        if not has_log(job):
            continue  # never ran, or its last placement never started the batch script
        run = job.runs[-1]
        host = host_name(run.alloc[0][0])
        raw_id = FIRST_JOB_ID + job.spec.index  # an array task's own id (JobIDRaw)
        lines = [
            f"SLURM_JOB_ID={raw_id} SLURM_JOB_NODELIST={compress_hostlist([m for m, _ in run.alloc])} on {host}",
            f"CUDA_VISIBLE_DEVICES={_visible(run)}",
        ]
        text = "\n".join(lines) + "\n"
        stamp = local_time(run.end, zone_name)
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
        f"   SubmitTime={local_time(spec.submit, zone_name)} EligibleTime={local_time(job.eligible, zone_name)}",
        f"   AccrueTime={local_time(job.eligible, zone_name)}",
        f"   StartTime={local_time(run.start, zone_name)} "
        f"EndTime={local_time(run.start + job.time_limit_s, zone_name)} Deadline=N/A",
        f"   Partition={PARTITION} AllocNode:Sid=login01:{20000 + spec.index % 9000}",
        "   ReqNodeList=(null) ExcNodeList=(null)",
        f"   NodeList={nodes}",
        f"   BatchHost={host_name(hosts[0])}",
        f"   NumNodes={len(hosts)} NumCPUs={cpus} NumTasks={len(hosts)} CPUs/Task={cpus // len(hosts)} "
        f"ReqB:S:C:T=0:0:*:*",
        f"   TRES=cpu={cpus},mem={MEM_GB_PER_GPU * spec.gpus}G,node={len(hosts)},billing={cpus},gres/gpu={spec.gpus}",
        "   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*",
    ]
    for m, gpus in run.alloc:
        lines.append(
            f"     Nodes={host_name(m)} CPU_IDs=0-{CPUS_PER_GPU * len(gpus) - 1} "
            f"Mem={MEM_GB_PER_GPU * 1024 * len(gpus)} "
            f"GRES=gpu:{GPU_TYPE}:{len(gpus)}(IDX:{_index_ranges(gpus)})"
        )
    lines += [
        f"   MinCPUsNode={cpus // len(hosts)} MinMemoryNode={MEM_GB_PER_GPU * spec.gpus // len(hosts)}G "
        f"MinTmpDiskNode=0",
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
