"""truth.json's rows for the Slurm view: the jobs.csv every correct reader must produce.

From the generator's own knowledge (never from the files, never from gca), plus why each job
waited (waits.py; its first wait here is [Eligible, first Start)) and how exactly the written
files tell which GPUs each run held.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpucluster_analysis.synth import clock
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE, REASON_CATEGORY
from gpucluster_analysis.synth.slurm_dcgm import DcgmResult
from gpucluster_analysis.synth.slurm_jobs import SlurmJob, host_name
from gpucluster_analysis.synth.training_speed import AttemptSpeed
from gpucluster_analysis.synth.truth import speed_columns
from gpucluster_analysis.synth.waits import StateLog, cause_columns, retry_wait


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
        # every kill is its own user's scancel (`CANCELLED by <its uid>`, and sacct.txt has UID)
        reason = runs[-1].reason if final_failed else ("user_kill" if job.outcome.status == "killed" else None)
        count = int(util_count[spec.index])
        sm_count = int(dcgm.count[spec.index])
        logged = bool(runs) and runs[-1].outcome != "launch_fail" and job.cancel_at is None
        # what the reason rests on: every failed or killed run's sacct row says something (its
        # state, a non-zero exit, who cancelled it), and its log, where it has one, shows it too
        evidence = ("both" if logged else "scheduler") if job.outcome.status in ("failed", "killed") else None
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
                "failure_category": {**REASON_CATEGORY, "user_kill": "user"}[reason] if reason else None,
                "failure_evidence": evidence,
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
