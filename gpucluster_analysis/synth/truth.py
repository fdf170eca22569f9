"""truth.json: the jobs.csv every correct reader of the trace must produce.

Contract: `job_truth` computes one row per job with exactly the jobs.csv
columns of domain.md, from the generator's own knowledge: the attempts as the
job log records them (`RecordedAttempt`, int UTC seconds) and the utilization
values as the GPU file writes them (sums and counts from `telemetry`). It
never reads the files back and never runs gca. Rules, as domain.md states them:

* attempts are ordered chronologically by start, those without a start last
  (ties by position in the source list); num_gpus/num_servers come from the
  first one in that order that has an allocation;
* first_start_time / end_time: earliest start / latest end among the attempts
  that have one; delays are their differences in seconds;
* gpu_time_s: sum over attempts with both times of (end - start) x GPUs
  (an attempt with an empty allocation adds 0); null when no attempt has both;
* mean_gpu_util_pct / util_samples: over the written, non-null samples of
  attempts with a start, an end and GPUs (start <= t < end); null / 0 if none;
* failure_reason / failure_category: the last failed attempt's, for jobs whose
  final status is failed, and the final attempt's for a killed job whose final attempt
  failed (it was killed before its retry started); null otherwise.

After those columns come the wait columns (`WAIT_COLUMNS`, docs/synth.md), which
no reader of the log alone can reproduce everywhere: the job's first wait as
the log records it ([submit, first start), or [submit, the kill) for a job
killed before any recorded start) split into seconds per cause
(`waits.cause_columns`, from the simulator's state), and `wait_retry_s`, the
gaps between consecutive attempts that have a start. Last come jobs.csv's speed
columns (`SPEED_COLUMNS`): the speed the log of the job's last attempt that printed
one says, as gca's extractor must read it (training_speed.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from gpucluster_analysis.synth.clock import iso_utc
from gpucluster_analysis.synth.model import REASON_CATEGORY, Cluster, JobOutcome, JobSpec, RecordedAttempt
from gpucluster_analysis.synth.training_speed import AttemptSpeed
from gpucluster_analysis.synth.waits import CAUSE_COLUMNS, StateLog, cause_columns, retry_wait

JOBS_COLUMNS = (
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
    "mean_gpu_util_pct",
    "util_samples",
    "failure_reason",
    "failure_category",
)
# After the jobs.csv columns: why the job waited (seconds per cause of its first wait) and its retry waits.
WAIT_COLUMNS = (*CAUSE_COLUMNS, "wait_retry_s")
# Then the training speed its logs print (jobs.csv's last three columns).
SPEED_COLUMNS = ("speed_metric", "speed_median", "speed_unit")


def chronological(records: list[RecordedAttempt]) -> list[RecordedAttempt]:
    """Attempts by start, those without a start last, ties by source position."""
    return sorted(records, key=lambda r: (r.start is None, r.start or 0, r.source_index))


def _alloc_json(alloc: tuple[tuple[int, tuple[int, ...]], ...]) -> list[dict[str, Any]]:
    return [{"machine": f"m{m}", "gpus": list(g)} for m, g in alloc]


def job_truth(
    cluster: Cluster,
    specs: list[JobSpec],
    outcomes: list[JobOutcome],
    records: list[list[RecordedAttempt]],
    util_sum: np.ndarray,
    util_count: np.ndarray,
    states: StateLog,
    speeds: dict[tuple[int, int], AttemptSpeed] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(job rows, attempt rows) for truth.json; `speeds`: what each attempt's log prints about its
    training speed, by (job index, source_index)."""
    speeds = speeds or {}
    jobs: list[dict[str, Any]] = []
    attempts: list[dict[str, Any]] = []
    causes = cause_columns(
        states,
        specs,
        [_first_wait(s, o, r) for s, o, r in zip(specs, outcomes, records, strict=True)],
        [o.attempts for o in outcomes],
    )
    for spec, outcome, recs, waited in zip(specs, outcomes, records, causes, strict=True):
        ordered = chronological(recs)
        starts = [r.start for r in recs if r.start is not None]
        ends = [r.end for r in recs if r.end is not None]
        first_start = min(starts) if starts else None
        end = max(ends) if ends else None
        sized = next((r for r in ordered if r.alloc), None)
        timed = [r for r in recs if r.start is not None and r.end is not None]
        failed = [r for r in ordered if r.real.outcome in ("fail", "launch_fail")]
        # a killed job's: its final attempt's when that failed (killed before its retry started)
        last_failure = (
            failed[-1].real.reason
            if failed and (outcome.status == "failed" or (outcome.status == "killed" and failed[-1] is ordered[-1]))
            else None
        )
        count = int(util_count[spec.index])
        printed = [speeds[(spec.index, r.source_index)] for r in ordered if (spec.index, r.source_index) in speeds]
        jobs.append(
            {
                "job_id": spec.job_id,
                "source": "philly",
                "user": cluster.user_names[spec.user],
                "vc": cluster.vc_names[spec.vc],
                "status": outcome.status,
                "submit_time": iso_utc(spec.submit),
                "first_start_time": iso_utc(first_start),
                "end_time": iso_utc(end),
                "attempts": len(recs),
                "num_gpus": sized.gpus if sized else None,
                "num_servers": len(sized.alloc) if sized else None,
                "queue_delay_s": first_start - spec.submit if first_start is not None else None,
                "run_time_s": end - first_start if end is not None and first_start is not None else None,
                "gpu_time_s": sum((r.end - r.start) * r.gpus for r in timed) if timed else None,  # type: ignore[operator, misc]  # timed: start and end known
                "mean_gpu_util_pct": float(util_sum[spec.index]) / count if count else None,
                "util_samples": count,
                "failure_reason": last_failure,
                "failure_category": REASON_CATEGORY[last_failure] if last_failure else None,
                **waited,
                "wait_retry_s": retry_wait([(r.start, r.end) for r in ordered if r.start is not None])
                if starts
                else None,
                **speed_columns(printed[-1] if printed else None),
            }
        )
        position = {id(r): i for i, r in enumerate(ordered)}
        for r in recs:
            failed_here = r.real.outcome in ("fail", "launch_fail")
            attempts.append(
                {
                    "job_id": spec.job_id,
                    "source_index": r.source_index,
                    "attempt_no": position[id(r)],
                    "start_time": iso_utc(r.start),
                    "end_time": iso_utc(r.end),
                    "allocation": _alloc_json(r.alloc),
                    "outcome": r.real.outcome,
                    "failure_reason": r.real.reason if failed_here else None,
                    "failure_category": REASON_CATEGORY[r.real.reason] if failed_here and r.real.reason else None,
                    "log_dir": f"logs/{spec.job_id}/attempt_{r.source_index}" if failed_here else None,
                    # What really happened, where the log hides it (a missing end, an unrecorded placement).
                    "real_start_time": iso_utc(r.real.start),
                    "real_end_time": iso_utc(r.real.end),
                    # A launch failure's: the GPUs it was placed on and held, idle, until it failed.
                    "real_allocation": _alloc_json(r.real.alloc),
                    # What its log prints about its training speed (training_speed.py), null if nothing.
                    "speed": speed.truth() if (speed := speeds.get((spec.index, r.source_index))) else None,
                }
            )
    return jobs, attempts


def speed_columns(speed: AttemptSpeed | None) -> dict[str, Any]:
    """jobs.csv's speed_metric, speed_median, speed_unit: those of the job's last attempt (by start)
    whose log prints a speed; null without one."""
    if speed is None:
        return dict.fromkeys(SPEED_COLUMNS)
    return {"speed_metric": speed.metric, "speed_median": speed.median, "speed_unit": speed.unit}


def _first_wait(spec: JobSpec, outcome: JobOutcome, recs: list[RecordedAttempt]) -> tuple[int, int] | None:
    """[submit, first recorded start), or [submit, kill) for a job killed before any recorded start."""
    starts = [r.start for r in recs if r.start is not None]
    if starts:
        return spec.submit, min(starts)
    if outcome.killed_at is not None:
        return spec.submit, outcome.killed_at
    return None


def write_truth(
    path: Path, generator: dict[str, Any], zone_name: str, jobs: list[dict[str, Any]], attempts: list[dict[str, Any]]
) -> None:
    """One JSON object; the generator block sits on the first line (how reruns recognize the directory)."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write('{"generator": ' + json.dumps(generator) + ', "zone": ' + json.dumps(zone_name) + ",\n")
        f.write('"jobs": [\n')
        f.write(",\n".join(json.dumps(row) for row in jobs))
        f.write('\n],\n"attempts": [\n')
        f.write(",\n".join(json.dumps(row) for row in attempts))
        f.write("\n]}\n")
