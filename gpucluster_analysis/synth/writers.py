"""Write the Philly job log, machine list and failed-attempt logs.

Contract (formats as in data/philly-sample/README.md):

* `cluster_machine_list`: header `machineId, number of GPUs, single GPU mem`,
  rows `m31,8, 24GB` sorted by name as text, like upstream; a few machines
  are listed with 2 GPUs although they have 8 (philly-traces issue #8);
* `cluster_job_log`: one JSON array, indent 4, keys in upstream order; times
  are naive America/Los_Angeles text, a missing one is the string "None";
* `logs/<jobid>/attempt_<k>/{stdout,stderr}.log` for every failed attempt,
  `k` being its 0-based position in that job's `attempts` list; an attempt that
  failed once training ran prints its training speed first (training_speed.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from gpucluster_analysis.synth.clock import ZONE_NAME, naive_local
from gpucluster_analysis.synth.failure_logs import LogContext, render
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE, Cluster, JobOutcome, JobSpec, RecordedAttempt
from gpucluster_analysis.synth.training_speed import AttemptSpeed

WRONG_COUNT_FRACTION = 0.05
_STATUS_TEXT = {"passed": "Pass", "failed": "Failed", "killed": "Killed"}


def write_machine_list(path: Path, machines: int, rng: np.random.Generator) -> list[int]:
    """Write the list; return the machines listed with a wrong GPU count."""
    n_wrong = max(1, round(WRONG_COUNT_FRACTION * machines)) if machines >= 4 else 0
    wrong = sorted(int(m) for m in rng.choice(machines, size=n_wrong, replace=False)) if n_wrong else []
    lines = ["machineId, number of GPUs, single GPU mem"]
    for name in sorted(f"m{i}" for i in range(machines)):
        listed_wrong = int(name[1:]) in wrong
        lines.append(f"{name},{2 if listed_wrong else GPUS_PER_MACHINE}, {'12GB' if listed_wrong else '24GB'}")
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return wrong


def _time_text(t: int | None, zone_name: str) -> str:
    return "None" if t is None else naive_local(t, zone_name)


def job_log_records(
    cluster: Cluster,
    specs: list[JobSpec],
    outcomes: list[JobOutcome],
    records: list[list[RecordedAttempt]],
    zone_name: str = ZONE_NAME,
) -> list[dict[str, Any]]:
    out = []
    for spec, outcome, recs in zip(specs, outcomes, records, strict=True):
        out.append(
            {
                "status": _STATUS_TEXT[outcome.status],
                "vc": cluster.vc_names[spec.vc],
                "jobid": spec.job_id,
                "attempts": [
                    {
                        "start_time": _time_text(r.start, zone_name),
                        "end_time": _time_text(r.end, zone_name),
                        "detail": [{"ip": f"m{m}", "gpus": [f"gpu{g}" for g in gpus]} for m, gpus in r.alloc],
                    }
                    for r in recs
                ],
                "submitted_time": naive_local(spec.submit, zone_name),
                "user": cluster.user_names[spec.user],
            }
        )
    return out


def write_job_log(path: Path, records: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(records, f, indent=4)
        f.write("\n")


def write_failure_logs(
    out: Path,
    cluster: Cluster,
    specs: list[JobSpec],
    records: list[list[RecordedAttempt]],
    rng: np.random.Generator,
    speeds: dict[tuple[int, int], AttemptSpeed] | None = None,
) -> int:
    """Write stdout/stderr of every failed attempt; return how many attempts got logs.

    `speeds`: the training speed an attempt prints before failing, by (job index, position
    in the job's attempts list); attempts without one print none."""
    speeds = speeds or {}
    written = 0
    for spec, recs in zip(specs, records, strict=True):
        for r in recs:
            if r.real.outcome not in ("fail", "launch_fail") or r.real.reason is None:
                continue
            ctx = LogContext(
                job_id=spec.job_id,
                attempt=r.source_index,
                gpus=spec.gpus,
                hosts=tuple(f"m{m}" for m, _ in r.real.alloc),
                user=cluster.user_names[spec.user],
                elapsed_s=r.real.end - r.real.start,
                speed=speeds.get((spec.index, r.source_index)),
            )
            stdout, stderr = render(r.real.reason, ctx, rng)
            folder = out / "logs" / spec.job_id / f"attempt_{r.source_index}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "stdout.log").write_bytes(stdout.encode("utf-8"))
            (folder / "stderr.log").write_bytes(stderr.encode("utf-8"))
            written += 1
    return written
