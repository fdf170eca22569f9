"""sacct.txt: `sacct -P --duplicates` output of the simulated jobs.

One allocation row per run plus its `.batch`, `.extern` and `.0` steps; a job retried after
a failure is requeued and repeats its JobID; jobs cancelled while pending have `None
assigned`; times are naive local time in the trace's zone.
"""

from __future__ import annotations

from gpucluster_analysis.synth.model import RealAttempt
from gpucluster_analysis.synth.slurm_jobs import (
    CPUS_PER_GPU,
    GPU_TYPE,
    MEM_GB_PER_GPU,
    PARTITION,
    SlurmJob,
    compress_hostlist,
    host_name,
    job_sort_key,
    local_time,
    slurm_duration,
)

SACCT_COLUMNS = (
    "JobID",
    "JobName",
    "User",
    "UID",
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
    """One sacct -P line; steps leave User, UID, Partition and Timelimit empty, as sacct prints them."""
    elapsed = slurm_duration((end or 0) - start) if start is not None else "00:00:00"
    return "|".join(
        (
            job_id,
            name,
            "" if step else job.user,
            "" if step else str(job.uid),
            job.account,
            "" if step else PARTITION,
            state,
            code,
            local_time(job.spec.submit, zone_name),
            local_time(eligible, zone_name),
            local_time(start, zone_name),
            local_time(end, zone_name),
            elapsed,
            "" if step else slurm_duration(job.time_limit_s),
            tres,
            nodes,
        )
    )


def sacct_lines(jobs: list[SlurmJob], zone_name: str) -> list[str]:
    lines = ["|".join(SACCT_COLUMNS)]
    for job in sorted(jobs, key=job_sort_key):
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
